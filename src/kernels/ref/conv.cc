#include "kernels/ref/conv.h"

#include <algorithm>
#include <vector>

namespace kiln::ref {
namespace {

// Bounds every window attribute so that sums and products of a few of them stay far from int64
// overflow; real models use single or double digits.
constexpr int64_t kMaxWindowParam = int64_t{1} << 30;

Status CheckRange(const std::vector<int64_t>& v, const char* name, int64_t lo) {
  for (int64_t x : v)
    if (x < lo || x > kMaxWindowParam)
      return Status::Error(name, " must be in [", lo, ", ", kMaxWindowParam, "], got ",
                           DimsToString(v));
  return Status::Ok();
}

// The positions o in [0, count) for which o * stride + offset lies in [0, limit), as [lo, hi).
// Keeps bounds checks out of the innermost loops.
inline void ValidRange(int64_t offset, int64_t stride, int64_t limit, int64_t count, int64_t* lo,
                       int64_t* hi) {
  *lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t last = limit - 1 - offset;  // largest allowed o * stride
  *hi = last < 0 ? 0 : std::min(count, last / stride + 1);
  if (*hi < *lo) *hi = *lo;
}

// Accumulates one output channel's plane: acc[out] += sum over the group's input channels and the
// kernel of (x - x_zero) * (w - w_zero). x points at the group's first input channel of one image,
// w at the output channel's filter.
template <class TX, class TW, class Acc>
void ConvPlane(const ConvGeometry& g, const TX* x, const TW* w, Acc x_zero, Acc w_zero, Acc* acc) {
  const int64_t cig = g.in_channels / g.group;
  const int64_t in_size = g.in_size(), k_size = g.kernel_size();
  const auto& [ID, IH, IW] = g.in;
  const auto& [OD, OH, OW] = g.out;
  const auto& [SD, SH, SW] = g.stride;
  for (int64_t c = 0; c < cig; ++c) {
    const TX* xc = x + c * in_size;
    const TW* wc = w + c * k_size;
    for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
      int64_t d_off = kd * g.dilation[0] - g.pad_begin[0], od_lo, od_hi;
      ValidRange(d_off, SD, ID, OD, &od_lo, &od_hi);
      for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
        int64_t h_off = kh * g.dilation[1] - g.pad_begin[1], oh_lo, oh_hi;
        ValidRange(h_off, SH, IH, OH, &oh_lo, &oh_hi);
        for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
          int64_t w_off = kw * g.dilation[2] - g.pad_begin[2], ow_lo, ow_hi;
          ValidRange(w_off, SW, IW, OW, &ow_lo, &ow_hi);
          const Acc wv = static_cast<Acc>(wc[(kd * g.kernel[1] + kh) * g.kernel[2] + kw]) - w_zero;
          for (int64_t od = od_lo; od < od_hi; ++od) {
            const int64_t id = od * SD + d_off;
            for (int64_t oh = oh_lo; oh < oh_hi; ++oh) {
              const int64_t ih = oh * SH + h_off;
              const TX* xrow = xc + (id * IH + ih) * IW + w_off;
              Acc* arow = acc + (od * OH + oh) * OW;
              for (int64_t ow = ow_lo; ow < ow_hi; ++ow)
                arow[ow] += wv * (static_cast<Acc>(xrow[ow * SW]) - x_zero);
            }
          }
        }
      }
    }
  }
}

}  // namespace

Expected<std::vector<int64_t>> ResolveWindow(const std::vector<int64_t>& in_spatial,
                                             WindowSpec* spec) {
  const size_t n = in_spatial.size();
  if (n < 1 || n > kMaxSpatialRank)
    return Status::Error("only 1 to ", kMaxSpatialRank, " spatial dims are supported, got ", n);
  if (spec->kernel.size() != n)
    return Status::Error("kernel_shape ", DimsToString(spec->kernel), " must have ", n,
                         " entries, one per spatial dim");
  if (spec->strides.empty()) spec->strides.assign(n, 1);
  if (spec->dilations.empty()) spec->dilations.assign(n, 1);
  if (spec->pads.empty()) spec->pads.assign(2 * n, 0);
  if (spec->strides.size() != n)
    return Status::Error("strides ", DimsToString(spec->strides), " must have ", n, " entries");
  if (spec->dilations.size() != n)
    return Status::Error("dilations ", DimsToString(spec->dilations), " must have ", n, " entries");
  if (spec->pads.size() != 2 * n)
    return Status::Error("pads ", DimsToString(spec->pads), " must have ", 2 * n, " entries");
  KILN_RETURN_IF_ERROR(CheckRange(spec->kernel, "kernel_shape", 1));
  KILN_RETURN_IF_ERROR(CheckRange(spec->strides, "strides", 1));
  KILN_RETURN_IF_ERROR(CheckRange(spec->dilations, "dilations", 1));
  KILN_RETURN_IF_ERROR(CheckRange(spec->pads, "pads", 0));
  for (int64_t d : in_spatial)
    if (d < 0 || d > kMaxWindowParam * 16)
      return Status::Error("spatial dims ", DimsToString(in_spatial), " are out of range");

  const std::string& ap = spec->auto_pad;
  const bool same_upper = ap == "SAME_UPPER", same_lower = ap == "SAME_LOWER";
  if (!same_upper && !same_lower && ap != "VALID" && ap != "NOTSET" && !ap.empty())
    return Status::Error("unknown auto_pad '", ap, "'");
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = in_spatial[i], s = spec->strides[i];
    const int64_t dk = (spec->kernel[i] - 1) * spec->dilations[i] + 1;
    if (ap == "VALID") {
      spec->pads[i] = spec->pads[i + n] = 0;
    } else if (same_upper || same_lower) {
      const int64_t o = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (o - 1) * s + dk - in);
      spec->pads[i] = same_upper ? total / 2 : total - total / 2;
      spec->pads[i + n] = total - spec->pads[i];
    }
    const int64_t span = in + spec->pads[i] + spec->pads[i + n] - dk;
    if (span < 0)
      return Status::Error("the window (", dk, " with dilation) is larger than the padded input (",
                           in + spec->pads[i] + spec->pads[i + n], ") in spatial dim ", i);
    if (spec->ceil_mode) {
      out[i] = (span + s - 1) / s + 1;
      // A window must start inside the input or its leading padding (as PyTorch and ONNX do).
      if ((out[i] - 1) * s >= in + spec->pads[i]) --out[i];
    } else {
      out[i] = span / s + 1;
    }
  }
  return out;
}

ConvGeometry MakeGeometry(int64_t batch, int64_t in_channels, int64_t out_channels, int64_t group,
                          const std::vector<int64_t>& in_spatial,
                          const std::vector<int64_t>& out_spatial, const WindowSpec& spec) {
  ConvGeometry g;
  g.batch = batch;
  g.in_channels = in_channels;
  g.out_channels = out_channels;
  g.group = group;
  const size_t n = in_spatial.size(), lead = kMaxSpatialRank - n;
  for (size_t i = 0; i < n; ++i) {
    g.in[lead + i] = in_spatial[i];
    g.out[lead + i] = out_spatial[i];
    g.kernel[lead + i] = spec.kernel[i];
    g.stride[lead + i] = spec.strides.empty() ? 1 : spec.strides[i];
    g.dilation[lead + i] = spec.dilations.empty() ? 1 : spec.dilations[i];
    g.pad_begin[lead + i] = spec.pads.empty() ? 0 : spec.pads[i];
  }
  return g;
}

template <class T>
void Conv(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y) {
  const int64_t cig = g.in_channels / g.group, cog = g.out_channels / g.group;
  const int64_t out_size = g.out_size();
  std::vector<double> acc(out_size);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t m = 0; m < g.out_channels; ++m) {
      const int64_t grp = m / cog;
      std::fill(acc.begin(), acc.end(), bias ? static_cast<double>(bias[m]) : 0.0);
      ConvPlane<T, T, double>(g, x + (n * g.in_channels + grp * cig) * g.in_size(),
                              w + m * cig * g.kernel_size(), 0.0, 0.0, acc.data());
      T* out = y + (n * g.out_channels + m) * out_size;
      for (int64_t i = 0; i < out_size; ++i) out[i] = static_cast<T>(acc[i]);
    }
  }
}

template <class TX, class TW>
void ConvInteger(const ConvGeometry& g, const TX* x, int32_t x_zero, const TW* w,
                 const std::vector<int32_t>& w_zero, int32_t* y) {
  const int64_t cig = g.in_channels / g.group, cog = g.out_channels / g.group;
  const int64_t out_size = g.out_size();
  std::vector<int64_t> acc(out_size);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t m = 0; m < g.out_channels; ++m) {
      const int64_t grp = m / cog;
      std::fill(acc.begin(), acc.end(), 0);
      ConvPlane<TX, TW, int64_t>(g, x + (n * g.in_channels + grp * cig) * g.in_size(),
                                 w + m * cig * g.kernel_size(), x_zero, w_zero[m], acc.data());
      int32_t* out = y + (n * g.out_channels + m) * out_size;
      for (int64_t i = 0; i < out_size; ++i) out[i] = static_cast<int32_t>(acc[i]);
    }
  }
}

template <class T>
void ConvTranspose(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y) {
  const int64_t cig = g.in_channels / g.group, cog = g.out_channels / g.group;
  const int64_t in_size = g.in_size(), out_size = g.out_size(), k_size = g.kernel_size();
  const auto& [ID, IH, IW] = g.in;
  const auto& [OD, OH, OW] = g.out;
  const auto& [SD, SH, SW] = g.stride;
  std::vector<double> acc(g.out_channels * out_size);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t m = 0; m < g.out_channels; ++m)
      std::fill(acc.begin() + m * out_size, acc.begin() + (m + 1) * out_size,
                bias ? static_cast<double>(bias[m]) : 0.0);
    for (int64_t c = 0; c < g.in_channels; ++c) {
      const int64_t grp = c / cig;
      const T* xc = x + (n * g.in_channels + c) * in_size;
      for (int64_t mg = 0; mg < cog; ++mg) {
        const int64_t m = grp * cog + mg;
        const T* wk = w + (c * cog + mg) * k_size;
        double* am = acc.data() + m * out_size;
        for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
          int64_t d_off = kd * g.dilation[0] - g.pad_begin[0], id_lo, id_hi;
          ValidRange(d_off, SD, OD, ID, &id_lo, &id_hi);
          for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
            int64_t h_off = kh * g.dilation[1] - g.pad_begin[1], ih_lo, ih_hi;
            ValidRange(h_off, SH, OH, IH, &ih_lo, &ih_hi);
            for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
              int64_t w_off = kw * g.dilation[2] - g.pad_begin[2], iw_lo, iw_hi;
              ValidRange(w_off, SW, OW, IW, &iw_lo, &iw_hi);
              const double wv = wk[(kd * g.kernel[1] + kh) * g.kernel[2] + kw];
              for (int64_t id = id_lo; id < id_hi; ++id) {
                const int64_t od = id * SD + d_off;
                for (int64_t ih = ih_lo; ih < ih_hi; ++ih) {
                  const int64_t oh = ih * SH + h_off;
                  const T* xrow = xc + (id * IH + ih) * IW;
                  double* arow = am + (od * OH + oh) * OW + w_off;
                  for (int64_t iw = iw_lo; iw < iw_hi; ++iw)
                    arow[iw * SW] += wv * static_cast<double>(xrow[iw]);
                }
              }
            }
          }
        }
      }
    }
    T* out = y + n * g.out_channels * out_size;
    for (int64_t i = 0; i < g.out_channels * out_size; ++i) out[i] = static_cast<T>(acc[i]);
  }
}

template void Conv<float>(const ConvGeometry&, const float*, const float*, const float*, float*);
template void Conv<double>(const ConvGeometry&, const double*, const double*, const double*,
                           double*);
template void ConvTranspose<float>(const ConvGeometry&, const float*, const float*, const float*,
                                   float*);
template void ConvTranspose<double>(const ConvGeometry&, const double*, const double*,
                                    const double*, double*);
template void ConvInteger<uint8_t, uint8_t>(const ConvGeometry&, const uint8_t*, int32_t,
                                            const uint8_t*, const std::vector<int32_t>&, int32_t*);
template void ConvInteger<uint8_t, int8_t>(const ConvGeometry&, const uint8_t*, int32_t,
                                           const int8_t*, const std::vector<int32_t>&, int32_t*);
template void ConvInteger<int8_t, uint8_t>(const ConvGeometry&, const int8_t*, int32_t,
                                           const uint8_t*, const std::vector<int32_t>&, int32_t*);
template void ConvInteger<int8_t, int8_t>(const ConvGeometry&, const int8_t*, int32_t,
                                          const int8_t*, const std::vector<int32_t>&, int32_t*);

}  // namespace kiln::ref
