// Unary ops: math, activations, float predicates, Not/BitwiseNot, Cast, CastLike, Clip.
// Attributes are read with their ONNX defaults; the computation is in kernels/ref/elementwise.
#include <limits>

#include "kernels/ref/elementwise.h"
#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

using ref::UnaryKind;

// Element type classes an input may belong to.
enum TypeSet : unsigned { kFloats = 1, kInts = 2, kBools = 4, kStrings = 8 };

bool InSet(DType t, unsigned set) {
  if (IsFloat(t)) return set & kFloats;
  if (IsInteger(t)) return set & kInts;
  if (t == DType::kBool) return set & kBools;
  if (t == DType::kString) return set & kStrings;
  return false;
}

std::string SetName(unsigned set) {
  std::string s;
  auto add = [&](unsigned bit, const char* name) {
    if (set & bit) s += StrCat(s.empty() ? "" : " or ", name);
  };
  add(kFloats, "float");
  add(kInts, "integer");
  add(kBools, "bool");
  add(kStrings, "string");
  return s;
}

// Checks input i's element type when it is known; unknown types are left to run time.
Status CheckType(const ir::Node& node, size_t i, unsigned set) {
  if (!node.has_input(i)) return Status::Ok();
  const DType t = node.inputs[i]->type.dtype;
  if (t == DType::kUndefined || InSet(t, set)) return Status::Ok();
  return Status::Error(node.Where(), "input '", node.inputs[i]->name, "' is ", DTypeName(t),
                       "; the op takes ", SetName(set), " tensors");
}

// The same check on a runtime tensor (float16/bfloat16 arrive widened to float32).
Status CheckTensor(const RunContext& ctx, size_t i, unsigned set) {
  const Tensor* t = ctx.input(i);
  if (t == nullptr) return ctx.Error("input ", i, " is missing");
  if (!InSet(t->dtype(), set))
    return ctx.Error("input ", i, " is ", DTypeName(t->dtype()), "; the op takes ", SetName(set),
                     " tensors");
  return Status::Ok();
}

// Stores a kernel result as output 0, or returns its error prefixed with the node.
Status Emit(RunContext& ctx, Expected<Tensor> result) {
  if (!result.ok()) return result.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(*result);
  return Status::Ok();
}

// Attributes of the parameterized activations, with their ONNX defaults.
Expected<ref::UnaryParams> ReadParams(UnaryKind kind, const ir::Node& node) {
  ir::AttrReader r(node);
  ref::UnaryParams p;
  switch (kind) {
    case UnaryKind::kLeakyRelu:
      p.alpha = r.Float("alpha", 0.01f);
      break;
    case UnaryKind::kElu:
      p.alpha = r.Float("alpha", 1.0f);
      break;
    case UnaryKind::kCelu: {
      p.alpha = r.Float("alpha", 1.0f);
      if (p.alpha == 0) return Status::Error(node.Where(), "Celu alpha must not be 0");
      break;
    }
    case UnaryKind::kThresholdedRelu:
      p.alpha = r.Float("alpha", 1.0f);
      break;
    case UnaryKind::kSelu:
      p.alpha = r.Float("alpha", 1.67326319217681884765625f);
      p.gamma = r.Float("gamma", 1.05070102214813232421875f);
      break;
    case UnaryKind::kHardSigmoid:
      p.alpha = r.Float("alpha", 0.2f);
      p.beta = r.Float("beta", 0.5f);
      break;
    case UnaryKind::kShrink:
      p.alpha = r.Float("lambd", 0.5f);
      p.beta = r.Float("bias", 0.0f);
      break;
    default:
      break;
  }
  KILN_RETURN_IF_ERROR(r.status());
  return p;
}

unsigned UnaryTypes(UnaryKind kind) {
  return ref::UnaryAcceptsIntegers(kind) ? (kFloats | kInts) : kFloats;
}

template <UnaryKind K>
Status InferUnary(ir::Node& node) {
  KILN_RETURN_IF_ERROR(CheckType(node, 0, UnaryTypes(K)));
  KILN_RETURN_IF_ERROR(ReadParams(K, node).status());
  return InferSameAsInput0(node);
}

template <UnaryKind K>
Status RunUnary(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckTensor(ctx, 0, UnaryTypes(K)));
  KILN_ASSIGN_OR_RETURN(ref::UnaryParams params, ReadParams(K, ctx.node));
  return Emit(ctx, ref::Unary(K, params, *ctx.input(0)));
}

// Gelu (opset 20): approximate = "none" (erf) or "tanh".
Expected<UnaryKind> GeluKind(const ir::Node& node) {
  ir::AttrReader r(node);
  const std::string approximate = r.String("approximate", "none");
  KILN_RETURN_IF_ERROR(r.status());
  if (approximate == "none") return UnaryKind::kGelu;
  if (approximate == "tanh") return UnaryKind::kGeluTanh;
  return Status::Error(node.Where(), "approximate must be \"none\" or \"tanh\", got \"",
                       approximate, "\"");
}

Status InferGelu(ir::Node& node) {
  KILN_RETURN_IF_ERROR(CheckType(node, 0, kFloats));
  KILN_RETURN_IF_ERROR(GeluKind(node).status());
  return InferSameAsInput0(node);
}

Status RunGelu(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckTensor(ctx, 0, kFloats));
  KILN_ASSIGN_OR_RETURN(UnaryKind kind, GeluKind(ctx.node));
  return Emit(ctx, ref::Unary(kind, {}, *ctx.input(0)));
}

// Ops whose output is bool with the input's shape.
template <unsigned Set>
Status InferToBool(ir::Node& node) {
  KILN_RETURN_IF_ERROR(CheckType(node, 0, Set));
  KILN_RETURN_IF_ERROR(InferSameAsInput0(node));
  if (node.has_output(0)) node.outputs[0]->type.dtype = DType::kBool;
  return Status::Ok();
}

template <unsigned Set>
Status InferSameTyped(ir::Node& node) {
  KILN_RETURN_IF_ERROR(CheckType(node, 0, Set));
  return InferSameAsInput0(node);
}

Status RunIsNaN(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckTensor(ctx, 0, kFloats));
  return Emit(ctx, ref::IsNaN(*ctx.input(0)));
}

Status RunIsInf(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckTensor(ctx, 0, kFloats));
  ir::AttrReader r(ctx.node);
  const bool positive = r.Int("detect_positive", 1) != 0;
  const bool negative = r.Int("detect_negative", 1) != 0;
  KILN_RETURN_IF_ERROR(r.status());
  return Emit(ctx, ref::IsInf(*ctx.input(0), positive, negative));
}

Status RunNot(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckTensor(ctx, 0, kBools));
  return Emit(ctx, ref::Not(*ctx.input(0)));
}

Status RunBitwiseNot(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckTensor(ctx, 0, kInts));
  return Emit(ctx, ref::BitwiseNot(*ctx.input(0)));
}

constexpr unsigned kCastable = kFloats | kInts | kBools | kStrings;

// Cast's `to`: a type kiln knows (float8 and int4 are not among them).
Expected<DType> CastTarget(const ir::Node& node) {
  ir::AttrReader r(node);
  const int64_t to = r.Int("to", 0);
  KILN_RETURN_IF_ERROR(r.status());
  if (!node.attr("to")) return Status::Error(node.Where(), "attribute 'to' is required");
  if (to < 0 || to > std::numeric_limits<int32_t>::max() ||
      !IsKnownDType(static_cast<int32_t>(to)) || to == 0)
    return Status::Error(node.Where(), "cast to element type ", to, " is not supported");
  return static_cast<DType>(to);
}

Status InferCast(ir::Node& node) {
  KILN_RETURN_IF_ERROR(CheckType(node, 0, kCastable));
  KILN_ASSIGN_OR_RETURN(DType to, CastTarget(node));
  KILN_RETURN_IF_ERROR(InferSameAsInput0(node));
  if (node.has_output(0)) node.outputs[0]->type.dtype = to;
  return Status::Ok();
}

Status RunCast(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckTensor(ctx, 0, kCastable));
  KILN_ASSIGN_OR_RETURN(DType to, CastTarget(ctx.node));
  return Emit(ctx, ref::Cast(*ctx.input(0), to));
}

Status InferCastLike(ir::Node& node) {
  KILN_RETURN_IF_ERROR(CheckType(node, 0, kCastable));
  KILN_RETURN_IF_ERROR(CheckType(node, 1, kCastable));
  if (!node.has_input(1)) return Status::Error(node.Where(), "input 1 (target_type) is missing");
  KILN_RETURN_IF_ERROR(InferSameAsInput0(node));
  if (node.has_output(0)) node.outputs[0]->type.dtype = node.inputs[1]->type.dtype;
  return Status::Ok();
}

Status RunCastLike(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckTensor(ctx, 0, kCastable));
  KILN_RETURN_IF_ERROR(CheckTensor(ctx, 1, kCastable));
  return Emit(ctx, ref::Cast(*ctx.input(0), ctx.input(1)->dtype()));
}

Status InferClip(ir::Node& node) {
  KILN_RETURN_IF_ERROR(CheckType(node, 0, kFloats | kInts));
  for (size_t i = 1; i < 3; ++i) {
    if (!node.has_input(i) || !node.has_input(0)) continue;
    const DType x = node.inputs[0]->type.dtype, b = node.inputs[i]->type.dtype;
    if (x != DType::kUndefined && b != DType::kUndefined && x != b)
      return Status::Error(node.Where(), "bound '", node.inputs[i]->name, "' is ", DTypeName(b),
                           " but the input is ", DTypeName(x));
  }
  return InferSameAsInput0(node);
}

Status RunClip(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckTensor(ctx, 0, kFloats | kInts));
  const Tensor& x = *ctx.input(0);
  const Tensor* min = ctx.input(1);
  const Tensor* max = ctx.input(2);
  // Opset < 11 keeps the bounds in float attributes; the frontend normally turns them into
  // inputs, but a graph built without it still gets the old meaning.
  Tensor min_attr, max_attr;
  ir::AttrReader r(ctx.node);
  if (min == nullptr && r.Has("min")) {
    KILN_ASSIGN_OR_RETURN(min_attr, ref::Cast(Tensor::Scalar(r.Float("min", 0)), x.dtype()));
    min = &min_attr;
  }
  if (max == nullptr && r.Has("max")) {
    KILN_ASSIGN_OR_RETURN(max_attr, ref::Cast(Tensor::Scalar(r.Float("max", 0)), x.dtype()));
    max = &max_attr;
  }
  KILN_RETURN_IF_ERROR(r.status());
  return Emit(ctx, ref::Clip(x, min, max));
}

// Float math: float16/bfloat16 are widened to float32 by the interpreter (promote_half).
#define KILN_UNARY(name, kind, since) \
  { "", name, InferUnary<UnaryKind::kind>, RunUnary<UnaryKind::kind>, since, true }

constexpr OpDef kUnaryOps[] = {
    KILN_UNARY("Abs", kAbs, 6),
    KILN_UNARY("Neg", kNeg, 6),
    KILN_UNARY("Sign", kSign, 9),
    KILN_UNARY("Relu", kRelu, 6),
    KILN_UNARY("Floor", kFloor, 6),
    KILN_UNARY("Ceil", kCeil, 6),
    KILN_UNARY("Round", kRound, 11),
    KILN_UNARY("Sqrt", kSqrt, 6),
    KILN_UNARY("Reciprocal", kReciprocal, 6),
    KILN_UNARY("Exp", kExp, 6),
    KILN_UNARY("Log", kLog, 6),
    KILN_UNARY("Erf", kErf, 9),
    KILN_UNARY("Sin", kSin, 7),
    KILN_UNARY("Cos", kCos, 7),
    KILN_UNARY("Tan", kTan, 7),
    KILN_UNARY("Asin", kAsin, 7),
    KILN_UNARY("Acos", kAcos, 7),
    KILN_UNARY("Atan", kAtan, 7),
    KILN_UNARY("Sinh", kSinh, 9),
    KILN_UNARY("Cosh", kCosh, 9),
    KILN_UNARY("Asinh", kAsinh, 9),
    KILN_UNARY("Acosh", kAcosh, 9),
    KILN_UNARY("Atanh", kAtanh, 9),
    KILN_UNARY("LeakyRelu", kLeakyRelu, 6),
    KILN_UNARY("Elu", kElu, 6),
    KILN_UNARY("Selu", kSelu, 6),
    KILN_UNARY("Celu", kCelu, 12),
    KILN_UNARY("Sigmoid", kSigmoid, 6),
    KILN_UNARY("HardSigmoid", kHardSigmoid, 6),
    KILN_UNARY("HardSwish", kHardSwish, 14),
    KILN_UNARY("Tanh", kTanh, 6),
    KILN_UNARY("Softplus", kSoftplus, 1),
    KILN_UNARY("Softsign", kSoftsign, 1),
    KILN_UNARY("ThresholdedRelu", kThresholdedRelu, 10),
    KILN_UNARY("Shrink", kShrink, 9),
    KILN_UNARY("Mish", kMish, 18),
    {"", "Gelu", InferGelu, RunGelu, 20, true},
    {"", "IsNaN", InferToBool<kFloats>, RunIsNaN, 9, true},
    {"", "IsInf", InferToBool<kFloats>, RunIsInf, 10, true},
    {"", "Not", InferSameTyped<kBools>, RunNot, 1, false},
    {"", "BitwiseNot", InferSameTyped<kInts>, RunBitwiseNot, 18, false},
    // Cast and CastLike convert 16-bit floats themselves: widening first would change nothing
    // for most targets but would round twice for float16 -> bfloat16.
    {"", "Cast", InferCast, RunCast, 6, false},
    {"", "CastLike", InferCastLike, RunCastLike, 15, false},
    {"", "Clip", InferClip, RunClip, 6, true},
};

#undef KILN_UNARY

}  // namespace

std::span<const OpDef> UnaryOps() { return kUnaryOps; }

}  // namespace kiln::ops
