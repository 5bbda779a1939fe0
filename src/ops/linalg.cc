// Linear-algebra ops: Det.
#include "kernels/ref/linalg.h"
#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

Status InferDet(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "X"));
  const DType t = InputDType(node, 0);
  if (t != DType::kUndefined && t != DType::kFloat32 && t != DType::kFloat64 &&
      t != DType::kFloat16 && t != DType::kBFloat16)
    return Status::Error(node.Where(), "X must be a floating-point tensor, got ", DTypeName(t));
  const std::vector<Dim>* in = InputShape(node, 0);
  std::optional<std::vector<Dim>> out;
  if (in) {
    if (in->size() < 2)
      return Status::Error(node.Where(), "X must be [..., M, M], got rank ", in->size());
    const Dim& rows = (*in)[in->size() - 2];
    const Dim& cols = in->back();
    if (rows.is_static() && cols.is_static() && rows.value != cols.value)
      return Status::Error(node.Where(), "X must hold square matrices, got ", rows.value, "x",
                           cols.value);
    out = std::vector<Dim>(in->begin(), in->end() - 2);
  }
  SetOutputType(node, 0, TypeOf(t, out));
  return Status::Ok();
}

Status RunDet(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* x, Input(ctx, 0, "X"));
  Status st = ref::Det(*x, &ctx.outputs[0]);
  if (!st.ok()) return ctx.Error(st.message());
  return Status::Ok();
}

const OpDef kLinalgOps[] = {
    {"", "Det", InferDet, RunDet, 11, /*promote_half=*/true},
};

}  // namespace

std::span<const OpDef> LinalgOps() { return kLinalgOps; }

}  // namespace kiln::ops
