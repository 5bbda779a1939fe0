// Elementwise steps that only the channel-blocked layout needs (lower/layout.h): the planner
// rewrites a broadcast Mul into one of these when its big operand is held NCHWc, because the
// plain eltwise kernels broadcast over NCHW dims.
//
//   channel_scale_nchwc  y[n, cb, h, w, l] = x[n, cb, h, w, l] * s[n or 0, cb * c + l]:
//                        x and y [N, ceil(C/c), H, W, c], s [N or 1, C, 1, 1] (a squeeze-and-
//                        excitation scale); padding lanes past C are scaled by 0.
//                        Params: int "block" (c, 2..64).
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/eltwise/eltwise.h"
#include "kernels/eltwise/ukernel_table.h"
#include "runtime/kernels/families.h"
#include "runtime/kernels/kernel_util.h"

namespace kiln::runtime {
namespace {

class ChannelScaleKernel final : public StepKernel {
 public:
  static Expected<std::unique_ptr<StepKernel>> Create(const Step& step, const Module& module) {
    KILN_RETURN_IF_ERROR(kernel_util::CheckArity(step, 2, 1));
    const DType f32[] = {DType::kFloat32};
    KILN_RETURN_IF_ERROR(kernel_util::CommonDType(step, module, f32).status());
    KILN_ASSIGN_OR_RETURN(int64_t block, step.params.Int("block"));
    if (block < 2 || block > 64)
      return Status::Error("channel_scale_nchwc: block ", block, " is not in 2..64");
    return std::unique_ptr<StepKernel>(new ChannelScaleKernel(step, block));
  }

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    KILN_ASSIGN_OR_RETURN(const Dims* x, kernel_util::InputDims(inputs, 0, step_));
    KILN_ASSIGN_OR_RETURN(const Dims* s, kernel_util::InputDims(inputs, 1, step_));
    KILN_RETURN_IF_ERROR(Check(*x, *s));
    outputs->assign(1, *x);
    return Status::Ok();
  }

  Status Run(const StepArgs& args) const override {
    if (args.inputs.size() != 2 || args.outputs.size() != 1)
      return Status::Error("step '", step_.name, "': wrong number of tensors");
    const Tensor *x = args.inputs[0], *s = args.inputs[1];
    KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(x, DType::kFloat32, step_, "input"));
    KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(s, DType::kFloat32, step_, "scale"));
    KILN_RETURN_IF_ERROR(Check(x->dims(), s->dims()));
    KILN_RETURN_IF_ERROR(
        kernel_util::CheckOutput(args.outputs[0], DType::kFloat32, x->dims(), step_));
    const auto c = static_cast<size_t>(block_);
    const auto n = static_cast<size_t>(x->dim(0)), blocks = static_cast<size_t>(x->dim(1));
    const auto hw = static_cast<size_t>(x->dim(2) * x->dim(3));
    const bool per_image = s->dim(0) != 1;
    const auto channels = static_cast<size_t>(s->dim(1));
    const float* xp = x->data<float>();
    const float* sp = s->data<float>();
    float* yp = args.outputs[0]->data<float>();
    eltwise::Options o;
    o.pool = args.pool;
    Status st = eltwise::ChannelScaleNchwc(n, blocks, hw, c, channels, per_image, xp, sp, yp, o);
    if (!st.ok()) return st.WithContext(StrCat("step '", step_.name, "': "));
    return Status::Ok();
  }

  // Elementwise: y may be x's buffer (the planner then keeps one map, not two, in cache).
  std::vector<std::pair<int, int>> InPlace() const override { return {{0, 0}}; }

  std::string Describe() const override {
    return StrCat("channel scale nchwc", block_, " ",
                  eltwise::SelectChannelScaleUkernel(ActiveIsa()).name);
  }

 private:
  ChannelScaleKernel(const Step& step, int64_t block) : step_(step), block_(block) {}

  // x [N, C/c, H, W, c] and s [N or 1, C, 1, 1].
  Status Check(const Dims& x, const Dims& s) const {
    if (x.size() != 5 || x[4] != block_ || s.size() != 4 || (s[0] != 1 && s[0] != x[0]) ||
        s[1] < 1 || (s[1] + block_ - 1) / block_ != x[1] || s[2] != 1 || s[3] != 1) {
      return Status::Error("step '", step_.name, "' (channel_scale_nchwc): x ", DimsToString(x),
                           " and scale ", DimsToString(s), " are not [N, ceil(C/", block_,
                           "), H, W, ", block_, "] and [N or 1, C, 1, 1]");
    }
    return Status::Ok();
  }

  Step step_;
  int64_t block_;
};

constexpr KernelEntry kBlockedEltwiseKernels[] = {
    {"channel_scale_nchwc", ChannelScaleKernel::Create}};

}  // namespace

std::span<const KernelEntry> BlockedEltwiseKernels() { return kBlockedEltwiseKernels; }

}  // namespace kiln::runtime
