// The "layout_reorder" step kernel: moves a float tensor between plain NCHW [N, C, H, W] and the
// channel-blocked NCHWc layout of kDirectNchwc convolutions, held as a 5-D value
// [N, ceil(C/c), H, W, c]. Lowering (lower/layout.cc) inserts one where a blocked chain of steps
// meets a step that reads or writes NCHW. When C is not a multiple of c, the padding lanes of the
// last block are written as zeros and ignored on the way back.
//
// Params: "block" (c, 2..64), "channels" (C), "to_blocked" (1: NCHW -> NCHWc, 0: back).
#include <array>
#include <cstdint>

#include "kernels/conv/layout.h"
#include "runtime/kernels/families.h"
#include "runtime/kernels/kernel_util.h"

namespace kiln::runtime {
namespace {

class ReorderKernel final : public StepKernel {
 public:
  static Expected<std::unique_ptr<StepKernel>> Create(const Step& step, const Module& module) {
    KILN_RETURN_IF_ERROR(kernel_util::CheckArity(step, 1, 1));
    const DType f32[] = {DType::kFloat32};
    KILN_RETURN_IF_ERROR(kernel_util::CommonDType(step, module, f32).status());
    KILN_ASSIGN_OR_RETURN(int64_t block, step.params.Int("block"));
    KILN_ASSIGN_OR_RETURN(int64_t channels, step.params.Int("channels"));
    KILN_ASSIGN_OR_RETURN(int64_t to_blocked, step.params.Int("to_blocked"));
    if (block < 2 || block > 64 || channels < 1 || channels > (int64_t{1} << 24) ||
        (to_blocked != 0 && to_blocked != 1)) {
      return Status::Error("layout_reorder: block ", block, ", channels ", channels,
                           " and to_blocked ", to_blocked, " are not a block of 2..64, 1..2^24 "
                           "channels and 0 or 1");
    }
    return std::unique_ptr<StepKernel>(new ReorderKernel(
        step, static_cast<size_t>(block), static_cast<size_t>(channels), to_blocked == 1));
  }

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    KILN_ASSIGN_OR_RETURN(const Dims* x, kernel_util::InputDims(inputs, 0, step_));
    KILN_ASSIGN_OR_RETURN(Dims y, OutputDims(*x));
    outputs->assign(1, std::move(y));
    return Status::Ok();
  }

  Status Run(const StepArgs& args) const override {
    if (args.inputs.size() != 1 || args.outputs.size() != 1)
      return Status::Error("step '", step_.name, "': wrong number of tensors");
    const Tensor* x = args.inputs[0];
    KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(x, DType::kFloat32, step_, "input"));
    // Checked in a fixed array: a run at a planned shape must not allocate.
    std::array<int64_t, 5> y{};
    KILN_ASSIGN_OR_RETURN(size_t rank, OutputShape(x->dims(), &y));
    KILN_RETURN_IF_ERROR(kernel_util::CheckOutput(args.outputs[0], DType::kFloat32,
                                                  std::span<const int64_t>(y.data(), rank), step_));
    const int64_t* plain = to_blocked_ ? x->dims().data() : y.data();
    const auto n = static_cast<size_t>(plain[0]), h = static_cast<size_t>(plain[2]),
               w = static_cast<size_t>(plain[3]);
    if (to_blocked_) {
      conv::NchwToNchwc(n, channels_, h, w, block_, x->data<float>(),
                        args.outputs[0]->data<float>(), args.pool);
    } else {
      conv::NchwcToNchw(n, channels_, h, w, block_, x->data<float>(),
                        args.outputs[0]->data<float>(), args.pool);
    }
    return Status::Ok();
  }

  std::string Describe() const override {
    return StrCat("reorder ", to_blocked_ ? "nchw->nchwc" : "nchwc->nchw", block_);
  }

 private:
  ReorderKernel(const Step& step, size_t block, size_t channels, bool to_blocked)
      : step_(step), block_(block), channels_(channels), to_blocked_(to_blocked) {}

  // [N, C, H, W] <-> [N, C/c, H, W, c]; an error for any other input. Returns y's rank.
  Expected<size_t> OutputShape(const Dims& x, std::array<int64_t, 5>* y) const {
    const auto c = static_cast<int64_t>(channels_), b = static_cast<int64_t>(block_);
    const int64_t cb = (c + b - 1) / b;
    if (to_blocked_ && x.size() == 4 && x[1] == c) {
      *y = {x[0], cb, x[2], x[3], b};
      return size_t{5};
    }
    if (!to_blocked_ && x.size() == 5 && x[1] == cb && x[4] == b) {
      *y = {x[0], c, x[2], x[3], 0};
      return size_t{4};
    }
    return Status::Error("step '", step_.name, "' (layout_reorder): input ", DimsToString(x),
                         " is not ", to_blocked_ ? StrCat("[N,", c, ",H,W]")
                                                 : StrCat("[N,", cb, ",H,W,", b, "]"));
  }
  Expected<Dims> OutputDims(const Dims& x) const {
    std::array<int64_t, 5> y;
    KILN_ASSIGN_OR_RETURN(size_t rank, OutputShape(x, &y));
    return Dims(y.begin(), y.begin() + static_cast<ptrdiff_t>(rank));
  }

  Step step_;
  size_t block_, channels_;
  bool to_blocked_;
};

constexpr KernelEntry kReorderKernels[] = {{"layout_reorder", ReorderKernel::Create}};

}  // namespace

std::span<const KernelEntry> ReorderKernels() { return kReorderKernels; }

}  // namespace kiln::runtime
