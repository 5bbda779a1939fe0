// Native pooling and reduction kernels over float32: 2-D max and average pooling of NCHW,
// the global pools, and ReduceMean / ReduceSum over constant axes.
//
// Params (written by lower/native_pool.cc):
//   maxpool2d, avgpool2d  int_lists "kernel" [kh, kw], "strides" [sh, sw], "dilations" [dh, dw],
//                         "pads" [top, left, bottom, right]; ints "ceil_mode",
//                         "count_include_pad" (average only).
//   global_avgpool, global_maxpool  global_avgpool: optional ints "layout_in" = c and "channels"
//                         = C, the input is channel-blocked [N, ceil(C/c), H, W, c]
//                         (lower/layout.h); the output is [N, C, 1, 1] either way.
//   reduce                strings "op" (mean, sum); int_lists "axes" (sorted, distinct, >= 0);
//                         ints "rank", "keepdims".
#include "kernels/pool/pool.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "kernels/pool/ukernel_table.h"
#include "runtime/kernels/families.h"
#include "runtime/kernels/kernel_util.h"

namespace kiln::runtime {
namespace {

using kernel_util::kMaxRank;

// Window params beyond this are refused: they keep every product of them inside int64.
constexpr int64_t kMaxWindowParam = int64_t{1} << 20;
// Plain-loop steps one pooling may take (the reference's bound): a hostile window must not hang.
constexpr double kMaxWork = double{int64_t{1} << 34};

struct Window {
  std::array<int64_t, 2> kernel{1, 1}, strides{1, 1}, dilations{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};  // top, left, bottom, right
  bool ceil_mode = false;
  bool count_include_pad = false;
};

Expected<Window> ReadWindow(const Step& step) {
  Window w;
  auto read = [&](const char* key, std::span<int64_t> out, int64_t lo) -> Status {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, step.params.IntList(key));
    if (v.size() != out.size())
      return Status::Error("'", key, "' has ", v.size(), " entries, expected ", out.size());
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] < lo || v[i] > kMaxWindowParam)
        return Status::Error("'", key, "' value ", v[i], " is outside [", lo, ", ", kMaxWindowParam,
                             "]");
      out[i] = v[i];
    }
    return Status::Ok();
  };
  KILN_RETURN_IF_ERROR(read("kernel", w.kernel, 1));
  KILN_RETURN_IF_ERROR(read("strides", w.strides, 1));
  KILN_RETURN_IF_ERROR(read("dilations", w.dilations, 1));
  KILN_RETURN_IF_ERROR(read("pads", w.pads, 0));
  // A leading pad as wide as the window makes windows that see only padding (ONNX forbids it);
  // the row microkernels assume every window reaches the input.
  for (size_t i = 0; i < 2; ++i)
    if (w.pads[i] >= (w.kernel[i] - 1) * w.dilations[i] + 1)
      return Status::Error("pads ", w.pads[i], " must be smaller than the window along dim ", i);
  w.ceil_mode = step.params.IntOr("ceil_mode", 0) != 0;
  w.count_include_pad = step.params.IntOr("count_include_pad", 0) != 0;
  return w;
}

// ONNX's output size along spatial dim i (0: H, 1: W), or -1 when the window does not fit.
int64_t OutSize(const Window& w, size_t i, int64_t in) {
  const int64_t dk = (w.kernel[i] - 1) * w.dilations[i] + 1, s = w.strides[i];
  const int64_t pb = w.pads[i], pe = w.pads[i + 2];
  const int64_t span = in + pb + pe - dk;
  if (span < 0) return -1;
  if (!w.ceil_mode) return span / s + 1;
  int64_t out = (span + s - 1) / s + 1;
  // A window must start inside the input or its leading padding.
  if ((out - 1) * s >= in + pb) --out;
  return out;
}

// Output dims [N, C, OH, OW] of x, or an error naming the step.
Status PoolDims(const Window& w, std::span<const int64_t> x, const Step& step,
                std::array<int64_t, 4>* out) {
  if (x.size() != 4)
    return Status::Error("step '", step.name, "': 2-D pooling needs an NCHW input, got rank ",
                         x.size());
  const int64_t oh = OutSize(w, 0, x[2]), ow = OutSize(w, 1, x[3]);
  if (oh < 0 || ow < 0)
    return Status::Error("step '", step.name, "': the pooling window is larger than the padded ",
                         "input ", DimsToString(std::vector<int64_t>(x.begin(), x.end())));
  *out = {x[0], x[1], oh, ow};
  double work = static_cast<double>(x[0]) * static_cast<double>(x[1]) * static_cast<double>(oh) *
                static_cast<double>(ow);
  work *= static_cast<double>(std::min(w.kernel[0], std::max<int64_t>(x[2], 1))) *
          static_cast<double>(std::min(w.kernel[1], std::max<int64_t>(x[3], 1)));
  if (work > kMaxWork)
    return Status::Error("step '", step.name, "': pooling ",
                         DimsToString(std::vector<int64_t>(x.begin(), x.end())),
                         " needs more than 2^34 steps");
  return Status::Ok();
}

class Pool2dKernel final : public StepKernel {
 public:
  static Expected<std::unique_ptr<StepKernel>> Create(const Step& step, const Module& module,
                                                      bool max) {
    KILN_RETURN_IF_ERROR(kernel_util::CheckArity(step, 1, 1));
    const DType f32[] = {DType::kFloat32};
    KILN_RETURN_IF_ERROR(kernel_util::CommonDType(step, module, f32).status());
    KILN_ASSIGN_OR_RETURN(Window w, ReadWindow(step));
    return std::unique_ptr<StepKernel>(new Pool2dKernel(step, w, max));
  }

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    KILN_ASSIGN_OR_RETURN(const Dims* x, kernel_util::InputDims(inputs, 0, step_));
    std::array<int64_t, 4> out{};
    KILN_RETURN_IF_ERROR(PoolDims(w_, *x, step_, &out));
    outputs->assign(1, Dims(out.begin(), out.end()));
    return Status::Ok();
  }

  Status Run(const StepArgs& args) const override {
    if (args.inputs.size() != 1 || args.outputs.size() != 1)
      return Status::Error("step '", step_.name, "': wrong number of tensors");
    const Tensor* x = args.inputs[0];
    KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(x, DType::kFloat32, step_, "input"));
    std::array<int64_t, 4> out{};
    KILN_RETURN_IF_ERROR(PoolDims(w_, x->dims(), step_, &out));
    KILN_RETURN_IF_ERROR(kernel_util::CheckOutput(args.outputs[0], DType::kFloat32, out, step_));
    if (args.outputs[0]->numel() == 0) return Status::Ok();
    const float* xp = x->data<float>();
    float* yp = args.outputs[0]->data<float>();
    if (w_.dilations[0] != 1 || w_.dilations[1] != 1) {
      RunDilated(x->dims(), out, xp, yp, args.pool);
      return Status::Ok();
    }
    pool::Pool2dParams p;
    p.batch = static_cast<size_t>(out[0]);
    p.channels = static_cast<size_t>(out[1]);
    p.in_h = static_cast<size_t>(x->dim(2));
    p.in_w = static_cast<size_t>(x->dim(3));
    p.out_h = static_cast<size_t>(out[2]);
    p.out_w = static_cast<size_t>(out[3]);
    p.kernel_h = static_cast<size_t>(w_.kernel[0]);
    p.kernel_w = static_cast<size_t>(w_.kernel[1]);
    p.stride_h = static_cast<size_t>(w_.strides[0]);
    p.stride_w = static_cast<size_t>(w_.strides[1]);
    p.pad_top = static_cast<size_t>(w_.pads[0]);
    p.pad_left = static_cast<size_t>(w_.pads[1]);
    p.pad_bottom = static_cast<size_t>(w_.pads[2]);
    p.pad_right = static_cast<size_t>(w_.pads[3]);
    p.count_include_pad = w_.count_include_pad;
    pool::Options o;
    o.pool = args.pool;
    Status s = max_ ? pool::MaxPool2d(p, xp, yp, o) : pool::AveragePool2d(p, xp, yp, o);
    if (!s.ok()) return s.WithContext(StrCat("step '", step_.name, "': "));
    return Status::Ok();
  }

  std::string Describe() const override {
    std::string d = StrCat(max_ ? "maxpool " : "avgpool ", w_.kernel[0], "x", w_.kernel[1], " s",
                           w_.strides[0]);
    if (w_.strides[1] != w_.strides[0]) d += StrCat("x", w_.strides[1]);
    if (w_.dilations[0] != 1 || w_.dilations[1] != 1)
      return d + StrCat(" d", w_.dilations[0], "x", w_.dilations[1], " plain");
    return d + " " + pool::SelectPoolUkernel(ActiveIsa()).name;
  }

 private:
  Pool2dKernel(const Step& step, const Window& w, bool max) : step_(step), w_(w), max_(max) {}

  // Dilated windows (rare): a plain loop over each window's taps, as the reference counts them.
  void RunDilated(std::span<const int64_t> x, const std::array<int64_t, 4>& out, const float* xp,
                  float* yp, ThreadPool* pool) const {
    const int64_t ih = x[2], iw = x[3], oh = out[2], ow = out[3];
    const int64_t planes = out[0] * out[1];
    ParallelFor(pool, static_cast<size_t>(planes), [&](size_t pl) {
      const float* xs = xp + static_cast<int64_t>(pl) * ih * iw;
      float* ys = yp + static_cast<int64_t>(pl) * oh * ow;
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          float m = -std::numeric_limits<float>::infinity();
          double sum = 0;
          int64_t count = 0;
          for (int64_t ky = 0; ky < w_.kernel[0]; ++ky) {
            const int64_t y = oy * w_.strides[0] - w_.pads[0] + ky * w_.dilations[0];
            for (int64_t kx = 0; kx < w_.kernel[1]; ++kx) {
              const int64_t xx = ox * w_.strides[1] - w_.pads[1] + kx * w_.dilations[1];
              if (y >= 0 && y < ih && xx >= 0 && xx < iw) {
                const float v = xs[y * iw + xx];
                m = std::isnan(v) || v > m ? v : m;
                sum += v;
                ++count;
              } else if (w_.count_include_pad && y >= -w_.pads[0] && y < ih + w_.pads[2] &&
                         xx >= -w_.pads[1] && xx < iw + w_.pads[3]) {
                ++count;
              }
            }
          }
          ys[oy * ow + ox] = max_        ? m
                             : count > 0 ? static_cast<float>(sum / static_cast<double>(count))
                                         : std::numeric_limits<float>::quiet_NaN();
        }
    });
  }

  Step step_;
  Window w_;
  bool max_;
};

class GlobalPoolKernel final : public StepKernel {
 public:
  static Expected<std::unique_ptr<StepKernel>> Create(const Step& step, const Module& module,
                                                      bool max) {
    KILN_RETURN_IF_ERROR(kernel_util::CheckArity(step, 1, 1));
    const DType f32[] = {DType::kFloat32};
    KILN_RETURN_IF_ERROR(kernel_util::CommonDType(step, module, f32).status());
    const int64_t block = step.params.IntOr("layout_in", 0);
    const int64_t channels = step.params.IntOr("channels", 0);
    // Blocked input: the average only (the plan never blocks a max pool's input), of C channels
    // in ceil(C / c) blocks.
    if (block != 0 && (block < 2 || block > 64 || max || channels < 1 || channels > (1 << 24)))
      return Status::Error("step '", step.name, "': layout_in ", block, " and channels ",
                           channels, " are not a block of 2..64 of a global average pool");
    return std::unique_ptr<StepKernel>(new GlobalPoolKernel(step, max, block, channels));
  }

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    KILN_ASSIGN_OR_RETURN(const Dims* x, kernel_util::InputDims(inputs, 0, step_));
    std::array<int64_t, kMaxRank> out{};
    KILN_ASSIGN_OR_RETURN(size_t rank, OutputShape(*x, &out));
    outputs->assign(1, Dims(out.begin(), out.begin() + rank));
    return Status::Ok();
  }

  Status Run(const StepArgs& args) const override {
    if (args.inputs.size() != 1 || args.outputs.size() != 1)
      return Status::Error("step '", step_.name, "': wrong number of tensors");
    const Tensor* x = args.inputs[0];
    KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(x, DType::kFloat32, step_, "input"));
    std::array<int64_t, kMaxRank> out{};
    KILN_ASSIGN_OR_RETURN(size_t rank, OutputShape(x->dims(), &out));
    KILN_RETURN_IF_ERROR(kernel_util::CheckOutput(
        args.outputs[0], DType::kFloat32, std::span<const int64_t>(out.data(), rank), step_));
    const float* xp = x->data<float>();
    float* yp = args.outputs[0]->data<float>();
    pool::Options o;
    o.pool = args.pool;
    if (block_ > 0) {
      // The average over each (image, channel block): H * W vectors of c lanes to c outputs.
      Status s = pool::GlobalAveragePoolNchwc(
          static_cast<size_t>(x->dim(0)), static_cast<size_t>(x->dim(1)),
          static_cast<size_t>(x->dim(2) * x->dim(3)), static_cast<size_t>(block_),
          static_cast<size_t>(channels_), xp, yp, o);
      if (!s.ok()) return s.WithContext(StrCat("step '", step_.name, "': "));
      return Status::Ok();
    }
    const auto planes = static_cast<size_t>(x->dim(0) * x->dim(1));
    const size_t plane = planes == 0 ? 0 : static_cast<size_t>(x->numel()) / planes;
    Status s = max_ ? pool::GlobalMaxPool(planes, plane, xp, yp, o)
                    : pool::GlobalAveragePool(planes, plane, xp, yp, o);
    if (!s.ok()) return s.WithContext(StrCat("step '", step_.name, "': "));
    return Status::Ok();
  }

  std::string Describe() const override {
    if (block_ > 0)
      return StrCat("global avgpool nchwc", block_, " ", pool::SelectPoolUkernel(ActiveIsa()).name);
    return StrCat(max_ ? "global maxpool " : "global avgpool ",
                  pool::SelectPoolUkernel(ActiveIsa()).name);
  }

 private:
  GlobalPoolKernel(const Step& step, bool max, int64_t block, int64_t channels)
      : step_(step), max_(max), block_(block), channels_(channels) {}

  // [N, C, spatial...] -> [N, C, 1...]; blocked: [N, ceil(C/c), H, W, c] -> [N, C, 1, 1].
  // Returns the output rank.
  Expected<size_t> OutputShape(const Dims& x, std::array<int64_t, kMaxRank>* out) const {
    out->fill(1);
    if (block_ > 0) {
      const int64_t blocks = (channels_ + block_ - 1) / block_;
      if (x.size() != 5 || x[1] != blocks || x[4] != block_)
        return Status::Error("step '", step_.name, "': blocked global pooling needs [N, ", blocks,
                             ", H, W, ", block_, "], got ", DimsToString(x));
      (*out)[0] = x[0];
      (*out)[1] = channels_;
      return size_t{4};
    }
    if (x.size() < 3)
      return Status::Error("step '", step_.name, "': global pooling needs [N, C, spatial...], got ",
                           DimsToString(x));
    (*out)[0] = x[0];
    (*out)[1] = x[1];
    return x.size();
  }

  Step step_;
  bool max_;
  int64_t block_;     // 0: NCHW input
  int64_t channels_;  // C of a blocked input
};

// ---------------------------------------------------------------------------------------------
// ReduceMean / ReduceSum.

class ReduceKernel final : public StepKernel {
 public:
  static Expected<std::unique_ptr<StepKernel>> Create(const Step& step, const Module& module) {
    KILN_RETURN_IF_ERROR(kernel_util::CheckArity(step, 1, 1));
    const DType f32[] = {DType::kFloat32};
    KILN_RETURN_IF_ERROR(kernel_util::CommonDType(step, module, f32).status());
    KILN_ASSIGN_OR_RETURN(std::string op, step.params.String("op"));
    if (op != "mean" && op != "sum") return Status::Error("unknown reduction '", op, "'");
    KILN_ASSIGN_OR_RETURN(int64_t rank, step.params.Int("rank"));
    if (rank < 0 || rank > static_cast<int64_t>(kMaxRank))
      return Status::Error("reduction rank ", rank, " is out of range");
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, step.params.IntList("axes"));
    auto k = std::unique_ptr<ReduceKernel>(new ReduceKernel(step, op == "mean"));
    k->rank_ = static_cast<size_t>(rank);
    k->keepdims_ = step.params.IntOr("keepdims", 1) != 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      if (axes[i] < 0 || axes[i] >= rank || (i > 0 && axes[i] <= axes[i - 1]))
        return Status::Error("reduction axes ", DimsToString(axes),
                             " must be sorted, distinct and in [0, ", rank, ")");
      k->reduced_[static_cast<size_t>(axes[i])] = true;
    }
    return std::unique_ptr<StepKernel>(std::move(k));
  }

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    KILN_ASSIGN_OR_RETURN(const Dims* x, kernel_util::InputDims(inputs, 0, step_));
    if (x->size() != rank_)
      return Status::Error("step '", step_.name, "': the reduction expects rank ", rank_, ", got ",
                           DimsToString(*x));
    std::array<int64_t, kMaxRank> out{};
    outputs->assign(1, Dims(out.begin(), out.begin() + OutDims(*x, &out)));
    return Status::Ok();
  }

  Status Run(const StepArgs& args) const override {
    if (args.inputs.size() != 1 || args.outputs.size() != 1)
      return Status::Error("step '", step_.name, "': wrong number of tensors");
    const Tensor* x = args.inputs[0];
    KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(x, DType::kFloat32, step_, "input"));
    if (x->dims().size() != rank_)
      return Status::Error("step '", step_.name, "': input ", DescribeTensor(*x), " is not rank ",
                           rank_);
    std::array<int64_t, kMaxRank> out{};
    const size_t out_rank = OutDims(x->dims(), &out);
    KILN_RETURN_IF_ERROR(kernel_util::CheckOutput(
        args.outputs[0], DType::kFloat32, std::span<const int64_t>(out.data(), out_rank), step_));
    Reduce(x->dims(), x->data<float>(), args.outputs[0]->data<float>(),
           static_cast<size_t>(args.outputs[0]->numel()), args.pool);
    return Status::Ok();
  }

  std::string Describe() const override {
    std::string axes;
    for (size_t i = 0; i < rank_; ++i)
      if (reduced_[i]) axes += StrCat(axes.empty() ? "" : ",", i);
    return StrCat("reduce ", mean_ ? "mean" : "sum", " axes ", axes);
  }

 private:
  ReduceKernel(const Step& step, bool mean) : step_(step), mean_(mean) {}

  size_t OutDims(std::span<const int64_t> x, std::array<int64_t, kMaxRank>* out) const {
    size_t r = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!reduced_[i]) {
        (*out)[r++] = x[i];
      } else if (keepdims_) {
        (*out)[r++] = 1;
      }
    }
    return r;
  }

  void Reduce(std::span<const int64_t> x, const float* xp, float* yp, size_t n_out,
              ThreadPool* pool) const {
    // Merge neighbouring dims of the same kind; unit dims drop out.
    std::array<size_t, kMaxRank> size{};
    std::array<bool, kMaxRank> red{};
    size_t groups = 0, count = 1;
    for (size_t i = 0; i < x.size(); ++i) {
      const auto d = static_cast<size_t>(x[i]);
      if (reduced_[i]) count *= d;
      if (d == 1) continue;
      if (groups > 0 && red[groups - 1] == reduced_[i]) {
        size[groups - 1] *= d;
      } else {
        size[groups] = d;
        red[groups] = reduced_[i];
        ++groups;
      }
    }
    const float scale = mean_ ? 1.0f / static_cast<float>(count) : 1.0f;
    if (n_out == 0) return;
    size_t n_reduced_groups = 0;
    for (size_t g = 0; g < groups; ++g) n_reduced_groups += red[g] ? 1 : 0;
    if (n_reduced_groups <= 1) {
      // [outer] [reduced] [inner]: each output row sums `reduced` input rows.
      size_t outer = 1, reduced = 1, inner = 1, g = 0;
      if (g < groups && !red[g]) outer = size[g++];
      if (g < groups && red[g]) reduced = size[g++];
      if (g < groups) inner = size[g++];
      const ukernels::F32ReduceFn gavg = pool::SelectPoolUkernel(ActiveIsa()).gavgpool;
      ParallelFor(pool, outer, [&](size_t o) {
        const float* xs = xp + o * reduced * inner;
        float* ys = yp + o * inner;
        if (inner == 1) {
          // Contiguous runs (ReduceMean over H, W in SE blocks): the global-pool microkernel.
          if (reduced == 0) {
            ys[0] = 0.0f * scale;  // sum 0; mean NaN (0 / 0), as numpy
          } else {
            const float m = gavg(reduced, xs);  // the mean of the run
            ys[0] = mean_ ? m : m * static_cast<float>(reduced);
          }
          return;
        }
        std::fill(ys, ys + inner, 0.0f);
        for (size_t r = 0; r < reduced; ++r)
          for (size_t i = 0; i < inner; ++i) ys[i] += xs[r * inner + i];
        for (size_t i = 0; i < inner; ++i) ys[i] *= scale;
      });
      return;
    }
    // Several separate reduced groups: walk the input once with an odometer.
    std::array<size_t, kMaxRank> out_stride{}, idx{};
    size_t s = 1;
    for (size_t g = groups; g-- > 0;) {
      out_stride[g] = red[g] ? 0 : s;
      if (!red[g]) s *= size[g];
    }
    std::fill(yp, yp + n_out, 0.0f);
    size_t n_in = 1;
    for (size_t g = 0; g < groups; ++g) n_in *= size[g];
    size_t o = 0;
    for (size_t i = 0; i < n_in; ++i) {
      yp[o] += xp[i];
      for (size_t g = groups; g-- > 0;) {
        o += out_stride[g];
        if (++idx[g] < size[g]) break;
        o -= out_stride[g] * size[g];
        idx[g] = 0;
      }
    }
    for (size_t i = 0; i < n_out; ++i) yp[i] *= scale;
  }

  Step step_;
  bool mean_;
  size_t rank_ = 0;
  bool keepdims_ = true;
  std::array<bool, kMaxRank> reduced_{};
};

Expected<std::unique_ptr<StepKernel>> MakeMaxPool(const Step& s, const Module& m) {
  return Pool2dKernel::Create(s, m, true);
}
Expected<std::unique_ptr<StepKernel>> MakeAvgPool(const Step& s, const Module& m) {
  return Pool2dKernel::Create(s, m, false);
}
Expected<std::unique_ptr<StepKernel>> MakeGlobalMax(const Step& s, const Module& m) {
  return GlobalPoolKernel::Create(s, m, true);
}
Expected<std::unique_ptr<StepKernel>> MakeGlobalAvg(const Step& s, const Module& m) {
  return GlobalPoolKernel::Create(s, m, false);
}
Expected<std::unique_ptr<StepKernel>> MakeReduce(const Step& s, const Module& m) {
  return ReduceKernel::Create(s, m);
}

const KernelEntry kEntries[] = {
    {"maxpool2d", MakeMaxPool},
    {"avgpool2d", MakeAvgPool},
    {"global_maxpool", MakeGlobalMax},
    {"global_avgpool", MakeGlobalAvg},
    {"reduce", MakeReduce},
};

}  // namespace

std::span<const KernelEntry> PoolKernels() { return kEntries; }

}  // namespace kiln::runtime
