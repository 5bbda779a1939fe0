// Shared pieces of op definitions: shape and type inference, input access.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ops/op_registry.h"
#include "support/status.h"

namespace kiln::ops {

using ir::Dim;
using ir::ValueType;

// Sets output i's type if the node has that output.
void SetOutputType(ir::Node& node, size_t i, ValueType type);
// Output 0 gets input 0's type (unary math, activations, normalizations).
Status InferSameAsInput0(ir::Node& node);
// Output types unknown except for the element type of input 0 (a fallback for data-dependent ops).
Status InferDTypeOfInput0(ir::Node& node);
// Numpy-style multidirectional broadcast of the inputs' shapes; nullopt if any rank is unknown.
Expected<std::optional<std::vector<Dim>>> BroadcastShapes(const ir::Node& node);
// Normalizes a possibly negative axis into [0, rank), or errors naming the node.
Expected<int64_t> NormalizeAxis(const ir::Node& node, int64_t axis, int64_t rank);
// The constant value of input i, if the input is present and constant (initializer or folded).
const Tensor* ConstantInput(const ir::Node& node, size_t i);
// Rank of input i, or -1 when unknown / absent.
int64_t InputRank(const ir::Node& node, size_t i);
// Input i's shape, or nullptr when the input is absent or its rank unknown.
const std::vector<Dim>* InputShape(const ir::Node& node, size_t i);
// The dims of `t` when all but the first are static, with the first taken as 1 if it is not:
// ops that keep the batch dim as it is (Conv, pools) plan with these and put the batch back.
std::optional<std::vector<int64_t>> StaticDimsBatchAsOne(const ValueType& t);
// Input i's element type, kUndefined when absent or not known yet.
DType InputDType(const ir::Node& node, size_t i);
inline ValueType TypeOf(DType t, std::optional<std::vector<Dim>> shape) {
  return ValueType{t, std::move(shape)};
}
// An error naming the node unless input i is present; `what` is the input's role ("data").
Status RequireInput(const ir::Node& node, size_t i, const char* what);
// The same for inputs 0..n-1.
Status RequireInputs(const ir::Node& node, size_t n);
// At run time: input i, or an error naming the node and the input's role.
Expected<const Tensor*> Input(RunContext& ctx, size_t i, const char* what);

}  // namespace kiln::ops
