#include "kernels/ref/resize.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::ref {
namespace {

// One output position along one axis: `weights[k]` applies to input index `first + k` (clamped
// into the axis, which is edge padding), or the whole position is the extrapolation value.
struct Tap {
  int64_t first = 0;
  std::vector<double> weights;
  bool extrapolate = false;
};

double CubicKernel(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

// The source coordinate of output index `x` along an axis of `in` elements.
double SourceCoord(const ResizeOptions& o, const ResizeAxis& a, int64_t in, double x) {
  // ONNX defines the resized length as the real scale * in, not the rounded size, and its
  // align_corners and tf_crop_and_resize formulas use that value.
  const double out_real = a.scale * static_cast<double>(in);
  switch (o.coord) {
    case ResizeCoord::kHalfPixel:
      return (x + 0.5) / a.scale - 0.5;
    case ResizeCoord::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(a.out_size) / out_real;
      const double offset = static_cast<double>(in) / 2 * (1 - adjustment);
      return offset + (x + 0.5) / a.scale - 0.5;
    }
    case ResizeCoord::kPytorchHalfPixel:
      return out_real == 1 ? -0.5 : (x + 0.5) / a.scale - 0.5;
    case ResizeCoord::kAlignCorners:
      return out_real == 1 ? 0.0 : x * static_cast<double>(in - 1) / (out_real - 1);
    case ResizeCoord::kAsymmetric:
      return x / a.scale;
    case ResizeCoord::kTfHalfPixelForNn:
      return (x + 0.5) / a.scale;
    case ResizeCoord::kTfCropAndResize: {
      const double span = (a.roi_end - a.roi_start) * static_cast<double>(in - 1);
      const double base = a.roi_start * static_cast<double>(in - 1);
      return out_real == 1 ? base + span / 2 : base + x * span / (out_real - 1);
    }
  }
  return x;
}

// The weight table of one axis. Every filter here has an even number of taps; the taps sit on
// both sides of the coordinate with the left-hand pixel preferred, so an exact integer
// coordinate gets ratio 1 against the pixel before it (ONNX's convention).
Tap MakeTap(const ResizeOptions& o, const ResizeAxis& a, int64_t in, int64_t out_index) {
  Tap tap;
  double x = SourceCoord(o, a, in, static_cast<double>(out_index));
  if (o.coord == ResizeCoord::kTfCropAndResize &&
      (x < 0 || x > static_cast<double>(in - 1) || std::isnan(x))) {
    tap.extrapolate = true;
    return tap;
  }
  // Far outside the axis every tap clamps to the same edge pixel; bounding x keeps the integer
  // conversions below defined whatever scale or roi the model holds.
  if (std::isnan(x)) x = 0;
  x = std::clamp(x, -1e15, 1e15);
  const double left = std::ceil(x) - 1;
  const double ratio = x - left;  // in (0, 1]
  auto& w = tap.weights;
  switch (o.mode) {
    case ResizeMode::kNearest: {
      bool right = true;
      if (ratio != 1.0) {
        switch (o.nearest) {
          case NearestRound::kRoundPreferFloor: right = ratio > 0.5; break;
          case NearestRound::kRoundPreferCeil: right = ratio >= 0.5; break;
          case NearestRound::kFloor: right = false; break;
          case NearestRound::kCeil: right = true; break;
          case NearestRound::kSimple: right = a.scale < 1; break;
        }
      }
      w = {right ? 0.0 : 1.0, right ? 1.0 : 0.0};
      break;
    }
    case ResizeMode::kLinear:
      if (o.antialias && a.scale < 1) {
        const int64_t start = static_cast<int64_t>(std::floor(-1 / a.scale) + 1);
        for (int64_t i = start; i < 1 - start + 1; ++i)
          w.push_back(std::clamp(1 - std::abs((static_cast<double>(i) - ratio) * a.scale), 0.0,
                                 1.0));
      } else {
        w = {1 - ratio, ratio};
      }
      break;
    case ResizeMode::kCubic:
      if (o.antialias && a.scale < 1) {
        const int64_t start = static_cast<int64_t>(std::floor(-2 / a.scale) + 1);
        for (int64_t i = start; i < 2 - start; ++i)
          w.push_back(CubicKernel(a.scale * (static_cast<double>(i) - ratio), o.cubic_a));
      } else {
        for (int k = -1; k <= 2; ++k) w.push_back(CubicKernel(k - ratio, o.cubic_a));
      }
      break;
  }
  const int64_t n = static_cast<int64_t>(w.size());
  tap.first = static_cast<int64_t>(left) - n / 2 + 1;
  double sum = 0;
  if (o.exclude_outside) {
    for (int64_t k = 0; k < n; ++k) {
      const int64_t idx = tap.first + k;
      if (idx < 0 || idx >= in) w[k] = 0;
    }
  }
  for (double v : w) sum += v;
  // Antialias filters and exclude_outside renormalize so that the weights sum to one.
  if ((o.exclude_outside || (o.antialias && o.mode != ResizeMode::kNearest)) && sum != 0)
    for (double& v : w) v /= sum;
  return tap;
}

// Resizes `src` (dims `dims`) along `axis`, in float64.
std::vector<double> ResizeAxisOnce(const std::vector<double>& src, std::vector<int64_t>* dims,
                                   size_t axis, const ResizeAxis& a, const ResizeOptions& o) {
  const int64_t in = (*dims)[axis];
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < axis; ++i) outer *= (*dims)[i];
  for (size_t i = axis + 1; i < dims->size(); ++i) inner *= (*dims)[i];
  std::vector<Tap> taps;
  taps.reserve(a.out_size);
  for (int64_t j = 0; j < a.out_size; ++j) taps.push_back(MakeTap(o, a, in, j));

  std::vector<double> dst(outer * a.out_size * inner);
  for (int64_t p = 0; p < outer; ++p) {
    const double* s = src.data() + p * in * inner;
    double* d = dst.data() + p * a.out_size * inner;
    for (int64_t j = 0; j < a.out_size; ++j) {
      const Tap& t = taps[j];
      double* dj = d + j * inner;
      if (t.extrapolate) {
        std::fill(dj, dj + inner, o.extrapolation_value);
        continue;
      }
      for (size_t k = 0; k < t.weights.size(); ++k) {
        const double wk = t.weights[k];
        if (wk == 0) continue;
        const int64_t idx = std::clamp<int64_t>(t.first + static_cast<int64_t>(k), 0, in - 1);
        const double* sk = s + idx * inner;
        for (int64_t q = 0; q < inner; ++q) dj[q] += wk * sk[q];
      }
    }
  }
  (*dims)[axis] = a.out_size;
  return dst;
}

template <class T>
T FromDouble(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    // Like ONNX's saturate_cast: round half to even, then clamp into the type.
    if (std::isnan(v)) return T{0};
    v = std::nearbyint(v);
    v = std::clamp(v, static_cast<double>(std::numeric_limits<T>::lowest()),
                   static_cast<double>(std::numeric_limits<T>::max()));
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

}  // namespace

Status Resize(const Tensor& x, const std::vector<ResizeAxis>& axes, const ResizeOptions& options,
              Tensor* out) {
  if (static_cast<int64_t>(axes.size()) != x.rank())
    return Status::Error("Resize: ", axes.size(), " axis sizes for a tensor of rank ", x.rank());
  std::vector<int64_t> out_dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    const ResizeAxis& a = axes[i];
    if (a.out_size > 0 && x.dim(i) == 0)
      return Status::Error("Resize: axis ", i, " is empty and cannot grow to ", a.out_size);
    if (!(a.scale > 0) || !std::isfinite(a.scale))
      return Status::Error("Resize: scale ", a.scale, " of axis ", i, " must be positive");
    out_dims.push_back(a.out_size);
  }
  KILN_ASSIGN_OR_RETURN(Tensor result, Tensor::Make(x.dtype(), out_dims, "Resize output"));

  // Axes that shrink go first so that no intermediate is larger than the input or the output.
  std::vector<size_t> order;
  for (size_t i = 0; i < axes.size(); ++i) {
    const ResizeAxis& a = axes[i];
    const bool identity = a.out_size == x.dim(i) && a.scale == 1.0 &&
                          (options.coord != ResizeCoord::kTfCropAndResize ||
                           (a.roi_start == 0.0 && a.roi_end == 1.0));
    if (!identity) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t p, size_t q) {
    return (axes[p].out_size < x.dim(p)) > (axes[q].out_size < x.dim(q));
  });

  Status st = Status::Ok();
  KILN_DISPATCH_NUMERIC(x.dtype(), T,
                        st = Status::Error("Resize: unsupported element type ",
                                           DTypeName(x.dtype())),
    {
      const T* src = x.data<T>();
      std::vector<double> buf(src, src + x.numel());
      std::vector<int64_t> dims = x.dims();
      for (size_t axis : order) buf = ResizeAxisOnce(buf, &dims, axis, axes[axis], options);
      T* dst = result.data<T>();
      for (int64_t i = 0; i < result.numel(); ++i) dst[i] = FromDouble<T>(buf[i]);
    });
  KILN_RETURN_IF_ERROR(st);
  *out = std::move(result);
  return Status::Ok();
}


namespace {

// Folds a coordinate back into [lo, hi] by mirroring at the borders (GridSample "reflection").
double Reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const double n = std::floor(dx / range);
    const double r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const double n = std::floor(dx / range);
    const double r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

struct GridAxis {
  int64_t size;
  double lo, hi;  // the borders reflection mirrors at
};

// Index `i` along `axis` after padding, or -1 when it reads the zero padding.
int64_t PadIndex(int64_t i, const GridAxis& axis, GridSamplePadding padding) {
  switch (padding) {
    case GridSamplePadding::kZeros:
      return i >= 0 && i < axis.size ? i : -1;
    case GridSamplePadding::kBorder:
      return std::clamp<int64_t>(i, 0, axis.size - 1);
    case GridSamplePadding::kReflection:
      return std::clamp<int64_t>(
          static_cast<int64_t>(Reflect(static_cast<double>(i), axis.lo, axis.hi)), 0,
          axis.size - 1);
  }
  return -1;
}

}  // namespace

Status GridSample(const Tensor& x, const Tensor& grid, GridSampleMode mode,
                  GridSamplePadding padding, bool align_corners, Tensor* out) {
  const int64_t k = x.rank() - 2;
  if (k < 1) return Status::Error("GridSample: input must have rank >= 3, got ", x.rank());
  if (grid.rank() != k + 2 || grid.dim(0) != x.dim(0) || grid.dim(k + 1) != k)
    return Status::Error("GridSample: grid ", DescribeTensor(grid), " does not match input ",
                         DescribeTensor(x), " (expected [N, spatial..., ", k, "])");
  std::vector<int64_t> out_dims = {x.dim(0), x.dim(1)};
  for (int64_t i = 1; i <= k; ++i) out_dims.push_back(grid.dim(i));
  KILN_ASSIGN_OR_RETURN(Tensor result, Tensor::Make(x.dtype(), out_dims, "GridSample output"));

  std::vector<GridAxis> axes;
  int64_t plane = 1;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = x.dim(i + 2);
    if (d == 0 && result.numel() > 0)
      return Status::Error("GridSample: input ", DescribeTensor(x), " has an empty spatial dim");
    axes.push_back(align_corners ? GridAxis{d, 0.0, d - 1.0} : GridAxis{d, -0.5, d - 0.5});
    plane *= d;
  }
  const std::vector<int64_t> in_strides = [&] {
    std::vector<int64_t> s(k, 1);
    for (int64_t i = k - 2; i >= 0; --i) s[i] = s[i + 1] * x.dim(i + 3);
    return s;
  }();
  const int64_t n_batch = x.dim(0), channels = x.dim(1);
  const int64_t out_plane = result.numel() / std::max<int64_t>(1, n_batch * channels);
  const int taps = mode == GridSampleMode::kNearest ? 1 : mode == GridSampleMode::kBilinear ? 2 : 4;

  Status st = Status::Ok();
  KILN_DISPATCH_FLOAT(x.dtype(), T,
                      st = Status::Error("GridSample: unsupported element type ",
                                         DTypeName(x.dtype())),
    {
      const T* xd = x.data<T>();
      const T* gd = grid.data<T>();
      T* yd = result.data<T>();
      std::vector<int64_t> first(k);
      std::vector<std::vector<double>> weights(k, std::vector<double>(taps));
      for (int64_t n = 0; n < n_batch; ++n) {
        for (int64_t o = 0; o < out_plane; ++o) {
          const T* g = gd + (n * out_plane + o) * k;
          bool nan = false;
          for (int64_t i = 0; i < k; ++i) {
            const GridAxis& ax = axes[i];
            // grid's last dim lists the innermost spatial axis first.
            const double gv = static_cast<double>(g[k - 1 - i]);
            if (std::isnan(gv)) nan = true;
            double c = align_corners ? (gv + 1) / 2 * (ax.size - 1)
                                     : ((gv + 1) * ax.size - 1) / 2;
            c = static_cast<float>(c);  // ONNX's reference denormalizes in float32
            if (mode == GridSampleMode::kNearest) c = std::nearbyint(c);
            if (c < ax.lo || c > ax.hi) {
              if (padding == GridSamplePadding::kBorder) c = std::clamp(c, 0.0, ax.size - 1.0);
              if (padding == GridSamplePadding::kReflection) c = Reflect(c, ax.lo, ax.hi);
            }
            // Beyond a few pixels outside, every tap reads padding; bounding c keeps the integer
            // conversions defined.
            c = std::clamp(c, -8.0, ax.size + 8.0);
            if (std::isnan(c)) c = 0;
            if (mode == GridSampleMode::kNearest) {
              first[i] = static_cast<int64_t>(c);  // truncation, as the reference casts
              weights[i][0] = 1;
              continue;
            }
            const double base = std::floor(c);
            const double r = c - base;
            if (mode == GridSampleMode::kBilinear) {
              first[i] = static_cast<int64_t>(base);
              weights[i] = {1 - r, r};
            } else {
              first[i] = static_cast<int64_t>(base) - 1;
              for (int t = 0; t < 4; ++t) weights[i][t] = CubicKernel(t - 1 - r, -0.75);
            }
          }
          for (int64_t ch = 0; ch < channels; ++ch) {
            const T* xc = xd + (n * channels + ch) * plane;
            double acc = 0;
            // Walk every combination of taps (taps^k of them) like an odometer.
            std::vector<int> t(k, 0);
            while (true) {
              double w = 1;
              int64_t off = 0;
              for (int64_t i = 0; i < k && w != 0; ++i) {
                const int64_t idx = PadIndex(first[i] + t[i], axes[i], padding);
                if (idx < 0) w = 0;
                else off += idx * in_strides[i];
                w *= weights[i][t[i]];
              }
              if (w != 0) acc += w * static_cast<double>(xc[off]);
              int64_t i = k - 1;
              while (i >= 0 && ++t[i] == taps) t[i--] = 0;
              if (i < 0) break;
            }
            yd[(n * channels + ch) * out_plane + o] =
                nan ? std::numeric_limits<T>::quiet_NaN() : static_cast<T>(acc);
          }
        }
      }
    });
  KILN_RETURN_IF_ERROR(st);
  *out = std::move(result);
  return Status::Ok();
}

// Bounds the samples one RoiAlign bin takes, so that a hostile roi cannot make the loop endless.
constexpr int64_t kMaxRoiSamplesPerBin = int64_t{1} << 20;

Status RoiAlign(const Tensor& x, const Tensor& rois, const std::vector<int64_t>& batch_indices,
                const RoiAlignOptions& o, Tensor* out) {
  if (x.rank() != 4) return Status::Error("RoiAlign: X must be [N, C, H, W], got ", DescribeTensor(x));
  if (rois.rank() != 2 || rois.dim(1) != 4 ||
      rois.dim(0) != static_cast<int64_t>(batch_indices.size()))
    return Status::Error("RoiAlign: rois must be [", batch_indices.size(), ", 4], got ",
                         DescribeTensor(rois));
  if (o.output_height <= 0 || o.output_width <= 0 || o.sampling_ratio < 0)
    return Status::Error("RoiAlign: output size and sampling_ratio must be positive");
  const int64_t num_rois = rois.dim(0), channels = x.dim(1), height = x.dim(2),
                width = x.dim(3);
  KILN_ASSIGN_OR_RETURN(Tensor result,
                        Tensor::Make(x.dtype(), {num_rois, channels, o.output_height,
                                                 o.output_width},
                                     "RoiAlign output"));
  const int64_t ph_n = o.output_height, pw_n = o.output_width;
  if (num_rois > 0 && channels > 0 && (height == 0 || width == 0))
    return Status::Error("RoiAlign: X ", DescribeTensor(x), " has an empty spatial dim");
  Status st = Status::Ok();
  KILN_DISPATCH_FLOAT(x.dtype(), T,
                      st = Status::Error("RoiAlign: unsupported element type ",
                                         DTypeName(x.dtype())),
    {
      const T* xd = x.data<T>();
      const T* rd = rois.data<T>();
      T* yd = result.data<T>();
      for (int64_t r = 0; r < num_rois && st.ok(); ++r) {
        const int64_t b = batch_indices[r];
        if (b < 0 || b >= x.dim(0)) {
          st = Status::Error("RoiAlign: batch index ", b, " of roi ", r, " is outside [0, ",
                             x.dim(0), ")");
          break;
        }
        const double offset = o.half_pixel ? 0.5 : 0.0;
        double c[4];
        for (int i = 0; i < 4; ++i) c[i] = static_cast<double>(rd[r * 4 + i]) * o.spatial_scale - offset;
        if (!std::isfinite(c[0]) || !std::isfinite(c[1]) || !std::isfinite(c[2]) ||
            !std::isfinite(c[3])) {
          st = Status::Error("RoiAlign: roi ", r, " has a non-finite coordinate");
          break;
        }
        double roi_w = c[2] - c[0], roi_h = c[3] - c[1];
        if (!o.half_pixel) {
          roi_w = std::max(roi_w, 1.0);
          roi_h = std::max(roi_h, 1.0);
        }
        const double bin_h = roi_h / ph_n, bin_w = roi_w / pw_n;
        const double grid_hd = o.sampling_ratio > 0 ? o.sampling_ratio : std::ceil(bin_h);
        const double grid_wd = o.sampling_ratio > 0 ? o.sampling_ratio : std::ceil(bin_w);
        if (grid_hd * grid_wd > static_cast<double>(kMaxRoiSamplesPerBin)) {
          st = Status::Error("RoiAlign: roi ", r, " needs ", grid_hd * grid_wd,
                             " samples per bin, more than kiln's limit of ",
                             kMaxRoiSamplesPerBin);
          break;
        }
        const int64_t grid_h = static_cast<int64_t>(std::max(grid_hd, 0.0));
        const int64_t grid_w = static_cast<int64_t>(std::max(grid_wd, 0.0));
        const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
        for (int64_t ch = 0; ch < channels; ++ch) {
          const T* plane = xd + (b * channels + ch) * height * width;
          for (int64_t ph = 0; ph < ph_n; ++ph) {
            for (int64_t pw = 0; pw < pw_n; ++pw) {
              double acc = 0;
              bool have = false;
              for (int64_t iy = 0; iy < grid_h; ++iy) {
                double y = c[1] + ph * bin_h + (iy + 0.5) * bin_h / grid_h;
                for (int64_t ix = 0; ix < grid_w; ++ix) {
                  double xx = c[0] + pw * bin_w + (ix + 0.5) * bin_w / grid_w;
                  double v = 0;
                  if (!(y < -1.0 || y > height || xx < -1.0 || xx > width)) {
                    double yc = std::max(y, 0.0), xc = std::max(xx, 0.0);
                    int64_t y_lo = static_cast<int64_t>(yc), x_lo = static_cast<int64_t>(xc);
                    int64_t y_hi = y_lo + 1, x_hi = x_lo + 1;
                    if (y_lo >= height - 1) y_hi = y_lo = height - 1, yc = static_cast<double>(y_lo);
                    if (x_lo >= width - 1) x_hi = x_lo = width - 1, xc = static_cast<double>(x_lo);
                    const double ly = yc - y_lo, lx = xc - x_lo, hy = 1 - ly, hx = 1 - lx;
                    const double p1 = hy * hx * plane[y_lo * width + x_lo];
                    const double p2 = hy * lx * plane[y_lo * width + x_hi];
                    const double p3 = ly * hx * plane[y_hi * width + x_lo];
                    const double p4 = ly * lx * plane[y_hi * width + x_hi];
                    // Max pooling takes the largest weighted corner, as ONNX's reference does.
                    v = o.pool == RoiAlignPool::kAvg ? p1 + p2 + p3 + p4
                                                     : std::max({p1, p2, p3, p4});
                  }
                  if (o.pool == RoiAlignPool::kAvg) acc += v;
                  else acc = have ? std::max(acc, v) : v;
                  have = true;
                }
              }
              if (o.pool == RoiAlignPool::kAvg) acc /= count;
              yd[((r * channels + ch) * ph_n + ph) * pw_n + pw] = static_cast<T>(acc);
            }
          }
        }
      }
    });
  KILN_RETURN_IF_ERROR(st);
  *out = std::move(result);
  return Status::Ok();
}

}  // namespace kiln::ref
