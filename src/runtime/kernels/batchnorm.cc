// Inference batch normalization, folded at compile time into y = x * scale[c] + shift[c], with
// an optional activation after it (kiln.FusedBatchNorm: DenseNet's pre-activation BN -> ReLU,
// which cannot fold into a conv because a Concat comes before it). The activation runs on each
// channel plane right after its scale and shift, while the plane is still in cache, so the pair
// costs one pass over memory instead of two.
//
// Params (written by lower/native_eltwise.cc):
//   batchnorm  ints "channels"; blobs[0] = channels scales then channels shifts (floats);
//              optional strings "activation" (a gemm::ActivationName; absent: none) with floats
//              "clip_min", "clip_max" for clip; optional ints "avgpool2x2" = 1: the result then
//              goes through a 2x2 stride-2 average pool without padding (floor: [N, C, H/2,
//              W/2]) before it is stored, for activation none or relu only (lower/fuse_bn_pool.h).
#include <algorithm>

#include "kernels/eltwise/eltwise.h"
#include "kernels/eltwise/ukernel_table.h"
#include "runtime/kernels/families.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/prepacked_params.h"

namespace kiln::runtime {
namespace {

// Below this many elements per task, splitting costs more than it saves.
constexpr size_t kChunk = 16 * 1024;
// Columns of a pooled batchnorm's row pair summed at a time (even; a stack buffer).
constexpr size_t kPoolCols = 256;

// The eltwise microkernel that applies `act`, or nullopt for none.
std::optional<eltwise::UnaryOp> UnaryOf(gemm::Activation act) {
  switch (act) {
    case gemm::Activation::kNone:
      return std::nullopt;
    case gemm::Activation::kRelu:
      return eltwise::UnaryOp::kRelu;
    case gemm::Activation::kClip:
      return eltwise::UnaryOp::kClip;
    case gemm::Activation::kSilu:
      return eltwise::UnaryOp::kSilu;
    case gemm::Activation::kHardSwish:
      return eltwise::UnaryOp::kHardSwish;
    case gemm::Activation::kGelu:
      return eltwise::UnaryOp::kGelu;
  }
  return std::nullopt;
}

class BatchNormKernel final : public StepKernel {
 public:
  static Expected<std::unique_ptr<StepKernel>> Create(const Step& step, const Module& module) {
    KILN_RETURN_IF_ERROR(kernel_util::CheckArity(step, 1, 1));
    const DType f32[] = {DType::kFloat32};
    KILN_RETURN_IF_ERROR(kernel_util::CommonDType(step, module, f32).status());
    KILN_ASSIGN_OR_RETURN(int64_t c, step.params.Int("channels"));
    if (step.blobs.size() != 1 || step.blobs[0] < 0 ||
        static_cast<size_t>(step.blobs[0]) >= module.blobs.size())
      return Status::Error("batchnorm needs one blob of scales and shifts");
    const auto bytes = module.BlobBytes(step.blobs[0]);
    if (c < 0 || bytes.size() != static_cast<size_t>(c) * 2 * sizeof(float))
      return Status::Error("batchnorm blob has ", bytes.size(), " bytes; ", c, " channels need ",
                           c * 2 * 4);
    auto k = std::unique_ptr<BatchNormKernel>(
        new BatchNormKernel(step, static_cast<size_t>(c), module.BlobData<float>(step.blobs[0])));
    if (step.params.strings.count("activation") != 0) {
      gemm::Epilogue ep;
      KILN_RETURN_IF_ERROR(prepacked::ReadActivation(step.params, &ep));
      k->activation_ = ep.activation;
      k->params_ = {ep.clip_min, ep.clip_max};
      if (const auto op = UnaryOf(ep.activation))
        k->ukernel_ = &eltwise::SelectUnaryUkernel(*op, ActiveIsa());
    }
    const int64_t pool = step.params.IntOr("avgpool2x2", 0);
    if (pool != 0 && pool != 1)
      return Status::Error("step parameter 'avgpool2x2' = ", pool, " is outside [0, 1]");
    if (pool && k->activation_ != gemm::Activation::kNone &&
        k->activation_ != gemm::Activation::kRelu)
      return Status::Error("batchnorm: a pooled batchnorm takes activation none or relu, not ",
                           gemm::ActivationName(k->activation_));
    k->pool_ = pool != 0;
    return std::unique_ptr<StepKernel>(std::move(k));
  }

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    KILN_ASSIGN_OR_RETURN(const Dims* x, kernel_util::InputDims(inputs, 0, step_));
    if (x->size() < 2 || static_cast<size_t>((*x)[1]) != channels_)
      return Status::Error("step '", step_.name, "': batch normalization of ", channels_,
                           " channels got input ", DimsToString(*x));
    if (pool_ && (x->size() != 4 || (*x)[2] < 2 || (*x)[3] < 2))
      return Status::Error("step '", step_.name, "': a pooled batch normalization needs NCHW "
                           "of at least 2x2 pixels, got ", DimsToString(*x));
    outputs->assign(1, pool_ ? PooledDims(*x) : *x);
    return Status::Ok();
  }
  std::vector<std::pair<int, int>> InPlace() const override {
    if (pool_) return {};
    return {{0, 0}};
  }

  Status Run(const StepArgs& args) const override {
    if (args.inputs.size() != 1 || args.outputs.size() != 1)
      return Status::Error("step '", step_.name, "': wrong number of tensors");
    const Tensor* x = args.inputs[0];
    KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(x, DType::kFloat32, step_, "input"));
    if (x->rank() < 2 || static_cast<size_t>(x->dim(1)) != channels_)
      return Status::Error("step '", step_.name, "': input ", DescribeTensor(*x), " does not have ",
                           channels_, " channels");
    if (pool_) return RunPooled(*x, args);
    KILN_RETURN_IF_ERROR(
        kernel_util::CheckOutput(args.outputs[0], DType::kFloat32, x->dims(), step_));
    const auto planes = static_cast<size_t>(x->dim(0)) * channels_;
    if (planes == 0 || x->numel() == 0) return Status::Ok();
    const size_t plane = static_cast<size_t>(x->numel()) / planes;
    const float* xp = x->data<float>();
    float* yp = args.outputs[0]->data<float>();
    // Whole planes per task, about kChunk elements each (a 7x7 plane alone is too little work).
    const size_t per = std::clamp<size_t>(kChunk / std::max<size_t>(plane, 1), 1, planes);
    const size_t tasks = ThreadCount(args.pool) == 1 ? 1 : (planes + per - 1) / per;
    const size_t span = (planes + tasks - 1) / tasks;
    ParallelFor(args.pool, tasks, [&](size_t t) {
      const size_t end = std::min(planes, (t + 1) * span);
      for (size_t p = t * span; p < end; ++p) {
        const float s = scale_shift_[p % channels_], b = scale_shift_[channels_ + p % channels_];
        const float* xs = xp + p * plane;
        float* ys = yp + p * plane;
        // ReLU (DenseNet's) in the same loop: one pass. With the relu microkernel run over the
        // plane afterwards instead, a Relu -> BN -> ReLU graph on 1x256x56x56 measured slower
        // fused than unfused (kiln bench, 1 thread, min of 1000: 0.31 vs 0.265 ms); this way
        // 0.26.
        if (activation_ == gemm::Activation::kRelu) {
          for (size_t i = 0; i < plane; ++i) ys[i] = std::max(xs[i] * s + b, 0.0f);
          continue;
        }
        for (size_t i = 0; i < plane; ++i) ys[i] = xs[i] * s + b;
        if (ukernel_ != nullptr) ukernel_->fn(plane, ys, ys, &params_);
      }
    });
    return Status::Ok();
  }

  std::string Describe() const override {
    if (pool_)
      return StrCat("batchnorm+", gemm::ActivationName(activation_), "+avgpool 2x2 s2 ", channels_,
                    " channels");
    if (ukernel_ == nullptr) return StrCat("batchnorm ", channels_, " channels");
    return StrCat("batchnorm+", gemm::ActivationName(activation_), " ", channels_, " channels [",
                  ukernel_->name, "]");
  }

 private:
  static Dims PooledDims(const Dims& x) { return {x[0], x[1], x[2] / 2, x[3] / 2}; }

  // DenseNet's transitions: BN -> ReLU -> (1x1 conv, moved after the pool by
  // passes/pool_before_conv1x1.h) -> 2x2 average pool. One pass reads X and writes the quarter
  // size output; the full-size BN+ReLU result is never stored and read back.
  Status RunPooled(const Tensor& x, const StepArgs& args) const {
    if (x.rank() != 4 || x.dim(2) < 2 || x.dim(3) < 2)
      return Status::Error("step '", step_.name, "': a pooled batch normalization needs NCHW "
                           "of at least 2x2 pixels, got ", DescribeTensor(x));
    const Dims out = PooledDims(x.dims());
    KILN_RETURN_IF_ERROR(kernel_util::CheckOutput(args.outputs[0], DType::kFloat32, out, step_));
    const auto planes = static_cast<size_t>(x.dim(0)) * channels_;
    const auto h = static_cast<size_t>(x.dim(2)), w = static_cast<size_t>(x.dim(3));
    const size_t oh = h / 2, ow = w / 2;
    const float* xp = x.data<float>();
    float* yp = args.outputs[0]->data<float>();
    const bool relu = activation_ == gemm::Activation::kRelu;
    const size_t per = std::clamp<size_t>(kChunk / (h * w), 1, planes);
    const size_t tasks = ThreadCount(args.pool) == 1 ? 1 : (planes + per - 1) / per;
    const size_t span = (planes + tasks - 1) / tasks;
    ParallelFor(args.pool, tasks, [&](size_t t) {
      const size_t end = std::min(planes, (t + 1) * span);
      for (size_t p = t * span; p < end; ++p) {
        // The pool's 1/4 folds into the scale and shift (ReLU commutes with a positive factor).
        const float s = 0.25f * scale_shift_[p % channels_];
        const float b = 0.25f * scale_shift_[channels_ + p % channels_];
        for (size_t oy = 0; oy < oh; ++oy) {
          const float* r0 = xp + (p * h + 2 * oy) * w;
          const float* r1 = r0 + w;
          float* yr = yp + (p * oh + oy) * ow;
          // The two rows' vertical sums first, contiguous (they vectorize), then the pairs of
          // columns; a stride-2 loop over both rows at once ran 5x slower on 14x14 planes.
          for (size_t c0 = 0; c0 < 2 * ow; c0 += kPoolCols) {
            const size_t n = std::min(kPoolCols, 2 * ow - c0);
            float col[kPoolCols];
            if (relu) {
              for (size_t j = 0; j < n; ++j)
                col[j] = std::max(r0[c0 + j] * s + b, 0.0f) + std::max(r1[c0 + j] * s + b, 0.0f);
            } else {
              for (size_t j = 0; j < n; ++j) col[j] = (r0[c0 + j] + r1[c0 + j]) * s + 2 * b;
            }
            for (size_t j = 0; j < n / 2; ++j) yr[c0 / 2 + j] = col[2 * j] + col[2 * j + 1];
          }
        }
      }
    });
    return Status::Ok();
  }

  BatchNormKernel(const Step& step, size_t channels, const float* scale_shift)
      : step_(step), channels_(channels), scale_shift_(scale_shift) {}
  Step step_;
  size_t channels_;
  const float* scale_shift_;
  gemm::Activation activation_ = gemm::Activation::kNone;
  ukernels::F32UnaryParams params_{0, 0};
  const eltwise::UnaryUkernel* ukernel_ = nullptr;
  bool pool_ = false;  // "avgpool2x2"
};

Expected<std::unique_ptr<StepKernel>> MakeBatchNorm(const Step& step, const Module& module) {
  return BatchNormKernel::Create(step, module);
}

const KernelEntry kEntries[] = {
    {"batchnorm", MakeBatchNorm},
};

}  // namespace

std::span<const KernelEntry> BatchNormKernels() { return kEntries; }

}  // namespace kiln::runtime
