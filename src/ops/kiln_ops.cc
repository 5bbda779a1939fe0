// The "kiln" domain: ops that kiln's fusion passes produce (recognize_activations,
// fuse_conv_activation, fuse_elementwise). They exist so the native runtime can run a
// Conv/Gemm/BatchNormalization with its activation, or a chain of elementwise ops, in one pass
// over memory. Their reference runs reuse the ONNX ops' definitions and kernels/ref, so the
// interpreter (and constant folding) compute exactly what the unfused graph computed.
//
// kiln.FusedConv(X, W, B?): Conv's attributes and defaults (auto_pad, dilations, group,
//   kernel_shape, pads, strides) plus `activation` and `activation_params`; 2-D (X is
//   [N, C, H, W]) float convs only. Output = act(Conv(X, W, B)).
// kiln.FusedGemm(A, B, C?): Gemm's attributes (alpha, beta, transA, transB) plus `activation`
//   and `activation_params`. Output = act(Gemm(A, B, C)).
//   `activation` (string, required) is one of the epilogues gemm::Activation supports:
//     "Relu", "Clip" (activation_params = [min, max]), "Silu", "HardSwish", "Gelu" (erf form);
//   every other activation takes no params (activation_params absent or empty).
// kiln.FusedBatchNorm(X, scale, B, input_mean, input_var): inference BatchNormalization's
//   attributes (epsilon; training_mode absent or 0) plus `activation` and `activation_params`
//   as above; one output. Output = act(BatchNormalization(X, ...)).
// kiln.Silu(X) = x * sigmoid(x); kiln.HardSwish(X) = x * max(0, min(1, x / 6 + 0.5));
// kiln.Gelu(X) {approximate = "none" (erf, the default) | "tanh"}, as ONNX Gelu-20.
//
// kiln.FusedElementwise(X): a chain of float unary ops applied in order.
//   `ops` (strings): the op names in order of application.
//   `params` (floats): the ops' parameters, concatenated in the same order, a fixed count each:
//     0: "Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Sqrt", "Erf", "Silu", "HardSwish",
//        "Gelu" (erf form only; the tanh form is not a step)
//     1: "LeakyRelu" (alpha), "MulScalar" (c: y = x * c), "AddScalar" (c: y = x + c)
//     2: "Clip" (min, max), "HardSigmoid" (alpha, beta: y = max(0, min(1, alpha * x + beta)))
//   `params` may be absent when no op takes any. Sub by a constant becomes AddScalar(-c) and
//   Div by a power of two MulScalar(1/c): both are exact, so no SubScalar/DivScalar exists.
#include <array>
#include <limits>

#include "kernels/ref/elementwise.h"
#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

using ref::UnaryKind;

// One elementwise step: the name the `ops`/`activation` attribute uses and its parameter count.
struct StepDef {
  std::string_view name;
  int num_params;
};

constexpr std::array<StepDef, 16> kSteps = {{
    {"Relu", 0},
    {"Sigmoid", 0},
    {"Tanh", 0},
    {"Exp", 0},
    {"Neg", 0},
    {"Abs", 0},
    {"Sqrt", 0},
    {"Erf", 0},
    {"LeakyRelu", 1},
    {"HardSigmoid", 2},
    {"Clip", 2},
    {"Silu", 0},
    {"HardSwish", 0},
    {"Gelu", 0},
    {"MulScalar", 1},
    {"AddScalar", 1},
}};

// The activations a FusedConv/FusedGemm epilogue may apply (gemm::Activation's set).
constexpr std::array<std::string_view, 5> kActivations = {"Relu", "Clip", "Silu", "HardSwish",
                                                          "Gelu"};

const StepDef* FindStep(std::string_view name) {
  for (const StepDef& s : kSteps)
    if (s.name == name) return &s;
  return nullptr;
}

std::string StepNames() {
  std::string s;
  for (const StepDef& d : kSteps) s += StrCat(s.empty() ? "" : ", ", d.name);
  return s;
}

std::string ActivationNames() {
  std::string s;
  for (std::string_view a : kActivations) s += StrCat(s.empty() ? "" : ", ", a);
  return s;
}

// A step with its parameters, read and checked from the attributes.
struct Step {
  std::string_view name;
  float p0 = 0, p1 = 0;
};

Tensor ScalarLike(float v, DType t) {
  if (t == DType::kFloat64) return Tensor::Scalar<double>(v);
  return Tensor::Scalar<float>(v);
}

// y = step(x) for float32/float64 x, composed from the reference kernels the unfused ops run,
// so a fused graph gives the unfused graph's numbers.
Expected<Tensor> ApplyStep(const Step& s, const Tensor& x) {
  auto unary = [&](UnaryKind k, double alpha = 0, double beta = 0) {
    ref::UnaryParams p;
    p.alpha = alpha;
    p.beta = beta;
    return ref::Unary(k, p, x);
  };
  const std::string_view n = s.name;
  if (n == "Relu") return unary(UnaryKind::kRelu);
  if (n == "Sigmoid") return unary(UnaryKind::kSigmoid);
  if (n == "Tanh") return unary(UnaryKind::kTanh);
  if (n == "Exp") return unary(UnaryKind::kExp);
  if (n == "Neg") return unary(UnaryKind::kNeg);
  if (n == "Abs") return unary(UnaryKind::kAbs);
  if (n == "Sqrt") return unary(UnaryKind::kSqrt);
  if (n == "Erf") return unary(UnaryKind::kErf);
  if (n == "LeakyRelu") return unary(UnaryKind::kLeakyRelu, s.p0);
  if (n == "HardSigmoid") return unary(UnaryKind::kHardSigmoid, s.p0, s.p1);
  if (n == "HardSwish") return unary(UnaryKind::kHardSwish);
  if (n == "Gelu") return unary(UnaryKind::kGelu);
  // Only kiln.Gelu {approximate="tanh"} gets here: no epilogue or chain step has the tanh form.
  if (n == "GeluTanh") return unary(UnaryKind::kGeluTanh);
  if (n == "Clip") {
    const Tensor lo = ScalarLike(s.p0, x.dtype()), hi = ScalarLike(s.p1, x.dtype());
    return ref::Clip(x, &lo, &hi);
  }
  if (n == "Silu") {
    // Sigmoid, then a multiply in x's type: what Mul(x, Sigmoid(x)) computes.
    KILN_ASSIGN_OR_RETURN(Tensor sig, unary(UnaryKind::kSigmoid));
    return ref::Binary(ref::BinaryKind::kMul, x, sig);
  }
  if (n == "MulScalar") return ref::Binary(ref::BinaryKind::kMul, x, ScalarLike(s.p0, x.dtype()));
  if (n == "AddScalar") return ref::Binary(ref::BinaryKind::kAdd, x, ScalarLike(s.p0, x.dtype()));
  return Status::Error("unknown elementwise step '", n, "'");
}

// Float inputs only: the kernels these ops stand for are float kernels.
Status CheckFloatType(const ir::Node& node, size_t i) {
  const DType t = InputDType(node, i);
  if (t == DType::kUndefined || IsFloat(t)) return Status::Ok();
  return Status::Error(node.Where(), "input '", node.inputs[i]->name, "' is ", DTypeName(t),
                       "; the op takes float tensors");
}

Status CheckFloatTensor(const RunContext& ctx, size_t i) {
  const Tensor* t = ctx.input(i);
  if (t == nullptr) return ctx.Error("input ", i, " is missing");
  if (t->dtype() != DType::kFloat32 && t->dtype() != DType::kFloat64)
    return ctx.Error("input ", i, " is ", DTypeName(t->dtype()), "; the op takes float tensors");
  return Status::Ok();
}

// ---- FusedConv / FusedGemm ----

// `activation` and `activation_params` of a FusedConv/FusedGemm.
Expected<Step> ReadActivation(const ir::Node& node) {
  ir::AttrReader r(node);
  const std::string act = r.String("activation", "");
  const std::vector<float> params = r.Floats("activation_params");
  KILN_RETURN_IF_ERROR(r.status());
  if (!r.Has("activation"))
    return Status::Error(node.Where(), "attribute 'activation' is required (one of ",
                         ActivationNames(), ")");
  Step s;
  for (std::string_view a : kActivations)
    if (a == act) s.name = a;
  if (s.name.empty())
    return Status::Error(node.Where(), "unknown activation \"", act, "\" (expected one of ",
                         ActivationNames(), ")");
  const size_t want = s.name == "Clip" ? 2 : 0;
  if (params.size() != want)
    return Status::Error(node.Where(), "activation ", act, " takes ", want, " activation_params (",
                         want ? "[min, max]" : "none", "), got ", params.size());
  if (want) s.p0 = params[0], s.p1 = params[1];
  return s;
}

// The ONNX op whose shape inference and reference run a fused node extends.
Expected<const OpDef*> Base(const ir::Node& node, std::string_view op) {
  const OpDef* def = FindOp("", op);
  if (def == nullptr) return Status::Error(node.Where(), "the op table has no ", op);
  return def;
}

Status InferFusedConv(ir::Node& node) {
  KILN_RETURN_IF_ERROR(ReadActivation(node).status());
  if (!node.has_input(0) || !node.has_input(1))
    return Status::Error(node.Where(), "inputs X and W are required");
  KILN_RETURN_IF_ERROR(CheckFloatType(node, 0));
  const int64_t rank = InputRank(node, 0);
  if (rank >= 0 && rank != 4)
    return Status::Error(node.Where(), "FusedConv is 2-D only: X must be [N, C, H, W], got rank ",
                         rank);
  KILN_ASSIGN_OR_RETURN(const OpDef* conv, Base(node, "Conv"));
  return conv->infer(node);
}

// Runs the base op on the node (the extra attributes are not the base op's and are ignored by
// it), then the activation on its output.
Status RunFusedWith(RunContext& ctx, std::string_view base) {
  KILN_ASSIGN_OR_RETURN(Step act, ReadActivation(ctx.node));
  KILN_RETURN_IF_ERROR(CheckFloatTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const OpDef* def, Base(ctx.node, base));
  KILN_RETURN_IF_ERROR(def->run(ctx));
  auto y = ApplyStep(act, ctx.outputs[0]);
  if (!y.ok()) return y.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(*y);
  return Status::Ok();
}

Status RunFusedConv(RunContext& ctx) {
  if (ctx.input(0) && ctx.input(0)->rank() != 4)
    return ctx.Error("FusedConv is 2-D only: X must be [N, C, H, W], got ",
                     DescribeTensor(*ctx.input(0)));
  return RunFusedWith(ctx, "Conv");
}

Status InferFusedGemm(ir::Node& node) {
  KILN_RETURN_IF_ERROR(ReadActivation(node).status());
  KILN_RETURN_IF_ERROR(CheckFloatType(node, 0));
  KILN_ASSIGN_OR_RETURN(const OpDef* gemm, Base(node, "Gemm"));
  return gemm->infer(node);
}

Status RunFusedGemm(RunContext& ctx) { return RunFusedWith(ctx, "Gemm"); }

Status InferFusedBatchNorm(ir::Node& node) {
  KILN_RETURN_IF_ERROR(ReadActivation(node).status());
  KILN_RETURN_IF_ERROR(CheckFloatType(node, 0));
  ir::AttrReader r(node);
  const int64_t training = r.Int("training_mode", 0);
  KILN_RETURN_IF_ERROR(r.status());
  if (training != 0)
    return Status::Error(node.Where(), "FusedBatchNorm is inference only (training_mode 0)");
  if (node.outputs.size() != 1)
    return Status::Error(node.Where(), "FusedBatchNorm has one output, not ",
                         node.outputs.size());
  KILN_ASSIGN_OR_RETURN(const OpDef* bn, Base(node, "BatchNormalization"));
  return bn->infer(node);
}

Status RunFusedBatchNorm(RunContext& ctx) { return RunFusedWith(ctx, "BatchNormalization"); }

// ---- Silu, HardSwish, Gelu ----

Expected<Step> GeluStep(const ir::Node& node) {
  ir::AttrReader r(node);
  const std::string approximate = r.String("approximate", "none");
  KILN_RETURN_IF_ERROR(r.status());
  if (approximate == "none") return Step{"Gelu"};
  if (approximate == "tanh") return Step{"GeluTanh"};
  return Status::Error(node.Where(), "approximate must be \"none\" or \"tanh\", got \"",
                       approximate, "\"");
}

Status InferActivation(ir::Node& node) {
  KILN_RETURN_IF_ERROR(CheckFloatType(node, 0));
  if (node.op_type == "Gelu") KILN_RETURN_IF_ERROR(GeluStep(node).status());
  return InferSameAsInput0(node);
}

Status RunActivation(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckFloatTensor(ctx, 0));
  Step s{ctx.node.op_type == "Silu" ? "Silu" : "HardSwish"};
  if (ctx.node.op_type == "Gelu") {
    KILN_ASSIGN_OR_RETURN(s, GeluStep(ctx.node));
  }
  auto y = ApplyStep(s, *ctx.input(0));
  if (!y.ok()) return y.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(*y);
  return Status::Ok();
}

// ---- FusedElementwise ----

Expected<std::vector<Step>> ReadChain(const ir::Node& node) {
  ir::AttrReader r(node);
  const std::vector<std::string> ops = r.Strings("ops");
  const std::vector<float> params = r.Floats("params");
  KILN_RETURN_IF_ERROR(r.status());
  if (ops.empty())
    return Status::Error(node.Where(), "attribute 'ops' must list at least one op (of ",
                         StepNames(), ")");
  std::vector<Step> chain;
  size_t next = 0;
  for (const std::string& name : ops) {
    const StepDef* def = FindStep(name);
    if (def == nullptr)
      return Status::Error(node.Where(), "unknown op \"", name, "\" in 'ops' (expected one of ",
                           StepNames(), ")");
    Step s{def->name};
    if (next + def->num_params > params.size())
      return Status::Error(node.Where(), "'params' has ", params.size(),
                           " values, too few for 'ops' (", name, " takes ", def->num_params, ")");
    if (def->num_params > 0) s.p0 = params[next];
    if (def->num_params > 1) s.p1 = params[next + 1];
    next += def->num_params;
    chain.push_back(s);
  }
  if (next != params.size())
    return Status::Error(node.Where(), "'params' has ", params.size(), " values but 'ops' take ",
                         next);
  return chain;
}

Status InferFusedElementwise(ir::Node& node) {
  KILN_RETURN_IF_ERROR(CheckFloatType(node, 0));
  KILN_RETURN_IF_ERROR(ReadChain(node).status());
  return InferSameAsInput0(node);
}

Status RunFusedElementwise(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckFloatTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(std::vector<Step> chain, ReadChain(ctx.node));
  Tensor y = *ctx.input(0);
  for (const Step& s : chain) {
    auto next = ApplyStep(s, y);
    if (!next.ok()) return next.status().WithContext(ctx.node.Where());
    y = std::move(*next);
  }
  ctx.outputs[0] = std::move(y);
  return Status::Ok();
}

// float16/bfloat16 inputs are widened to float32 by the interpreter (promote_half).
constexpr OpDef kKilnOps[] = {
    {"kiln", "FusedConv", InferFusedConv, RunFusedConv, 1, true},
    {"kiln", "FusedGemm", InferFusedGemm, RunFusedGemm, 1, true},
    {"kiln", "FusedBatchNorm", InferFusedBatchNorm, RunFusedBatchNorm, 1, true},
    {"kiln", "Silu", InferActivation, RunActivation, 1, true},
    {"kiln", "HardSwish", InferActivation, RunActivation, 1, true},
    {"kiln", "Gelu", InferActivation, RunActivation, 1, true},
    {"kiln", "FusedElementwise", InferFusedElementwise, RunFusedElementwise, 1, true},
};

}  // namespace

std::span<const OpDef> KilnOps() { return kKilnOps; }

}  // namespace kiln::ops
