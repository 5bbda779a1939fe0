// Sequence and optional ops: SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceAt,
// SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence, SequenceMap, Optional,
// OptionalHasElement, OptionalGetElement. Sequences and optionals travel as Tensors of the
// pseudo types kSequence / kOptional (support/tensor.h); their items are shared, never copied,
// and every op builds a fresh container, so inputs stay immutable.
#include <algorithm>

#include "kernels/ref/movement.h"
#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

// ---- helpers ---------------------------------------------------------------------------------

Expected<const Tensor*> SequenceInput(RunContext& ctx, size_t i, const char* what) {
  KILN_ASSIGN_OR_RETURN(const Tensor* t, Input(ctx, i, what));
  if (!t->is_sequence())
    return ctx.Error(what, " must be a sequence, got ", DescribeTensor(*t));
  return t;
}

Expected<const Tensor*> TensorInput(RunContext& ctx, size_t i, const char* what) {
  KILN_ASSIGN_OR_RETURN(const Tensor* t, Input(ctx, i, what));
  if (IsContainer(t->dtype()))
    return ctx.Error(what, " must be a tensor, got ", DescribeTensor(*t));
  return t;
}

// A scalar (or one-element) int32/int64 input, such as a position or a split length.
Expected<int64_t> ScalarInt(RunContext& ctx, size_t i, const char* what) {
  KILN_ASSIGN_OR_RETURN(const Tensor* t, TensorInput(ctx, i, what));
  auto v = t->ToInt64Vector(what);
  if (!v.ok()) return ctx.Error(v.status().message());
  if (v->size() != 1) return ctx.Error(what, " must be a scalar, got ", DescribeTensor(*t));
  return (*v)[0];
}

// A position into a sequence of n items: [-n, n-1], or [-n, n] when inserting.
Expected<int64_t> Position(RunContext& ctx, size_t i, int64_t n, bool inserting) {
  KILN_ASSIGN_OR_RETURN(int64_t p, ScalarInt(ctx, i, "position"));
  const int64_t hi = inserting ? n : n - 1;
  if (p < -n || p > hi)
    return ctx.Error("position ", p, " is out of range [", -n, ", ", hi, "] for a sequence of ",
                     n, " items");
  return p < 0 ? p + n : p;
}

// Checks an item against the sequence's element type: a sequence holds values of one type.
Status CheckItemType(RunContext& ctx, const Tensor& seq, const Tensor& item) {
  DType want = seq.elem_dtype();
  if (want == DType::kUndefined && !seq.items().empty()) want = seq.items()[0].dtype();
  if (want != DType::kUndefined && item.dtype() != want)
    return ctx.Error("a sequence of ", DTypeName(want), " cannot take ", DescribeTensor(item));
  return Status::Ok();
}

DType ElemOf(const Tensor& seq) {
  if (seq.elem_dtype() != DType::kUndefined) return seq.elem_dtype();
  return seq.items().empty() ? DType::kUndefined : seq.items()[0].dtype();
}

// The type of input i, or an unknown type when it is absent.
ValueType InputType(const ir::Node& node, size_t i) {
  return node.has_input(i) ? node.inputs[i]->type : ValueType{};
}

// ---- SequenceEmpty, SequenceConstruct, SequenceLength ----------------------------------------

Expected<DType> EmptyDType(const ir::Node& node) {
  ir::AttrReader attrs(node);
  const int64_t dt = attrs.Int("dtype", static_cast<int64_t>(DType::kFloat32));
  KILN_RETURN_IF_ERROR(attrs.status());
  if (dt < 0 || dt > 1000 || !IsKnownDType(static_cast<int32_t>(dt)))
    return Status::Error(node.Where(), "unsupported dtype ", dt);
  return static_cast<DType>(dt);
}

Status InferSequenceEmpty(ir::Node& node) {
  KILN_ASSIGN_OR_RETURN(DType dt, EmptyDType(node));
  SetOutputType(node, 0, ValueType::Sequence(ValueType{dt, std::nullopt}));
  return Status::Ok();
}

Status RunSequenceEmpty(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(DType dt, EmptyDType(ctx.node));
  ctx.outputs[0] = Tensor::Sequence({}, dt);
  return Status::Ok();
}

Status InferSequenceConstruct(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInputs(node, node.inputs.size()));
  if (node.inputs.empty()) return Status::Error(node.Where(), "needs at least one input");
  // The item type: the inputs' element type, and their shape where all agree.
  ValueType item = node.inputs[0]->type;
  for (const ir::Value* v : node.inputs) {
    if (v->type.dtype != item.dtype) item.dtype = DType::kUndefined;
    if (!(v->type.shape == item.shape)) item.shape.reset();
  }
  SetOutputType(node, 0, ValueType::Sequence(std::move(item)));
  return Status::Ok();
}

Status RunSequenceConstruct(RunContext& ctx) {
  std::vector<Tensor> items;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(const Tensor* t, TensorInput(ctx, i, "inputs"));
    if (!items.empty() && t->dtype() != items[0].dtype())
      return ctx.Error("inputs must share one element type: ", DescribeTensor(items[0]), " and ",
                       DescribeTensor(*t));
    items.push_back(*t);
  }
  if (items.empty()) return ctx.Error("needs at least one input");
  const DType elem = items[0].dtype();
  ctx.outputs[0] = Tensor::Sequence(std::move(items), elem);
  return Status::Ok();
}

Status InferScalarInt64(ir::Node& node) {
  SetOutputType(node, 0, ValueType::Of(DType::kInt64, {}));
  return Status::Ok();
}

Status RunSequenceLength(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* seq, SequenceInput(ctx, 0, "input_sequence"));
  ctx.outputs[0] = Tensor::Scalar<int64_t>(static_cast<int64_t>(seq->items().size()));
  return Status::Ok();
}

// ---- SequenceInsert, SequenceAt, SequenceErase -----------------------------------------------

Status InferSameSequence(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "input_sequence"));
  SetOutputType(node, 0, node.inputs[0]->type);
  return Status::Ok();
}

Status InferSequenceInsert(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInputs(node, 2));
  ValueType out = node.inputs[0]->type;
  if (out.dtype == DType::kSequence && out.item().dtype == DType::kUndefined)
    out = ValueType::Sequence(ValueType{node.inputs[1]->type.dtype, std::nullopt});
  SetOutputType(node, 0, std::move(out));
  return Status::Ok();
}

Status RunSequenceInsert(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* seq, SequenceInput(ctx, 0, "input_sequence"));
  KILN_ASSIGN_OR_RETURN(const Tensor* t, TensorInput(ctx, 1, "tensor"));
  KILN_RETURN_IF_ERROR(CheckItemType(ctx, *seq, *t));
  std::vector<Tensor> items = seq->items();
  int64_t at = static_cast<int64_t>(items.size());
  if (ctx.input(2) != nullptr) {
    KILN_ASSIGN_OR_RETURN(at, Position(ctx, 2, static_cast<int64_t>(items.size()), true));
  }
  items.insert(items.begin() + at, *t);
  ctx.outputs[0] = Tensor::Sequence(std::move(items), t->dtype());
  return Status::Ok();
}

Status InferSequenceAt(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInputs(node, 2));
  SetOutputType(node, 0, node.inputs[0]->type.item());
  return Status::Ok();
}

Status RunSequenceAt(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* seq, SequenceInput(ctx, 0, "input_sequence"));
  const auto n = static_cast<int64_t>(seq->items().size());
  KILN_ASSIGN_OR_RETURN(int64_t at, Position(ctx, 1, n, false));
  ctx.outputs[0] = seq->items()[at];
  return Status::Ok();
}

Status RunSequenceErase(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* seq, SequenceInput(ctx, 0, "input_sequence"));
  std::vector<Tensor> items = seq->items();
  const auto n = static_cast<int64_t>(items.size());
  int64_t at = n - 1;
  if (ctx.input(1) != nullptr) {
    KILN_ASSIGN_OR_RETURN(at, Position(ctx, 1, n, false));
  } else if (n == 0) {
    return ctx.Error("cannot erase from an empty sequence");
  }
  items.erase(items.begin() + at);
  ctx.outputs[0] = Tensor::Sequence(std::move(items), ElemOf(*seq));
  return Status::Ok();
}

// ---- SplitToSequence, ConcatFromSequence -----------------------------------------------------

Status InferSplitToSequence(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "input"));
  SetOutputType(node, 0, ValueType::Sequence(ValueType{InputDType(node, 0), std::nullopt}));
  return Status::Ok();
}

Status RunSplitToSequence(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, TensorInput(ctx, 0, "input"));
  ir::AttrReader attrs(ctx.node);
  const int64_t axis_attr = attrs.Int("axis", 0);
  const bool keepdims = attrs.Int("keepdims", 1) != 0;
  KILN_RETURN_IF_ERROR(attrs.status());
  if (in->rank() == 0) return ctx.Error("input must have rank >= 1, got a scalar");
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.node, axis_attr, in->rank()));
  const int64_t d = in->dim(axis);
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (ctx.input(1) == nullptr) {  // pieces of length 1; keepdims=0 drops the axis
    sizes.assign(d, 1);
    squeeze = !keepdims;
  } else {
    KILN_ASSIGN_OR_RETURN(const Tensor* split, TensorInput(ctx, 1, "split"));
    auto v = split->ToInt64Vector("split");
    if (!v.ok()) return ctx.Error(v.status().message());
    if (split->rank() == 0) {  // pieces of this length, the last one shorter
      const int64_t len = (*v)[0];
      if (len <= 0) return ctx.Error("split must be positive, got ", len);
      for (int64_t done = 0; done < d; done += len) sizes.push_back(std::min(len, d - done));
    } else {
      int64_t sum = 0;
      for (int64_t s : *v) {
        if (s < 0 || s > d - sum)
          return ctx.Error("split ", DimsToString(*v), " does not sum to dim ", axis, " (", d,
                           ") of ", DescribeTensor(*in));
        sum += s;
      }
      if (sum != d)
        return ctx.Error("split ", DimsToString(*v), " does not sum to dim ", axis, " (", d,
                         ") of ", DescribeTensor(*in));
      sizes = *v;
    }
  }
  std::vector<Tensor> items;
  if (!sizes.empty()) {
    auto parts = ref::Split(*in, axis, sizes);
    if (!parts.ok()) return ctx.Error(parts.status().message());
    items = std::move(*parts);
  }
  if (squeeze)
    for (Tensor& t : items) {
      std::vector<int64_t> dims = t.dims();
      dims.erase(dims.begin() + axis);
      t = t.Reshaped(std::move(dims));
    }
  ctx.outputs[0] = Tensor::Sequence(std::move(items), in->dtype());
  return Status::Ok();
}

Status InferConcatFromSequence(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "input_sequence"));
  SetOutputType(node, 0, ValueType{node.inputs[0]->type.item().dtype, std::nullopt});
  return Status::Ok();
}

Status RunConcatFromSequence(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* seq, SequenceInput(ctx, 0, "input_sequence"));
  ir::AttrReader attrs(ctx.node);
  if (!attrs.Has("axis")) return ctx.Error("the 'axis' attribute is required");
  const int64_t axis_attr = attrs.Int("axis", 0);
  const bool new_axis = attrs.Int("new_axis", 0) != 0;
  KILN_RETURN_IF_ERROR(attrs.status());
  const auto& items = seq->items();
  if (items.empty()) return ctx.Error("cannot concatenate an empty sequence");
  for (const Tensor& t : items)
    if (IsContainer(t.dtype()))
      return ctx.Error("items must be tensors, got ", DescribeTensor(t));
  const int64_t rank = items[0].rank() + (new_axis ? 1 : 0);
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.node, axis_attr, rank));
  std::vector<Tensor> stacked;  // new_axis: each item with a 1 inserted at `axis`
  std::vector<const Tensor*> parts;
  if (new_axis) {
    for (const Tensor& t : items) {
      std::vector<int64_t> dims = t.dims();
      if (static_cast<int64_t>(dims.size()) + 1 != rank)
        return ctx.Error("items differ in rank: ", DescribeTensor(items[0]), " and ",
                         DescribeTensor(t));
      dims.insert(dims.begin() + axis, 1);
      stacked.push_back(t.Reshaped(std::move(dims)));
    }
    for (const Tensor& t : stacked) parts.push_back(&t);
  } else {
    for (const Tensor& t : items) parts.push_back(&t);
  }
  auto out = ref::Concat(parts, axis);
  if (!out.ok()) return ctx.Error(out.status().message());
  ctx.outputs[0] = std::move(*out);
  return Status::Ok();
}

// ---- Optional, OptionalHasElement, OptionalGetElement ----------------------------------------

Status InferOptional(ir::Node& node) {
  SetOutputType(node, 0, ValueType::Optional(InputType(node, 0)));
  return Status::Ok();
}

Status RunOptional(RunContext& ctx) {
  const Tensor* in = ctx.input(0);
  DType elem = in ? in->dtype() : DType::kUndefined;
  if (!in && ctx.node.has_output(0)) elem = ctx.node.outputs[0]->type.item().dtype;
  ctx.outputs[0] = Tensor::Optional(in, elem);
  return Status::Ok();
}

Status InferOptionalHasElement(ir::Node& node) {
  SetOutputType(node, 0, ValueType::Of(DType::kBool, {}));
  return Status::Ok();
}

Status RunOptionalHasElement(RunContext& ctx) {
  // Opset 18 also takes a tensor or sequence (always present) or no input at all (absent).
  const Tensor* in = ctx.input(0);
  const bool has = in != nullptr && (!in->is_optional() || !in->items().empty());
  ctx.outputs[0] = Tensor::Scalar<bool>(has);
  return Status::Ok();
}

Status InferOptionalGetElement(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "input"));
  const ValueType& in = node.inputs[0]->type;
  SetOutputType(node, 0, in.dtype == DType::kOptional ? in.item() : in);
  return Status::Ok();
}

Status RunOptionalGetElement(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "input"));
  if (!in->is_optional()) {  // opset 18: a tensor or sequence is returned as it is
    ctx.outputs[0] = *in;
    return Status::Ok();
  }
  if (in->items().empty()) return ctx.Error("the optional input is empty");
  ctx.outputs[0] = in->items()[0];
  return Status::Ok();
}

}  // namespace

std::span<const OpDef> SequenceOps() {
  static const std::vector<OpDef> table = [] {
    std::vector<OpDef> ops = {
        {"", "SequenceEmpty", InferSequenceEmpty, RunSequenceEmpty, 11},
        {"", "SequenceConstruct", InferSequenceConstruct, RunSequenceConstruct, 11},
        {"", "SequenceInsert", InferSequenceInsert, RunSequenceInsert, 11},
        {"", "SequenceAt", InferSequenceAt, RunSequenceAt, 11},
        {"", "SequenceErase", InferSameSequence, RunSequenceErase, 11},
        {"", "SequenceLength", InferScalarInt64, RunSequenceLength, 11},
        {"", "SplitToSequence", InferSplitToSequence, RunSplitToSequence, 11},
        {"", "ConcatFromSequence", InferConcatFromSequence, RunConcatFromSequence, 11},
        {"", "Optional", InferOptional, RunOptional, 15},
        {"", "OptionalHasElement", InferOptionalHasElement, RunOptionalHasElement, 15},
        {"", "OptionalGetElement", InferOptionalGetElement, RunOptionalGetElement, 15},
    };
    for (const OpDef& d : SequenceMapOps()) ops.push_back(d);
    return ops;
  }();
  return table;
}

}  // namespace kiln::ops
