// Inference batch normalization, folded at compile time into y = x * scale[c] + shift[c], with
// an optional activation after it (kiln.FusedBatchNorm: DenseNet's pre-activation BN -> ReLU,
// which cannot fold into a conv because a Concat comes before it). The activation runs on each
// channel plane right after its scale and shift, while the plane is still in cache, so the pair
// costs one pass over memory instead of two.
//
// Params (written by lower/native_eltwise.cc):
//   batchnorm  ints "channels"; blobs[0] = channels scales then channels shifts (floats);
//              optional strings "activation" (a gemm::ActivationName; absent: none) with floats
//              "clip_min", "clip_max" for clip.
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
    return std::unique_ptr<StepKernel>(std::move(k));
  }

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    KILN_ASSIGN_OR_RETURN(const Dims* x, kernel_util::InputDims(inputs, 0, step_));
    if (x->size() < 2 || static_cast<size_t>((*x)[1]) != channels_)
      return Status::Error("step '", step_.name, "': batch normalization of ", channels_,
                           " channels got input ", DimsToString(*x));
    outputs->assign(1, *x);
    return Status::Ok();
  }
  std::vector<std::pair<int, int>> InPlace() const override { return {{0, 0}}; }

  Status Run(const StepArgs& args) const override {
    if (args.inputs.size() != 1 || args.outputs.size() != 1)
      return Status::Error("step '", step_.name, "': wrong number of tensors");
    const Tensor* x = args.inputs[0];
    KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(x, DType::kFloat32, step_, "input"));
    if (x->rank() < 2 || static_cast<size_t>(x->dim(1)) != channels_)
      return Status::Error("step '", step_.name, "': input ", DescribeTensor(*x), " does not have ",
                           channels_, " channels");
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
    if (ukernel_ == nullptr) return StrCat("batchnorm ", channels_, " channels");
    return StrCat("batchnorm+", gemm::ActivationName(activation_), " ", channels_, " channels [",
                  ukernel_->name, "]");
  }

 private:
  BatchNormKernel(const Step& step, size_t channels, const float* scale_shift)
      : step_(step), channels_(channels), scale_shift_(scale_shift) {}
  Step step_;
  size_t channels_;
  const float* scale_shift_;
  gemm::Activation activation_ = gemm::Activation::kNone;
  ukernels::F32UnaryParams params_{0, 0};
  const eltwise::UnaryUkernel* ukernel_ = nullptr;
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
