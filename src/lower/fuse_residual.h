// Residual adds folded into the conv before them, on the lowered module.
//
// ResNet's blocks end in Conv -> Add(identity) -> Relu, and MobileNetV2's and EfficientNet's in
// Conv -> Add: two passes over a tensor that the conv has just written. When the conv's
// algorithm can accumulate onto its output (conv::SupportsAccumulate: the GEMM paths and the
// direct NCHWc kernel), the three steps become one "conv2d" step with params "residual" = 1, a
// second input Z (the Add's other operand) and the Relu as its activation:
// Y = act(conv(X) + bias + Z). The step may write Y over Z's buffer when Z dies there
// (StepKernel::InPlace), so the sum costs no pass of its own (runtime/kernels/conv.cc).
//
// It runs after layout planning, on final dims and layouts: the Add's operands then have the same
// dims and layout (blocked or not), which is the layout the conv writes. Matched:
//   conv2d step C (no activation) writing V, read by one step only, not a module output;
//   eltwise_binary "add" A reading V and Z (either order, Z != V), Z of V's dims (all static);
//   optionally eltwise_unary "relu" R as the only reader of A's output (not a module output).
// The fused step takes A's place in the order (X and Z are both ready there) and R's (or A's)
// output; V and A's output disappear from the module's values.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/module.h"
#include "support/status.h"

namespace kiln::lower {

// False when the environment sets KILN_FUSE_RESIDUAL=0 (to compare with and without it).
bool ResidualFusionEnabled();

// Rewrites `module` in place; returns how many adds were folded.
Expected<size_t> FuseResidualAdds(runtime::Module& module);

// Drops the steps marked in `dead_step` (one flag per step, order kept) and the values marked in
// `dead_value` (one flag per value), renumbering the remaining values everywhere they are named;
// shared by the fusions that fold a step and its output into another step.
void DropStepsAndValues(runtime::Module& module, const std::vector<bool>& dead_step,
                        const std::vector<bool>& dead_value);

}  // namespace kiln::lower
