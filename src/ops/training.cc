// Optimizer ops of the ai.onnx.preview.training domain: Adagrad, Momentum, Adam. One node updates
// n tensors: inputs R, T, X_1..X_n, G_1..G_n, then each state S_1..S_n; outputs X_new_1..n then
// each state's new values. The per-tensor math is in kernels/ref/training.
#include <array>

#include "kernels/ref/training.h"
#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

constexpr char kTrainingDomain[] = "ai.onnx.preview.training";

// How many tensors the node updates, given `states` state tensors per X (1 for Adagrad and
// Momentum, 2 for Adam); an error unless the input and output counts fit that layout.
Expected<size_t> GroupCount(const ir::Node& node, size_t states) {
  const size_t per = 2 + states;
  const size_t in = node.inputs.size();
  if (in < 2 + per || (in - 2) % per != 0)
    return Status::Error(node.Where(), "expects R, T and ", per,
                         " inputs per optimized tensor, got ", in, " inputs");
  const size_t n = (in - 2) / per;
  if (node.outputs.size() > (1 + states) * n)
    return Status::Error(node.Where(), "has ", node.outputs.size(), " outputs for ", n,
                         " optimized tensors (at most ", (1 + states) * n, ")");
  for (size_t i = 0; i < in; ++i)
    if (!node.has_input(i)) return Status::Error(node.Where(), "input ", i, " is missing");
  return n;
}

Status CheckScalarType(const ir::Node& node, size_t i, const char* what, bool want_float) {
  const DType t = InputDType(node, i);
  const bool ok = t == DType::kUndefined ||
                  (want_float ? (t == DType::kFloat32 || t == DType::kFloat64)
                              : t == DType::kInt64);
  if (!ok)
    return Status::Error(node.Where(), what, " must be ", want_float ? "float or double" : "int64",
                         ", got ", DTypeName(t));
  return Status::Ok();
}

Status InferOptimizer(ir::Node& node, size_t states) {
  KILN_ASSIGN_OR_RETURN(const size_t n, GroupCount(node, states));
  KILN_RETURN_IF_ERROR(CheckScalarType(node, 0, "R (learning rate)", true));
  KILN_RETURN_IF_ERROR(CheckScalarType(node, 1, "T (step count)", false));
  for (size_t i = 0; i < n; ++i) {
    KILN_RETURN_IF_ERROR(CheckScalarType(node, 2 + i, "X", true));
    SetOutputType(node, i, node.inputs[2 + i]->type);
    for (size_t s = 0; s < states; ++s)
      SetOutputType(node, (1 + s) * n + i, node.inputs[2 + (2 + s) * n + i]->type);
  }
  return Status::Ok();
}

Status InferAdagrad(ir::Node& node) { return InferOptimizer(node, 1); }
Status InferMomentum(ir::Node& node) { return InferOptimizer(node, 1); }
Status InferAdam(ir::Node& node) { return InferOptimizer(node, 2); }

struct Step {
  double rate = 0;
  int64_t count = 0;
};

Expected<Step> ReadStep(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* r, Input(ctx, 0, "R"));
  KILN_ASSIGN_OR_RETURN(const Tensor* t, Input(ctx, 1, "T"));
  if (r->numel() != 1 || (r->dtype() != DType::kFloat32 && r->dtype() != DType::kFloat64))
    return ctx.Error("R must be a float or double scalar, got ", DescribeTensor(*r));
  if (t->numel() != 1 || t->dtype() != DType::kInt64)
    return ctx.Error("T must be an int64 scalar, got ", DescribeTensor(*t));
  return Step{r->AsDouble(0), t->AsInt64(0)};
}

// Moves the kernel's results into the outputs the node declares; the rest are dropped.
void Emit(RunContext& ctx, size_t index, Tensor&& t) {
  if (ctx.node.has_output(index)) ctx.outputs[index] = std::move(t);
}

// ---- Adagrad ---------------------------------------------------------------------------------

Status RunAdagrad(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const size_t n, GroupCount(ctx.node, 1));
  KILN_ASSIGN_OR_RETURN(const Step step, ReadStep(ctx));
  ir::AttrReader reader(ctx.node);
  ref::AdagradParams p;
  p.decay_factor = reader.Float("decay_factor", 0.0f);
  p.epsilon = reader.Float("epsilon", 1e-6f);
  p.norm_coefficient = reader.Float("norm_coefficient", 0.0f);
  KILN_RETURN_IF_ERROR(reader.status());
  for (size_t i = 0; i < n; ++i) {
    Tensor x_new, h_new;
    Status st = ref::AdagradStep(step.rate, step.count, p, *ctx.inputs[2 + i],
                                 *ctx.inputs[2 + n + i], *ctx.inputs[2 + 2 * n + i], &x_new,
                                 &h_new);
    if (!st.ok()) return ctx.Error("tensor ", i, ": ", st.message());
    Emit(ctx, i, std::move(x_new));
    Emit(ctx, n + i, std::move(h_new));
  }
  return Status::Ok();
}

// ---- Momentum --------------------------------------------------------------------------------

Status RunMomentum(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const size_t n, GroupCount(ctx.node, 1));
  KILN_ASSIGN_OR_RETURN(const Step step, ReadStep(ctx));
  ir::AttrReader reader(ctx.node);
  for (const char* required : {"alpha", "beta", "mode", "norm_coefficient"})
    if (!reader.Has(required)) return ctx.Error("attribute '", required, "' is required");
  ref::MomentumParams p;
  p.alpha = reader.Float("alpha", 0.0f);
  p.beta = reader.Float("beta", 0.0f);
  p.norm_coefficient = reader.Float("norm_coefficient", 0.0f);
  const std::string mode = reader.String("mode", "standard");
  KILN_RETURN_IF_ERROR(reader.status());
  if (mode != "standard" && mode != "nesterov")
    return ctx.Error("mode '", mode, "' must be standard or nesterov");
  p.nesterov = mode == "nesterov";
  for (size_t i = 0; i < n; ++i) {
    Tensor x_new, v_new;
    Status st = ref::MomentumStep(step.rate, step.count, p, *ctx.inputs[2 + i],
                                  *ctx.inputs[2 + n + i], *ctx.inputs[2 + 2 * n + i], &x_new,
                                  &v_new);
    if (!st.ok()) return ctx.Error("tensor ", i, ": ", st.message());
    Emit(ctx, i, std::move(x_new));
    Emit(ctx, n + i, std::move(v_new));
  }
  return Status::Ok();
}

// ---- Adam ------------------------------------------------------------------------------------

Status RunAdam(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const size_t n, GroupCount(ctx.node, 2));
  KILN_ASSIGN_OR_RETURN(const Step step, ReadStep(ctx));
  ir::AttrReader reader(ctx.node);
  ref::AdamParams p;
  p.alpha = reader.Float("alpha", 0.9f);
  p.beta = reader.Float("beta", 0.999f);
  p.epsilon = reader.Float("epsilon", 1e-6f);
  p.norm_coefficient = reader.Float("norm_coefficient", 0.0f);
  p.norm_coefficient_post = reader.Float("norm_coefficient_post", 0.0f);
  KILN_RETURN_IF_ERROR(reader.status());
  for (size_t i = 0; i < n; ++i) {
    Tensor x_new, v_new, h_new;
    Status st = ref::AdamStep(step.rate, step.count, p, *ctx.inputs[2 + i], *ctx.inputs[2 + n + i],
                              *ctx.inputs[2 + 2 * n + i], *ctx.inputs[2 + 3 * n + i], &x_new,
                              &v_new, &h_new);
    if (!st.ok()) return ctx.Error("tensor ", i, ": ", st.message());
    Emit(ctx, i, std::move(x_new));
    Emit(ctx, n + i, std::move(v_new));
    Emit(ctx, 2 * n + i, std::move(h_new));
  }
  return Status::Ok();
}

const OpDef kTrainingOps[] = {
    {kTrainingDomain, "Adagrad", InferAdagrad, RunAdagrad, 1},
    {kTrainingDomain, "Momentum", InferMomentum, RunMomentum, 1},
    {kTrainingDomain, "Adam", InferAdam, RunAdam, 1},
};

}  // namespace

std::span<const OpDef> TrainingOps() { return kTrainingOps; }

}  // namespace kiln::ops
