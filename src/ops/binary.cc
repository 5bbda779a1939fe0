// Binary and variadic elementwise ops: arithmetic, Pow, Mod, bit ops, comparisons, logic, Where,
// PRelu, Max/Min/Sum/Mean. Numpy broadcasting everywhere (PRelu's slope broadcasts to X only).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "kernels/ref/elementwise.h"
#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

using ref::BinaryKind;
using ref::CompareKind;
using ref::LogicKind;
using ref::VariadicKind;

// Element type classes an input may belong to.
enum TypeSet : unsigned {
  kFloats = 1,
  kSignedInts = 2,
  kUnsignedInts = 4,
  kBools = 8,
  kStrings = 16,
  kInts = kSignedInts | kUnsignedInts,
  kNumbers = kFloats | kInts,
  kAnyType = kNumbers | kBools | kStrings,
};

bool InSet(DType t, unsigned set) {
  if (IsFloat(t)) return set & kFloats;
  if (IsInteger(t)) return set & (IsSigned(t) ? kSignedInts : kUnsignedInts);
  if (t == DType::kBool) return set & kBools;
  if (t == DType::kString) return set & kStrings;
  return false;
}

std::string SetName(unsigned set) {
  std::string s;
  auto add = [&](unsigned bits, const char* name) {
    if ((set & bits) == bits) s += StrCat(s.empty() ? "" : " or ", name);
  };
  add(kFloats, "float");
  if ((set & kInts) == kInts)
    add(kInts, "integer");
  else
    add(kUnsignedInts, "unsigned integer");
  add(kBools, "bool");
  add(kStrings, "string");
  return s;
}

// Checks the known element types of inputs [first, last): each in `set`, and all equal when
// `same` (the usual rule: A and B share the type T).
Status CheckTypes(const ir::Node& node, size_t first, size_t last, unsigned set, bool same) {
  const ir::Value* seen = nullptr;
  for (size_t i = first; i < last && i < node.inputs.size(); ++i) {
    const ir::Value* v = node.inputs[i];
    if (v == nullptr || v->type.dtype == DType::kUndefined) continue;
    if (!InSet(v->type.dtype, set))
      return Status::Error(node.Where(), "input '", v->name, "' is ", DTypeName(v->type.dtype),
                           "; the op takes ", SetName(set), " tensors");
    if (same && seen != nullptr && seen->type.dtype != v->type.dtype)
      return Status::Error(node.Where(), "inputs '", seen->name, "' (", DTypeName(seen->type.dtype),
                           ") and '", v->name, "' (", DTypeName(v->type.dtype),
                           ") must have the same type");
    if (seen == nullptr) seen = v;
  }
  return Status::Ok();
}

Status CheckInputCount(const ir::Node& node, size_t min, size_t max) {
  size_t n = node.inputs.size();
  if (n < min || n > max)
    return Status::Error(node.Where(), "takes ",
                         min == max ? StrCat(min) : StrCat(min, " to ", max), " inputs, got ", n);
  for (size_t i = 0; i < n; ++i)
    if (node.inputs[i] == nullptr) return Status::Error(node.Where(), "input ", i, " is missing");
  return Status::Ok();
}

// Output 0: `dtype` (input `dtype_from`'s type when kUndefined) with the broadcast shape.
Status InferBroadcast(ir::Node& node, size_t dtype_from, DType dtype = DType::kUndefined) {
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<Dim>> shape, BroadcastShapes(node));
  ValueType t;
  t.dtype = dtype != DType::kUndefined ? dtype : node.inputs[dtype_from]->type.dtype;
  t.shape = std::move(shape);
  SetOutputType(node, 0, std::move(t));
  return Status::Ok();
}

// Stores a kernel result as output 0, or returns its error prefixed with the node.
Status Emit(RunContext& ctx, Expected<Tensor> result) {
  if (!result.ok()) return result.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(*result);
  return Status::Ok();
}

Status CheckRunInputs(const RunContext& ctx, size_t count) {
  if (ctx.num_inputs() < count)
    return ctx.Error("takes ", count, " inputs, got ", ctx.num_inputs());
  for (size_t i = 0; i < count; ++i)
    if (ctx.input(i) == nullptr) return ctx.Error("input ", i, " is missing");
  return Status::Ok();
}

// Opset < 7 broadcasting: with broadcast = 1, B broadcasts to A (so the output has A's shape),
// its dims aligned at `axis` instead of at the end. Later opsets use numpy rules only.
bool IsLegacyBroadcast(const ir::Node& node) {
  if (node.opset >= 7) return false;
  ir::AttrReader r(node);
  return r.Int("broadcast", 0) == 1;
}

// B viewed with trailing 1s so that numpy broadcasting aligns it with A at the legacy `axis`.
Expected<Tensor> AlignLegacyB(const RunContext& ctx, const Tensor& a, const Tensor& b) {
  if (!IsLegacyBroadcast(ctx.node)) return b;
  ir::AttrReader r(ctx.node);
  if (!r.Has("axis")) return b;
  int64_t axis = r.Int("axis", 0);
  KILN_RETURN_IF_ERROR(r.status());
  if (axis < 0) axis += a.rank();
  if (axis < 0 || axis + b.rank() > a.rank())
    return ctx.Error("B ", DescribeTensor(b), " does not fit in A ", DescribeTensor(a), " at axis ",
                     r.Int("axis", 0));
  std::vector<int64_t> dims = b.dims();
  dims.resize(static_cast<size_t>(a.rank() - axis), 1);
  return b.Reshaped(std::move(dims));
}

// Output 0 of a two-input op: A's shape under legacy broadcasting, the numpy broadcast otherwise.
Status InferTwoInputs(ir::Node& node, DType dtype = DType::kUndefined) {
  if (!IsLegacyBroadcast(node)) return InferBroadcast(node, 0, dtype);
  ValueType t = node.inputs[0]->type;
  if (dtype != DType::kUndefined) t.dtype = dtype;
  SetOutputType(node, 0, std::move(t));
  return Status::Ok();
}

// --- Arithmetic, bit ops, PRelu --------------------------------------------------------------

template <unsigned Set>
Status InferArith(ir::Node& node) {
  KILN_RETURN_IF_ERROR(CheckInputCount(node, 2, 2));
  KILN_RETURN_IF_ERROR(CheckTypes(node, 0, 2, Set, true));
  return InferTwoInputs(node);
}

template <BinaryKind K>
Status RunBinary(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckRunInputs(ctx, 2));
  KILN_ASSIGN_OR_RETURN(Tensor b, AlignLegacyB(ctx, *ctx.input(0), *ctx.input(1)));
  return Emit(ctx, ref::Binary(K, *ctx.input(0), b));
}

// Mod: fmod = 0 follows Python's sign rule, fmod = 1 C's fmod. ONNX asks for fmod = 1 on floats;
// kiln also gives fmod = 0 its Python meaning there rather than refusing it.
Expected<BinaryKind> ModKind(const ir::Node& node) {
  ir::AttrReader r(node);
  const int64_t fmod = r.Int("fmod", 0);
  KILN_RETURN_IF_ERROR(r.status());
  if (fmod != 0 && fmod != 1) return Status::Error(node.Where(), "fmod must be 0 or 1, got ", fmod);
  return fmod == 1 ? BinaryKind::kFmod : BinaryKind::kMod;
}

Status InferMod(ir::Node& node) {
  KILN_RETURN_IF_ERROR(ModKind(node).status());
  return InferArith<kNumbers>(node);
}

Status RunMod(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckRunInputs(ctx, 2));
  KILN_ASSIGN_OR_RETURN(BinaryKind kind, ModKind(ctx.node));
  return Emit(ctx, ref::Binary(kind, *ctx.input(0), *ctx.input(1)));
}

Expected<BinaryKind> ShiftKind(const ir::Node& node) {
  ir::AttrReader r(node);
  const std::string direction = r.String("direction", "");
  KILN_RETURN_IF_ERROR(r.status());
  if (direction == "LEFT") return BinaryKind::kBitShiftLeft;
  if (direction == "RIGHT") return BinaryKind::kBitShiftRight;
  return Status::Error(node.Where(), "direction must be \"LEFT\" or \"RIGHT\", got \"", direction,
                       "\"");
}

Status InferBitShift(ir::Node& node) {
  KILN_RETURN_IF_ERROR(ShiftKind(node).status());
  // ONNX lists unsigned types; signed ones (arithmetic right shift) come in later opsets and
  // cost nothing to accept earlier.
  return InferArith<kInts>(node);
}

Status RunBitShift(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckRunInputs(ctx, 2));
  KILN_ASSIGN_OR_RETURN(BinaryKind kind, ShiftKind(ctx.node));
  return Emit(ctx, ref::Binary(kind, *ctx.input(0), *ctx.input(1)));
}

// PRelu: slope broadcasts to X (unidirectionally), so the output has X's shape.
Status InferPRelu(ir::Node& node) {
  KILN_RETURN_IF_ERROR(CheckInputCount(node, 2, 2));
  KILN_RETURN_IF_ERROR(CheckTypes(node, 0, 2, kNumbers, true));
  // Before opset 7 a 1-D slope runs along the channel axis, which numpy rules do not express.
  if (node.opset >= 7) KILN_RETURN_IF_ERROR(BroadcastShapes(node).status());
  return InferSameAsInput0(node);
}

Status RunPRelu(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckRunInputs(ctx, 2));
  const Tensor& x = *ctx.input(0);
  Tensor slope = *ctx.input(1);
  if (ctx.node.opset < 7 && slope.rank() == 1 && x.rank() >= 2 && slope.numel() == x.dim(1)) {
    std::vector<int64_t> dims(static_cast<size_t>(x.rank() - 1), 1);
    dims[0] = slope.numel();
    slope = slope.Reshaped(std::move(dims));  // [C] -> [C, 1, ..., 1]
  }
  Expected<Tensor> y = ref::Binary(BinaryKind::kPRelu, x, slope);
  if (y.ok() && y->dims() != x.dims())
    return ctx.Error("slope ", DescribeTensor(slope), " does not broadcast to X ",
                     DescribeTensor(x));
  return Emit(ctx, std::move(y));
}

// --- Pow -------------------------------------------------------------------------------------

Status InferPow(ir::Node& node) {
  KILN_RETURN_IF_ERROR(CheckInputCount(node, 2, 2));
  KILN_RETURN_IF_ERROR(CheckTypes(node, 0, 2, kNumbers, false));
  return InferTwoInputs(node);
}

// Base and exponent types differ freely, so the interpreter's half widening (which narrows every
// float32 output) would be wrong for a float32 base with a float16 exponent. Pow widens its own
// 16-bit inputs and narrows the result back to the base's type.
Status RunPow(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckRunInputs(ctx, 2));
  Tensor operands[2];
  KILN_ASSIGN_OR_RETURN(Tensor exponent, AlignLegacyB(ctx, *ctx.input(0), *ctx.input(1)));
  for (size_t i = 0; i < 2; ++i) {
    const Tensor& t = i == 0 ? *ctx.input(0) : exponent;
    if (t.dtype() == DType::kFloat16 || t.dtype() == DType::kBFloat16) {
      KILN_ASSIGN_OR_RETURN(operands[i], ref::Cast(t, DType::kFloat32));
    } else {
      operands[i] = t;
    }
  }
  Expected<Tensor> y = ref::Pow(operands[0], operands[1]);
  const DType base_type = ctx.input(0)->dtype();
  if (y.ok() && y->dtype() != base_type) y = ref::Cast(*y, base_type);
  return Emit(ctx, std::move(y));
}

// --- Comparisons and logic -------------------------------------------------------------------

template <unsigned Set>
Status InferCompare(ir::Node& node) {
  KILN_RETURN_IF_ERROR(CheckInputCount(node, 2, 2));
  KILN_RETURN_IF_ERROR(CheckTypes(node, 0, 2, Set, true));
  return InferTwoInputs(node, DType::kBool);
}

template <CompareKind K>
Status RunCompare(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckRunInputs(ctx, 2));
  KILN_ASSIGN_OR_RETURN(Tensor b, AlignLegacyB(ctx, *ctx.input(0), *ctx.input(1)));
  return Emit(ctx, ref::Compare(K, *ctx.input(0), b));
}

template <LogicKind K>
Status RunLogic(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckRunInputs(ctx, 2));
  KILN_ASSIGN_OR_RETURN(Tensor b, AlignLegacyB(ctx, *ctx.input(0), *ctx.input(1)));
  return Emit(ctx, ref::Logic(K, *ctx.input(0), b));
}

// --- Where -----------------------------------------------------------------------------------

Status InferWhere(ir::Node& node) {
  KILN_RETURN_IF_ERROR(CheckInputCount(node, 3, 3));
  KILN_RETURN_IF_ERROR(CheckTypes(node, 0, 1, kBools, false));
  KILN_RETURN_IF_ERROR(CheckTypes(node, 1, 3, kAnyType, true));
  const size_t typed = node.inputs[1]->type.dtype != DType::kUndefined ? 1 : 2;
  return InferBroadcast(node, typed);
}

Status RunWhere(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckRunInputs(ctx, 3));
  return Emit(ctx, ref::Where(*ctx.input(0), *ctx.input(1), *ctx.input(2)));
}

// --- Variadic --------------------------------------------------------------------------------

template <unsigned Set>
Status InferVariadic(ir::Node& node) {
  // ONNX allows up to 2^31 - 1 inputs; the limit only needs to exclude zero.
  KILN_RETURN_IF_ERROR(CheckInputCount(node, 1, std::max<size_t>(1, node.inputs.size())));
  KILN_RETURN_IF_ERROR(CheckTypes(node, 0, node.inputs.size(), Set, true));
  return InferBroadcast(node, 0);
}

template <VariadicKind K>
Status RunVariadic(RunContext& ctx) {
  return Emit(ctx, ref::Variadic(K, ctx.inputs));
}

// Arithmetic on float16/bfloat16 runs in float32 (promote_half); ops that select or move values
// (Where) see the 16-bit types directly.
constexpr OpDef kBinaryOps[] = {
    {"", "Add", InferArith<kNumbers>, RunBinary<BinaryKind::kAdd>, 7, true},
    {"", "Sub", InferArith<kNumbers>, RunBinary<BinaryKind::kSub>, 7, true},
    {"", "Mul", InferArith<kNumbers>, RunBinary<BinaryKind::kMul>, 7, true},
    {"", "Div", InferArith<kNumbers>, RunBinary<BinaryKind::kDiv>, 7, true},
    {"", "Mod", InferMod, RunMod, 10, true},
    {"", "Pow", InferPow, RunPow, 7, false},
    {"", "BitShift", InferBitShift, RunBitShift, 11, false},
    {"", "BitwiseAnd", InferArith<kInts>, RunBinary<BinaryKind::kBitwiseAnd>, 18, false},
    {"", "BitwiseOr", InferArith<kInts>, RunBinary<BinaryKind::kBitwiseOr>, 18, false},
    {"", "BitwiseXor", InferArith<kInts>, RunBinary<BinaryKind::kBitwiseXor>, 18, false},
    {"", "PRelu", InferPRelu, RunPRelu, 7, true},
    {"", "Equal", InferCompare<kAnyType>, RunCompare<CompareKind::kEqual>, 7, true},
    {"", "Less", InferCompare<kNumbers>, RunCompare<CompareKind::kLess>, 7, true},
    {"", "Greater", InferCompare<kNumbers>, RunCompare<CompareKind::kGreater>, 7, true},
    {"", "LessOrEqual", InferCompare<kNumbers>, RunCompare<CompareKind::kLessOrEqual>, 12, true},
    {"", "GreaterOrEqual", InferCompare<kNumbers>, RunCompare<CompareKind::kGreaterOrEqual>, 12,
     true},
    {"", "And", InferCompare<kBools>, RunLogic<LogicKind::kAnd>, 7, false},
    {"", "Or", InferCompare<kBools>, RunLogic<LogicKind::kOr>, 7, false},
    {"", "Xor", InferCompare<kBools>, RunLogic<LogicKind::kXor>, 7, false},
    {"", "Where", InferWhere, RunWhere, 9, false},
    {"", "Max", InferVariadic<kNumbers>, RunVariadic<VariadicKind::kMax>, 6, true},
    {"", "Min", InferVariadic<kNumbers>, RunVariadic<VariadicKind::kMin>, 6, true},
    {"", "Sum", InferVariadic<kFloats>, RunVariadic<VariadicKind::kSum>, 6, true},
    {"", "Mean", InferVariadic<kFloats>, RunVariadic<VariadicKind::kMean>, 6, true},
};

}  // namespace

std::span<const OpDef> BinaryOps() { return kBinaryOps; }

}  // namespace kiln::ops
