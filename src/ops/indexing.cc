// Indexing ops: Gather, GatherElements, GatherND, Scatter (the deprecated alias of
// ScatterElements), ScatterElements, ScatterND, OneHot, NonZero, Unique. Index values are checked
// against the data they address at run time; a bad index is an error naming it.
#include "kernels/ref/indexing.h"

#include <cmath>
#include <optional>

#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

using Dims = std::vector<Dim>;

// Index inputs must be int32 or int64 (undefined while the type is still unknown).
Status CheckIndexInput(const ir::Node& node, size_t i) {
  const DType t = InputDType(node, i);
  if (t != DType::kUndefined && t != DType::kInt32 && t != DType::kInt64)
    return Status::Error(node.Where(), "indices '", node.inputs[i]->name,
                         "' must be int32 or int64, got ", DTypeName(t));
  return Status::Ok();
}

Status SetOutput(RunContext& ctx, Expected<Tensor> r) {
  if (!r.ok()) return r.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(*r);
  return Status::Ok();
}

Expected<int64_t> AxisAttr(const ir::Node& node, int64_t def, int64_t rank) {
  ir::AttrReader attrs(node);
  const int64_t axis = attrs.Int("axis", def);
  KILN_RETURN_IF_ERROR(attrs.status());
  return NormalizeAxis(node, axis, rank);
}

Expected<ref::Reduction> ReductionAttr(const ir::Node& node) {
  ir::AttrReader attrs(node);
  const std::string r = attrs.String("reduction", "none");
  KILN_RETURN_IF_ERROR(attrs.status());
  auto parsed = ref::ParseReduction(r);
  if (!parsed.ok()) return parsed.status().WithContext(node.Where());
  return parsed;
}

// ---- Gather family ---------------------------------------------------------------------------

Status InferGather(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInputs(node, 2));
  KILN_RETURN_IF_ERROR(CheckIndexInput(node, 1));
  const Dims* data = InputShape(node, 0);
  const Dims* idx = InputShape(node, 1);
  std::optional<Dims> out;
  if (data) {
    KILN_ASSIGN_OR_RETURN(int64_t axis, AxisAttr(node, 0, data->size()));
    if (idx) {
      out.emplace(data->begin(), data->begin() + axis);
      out->insert(out->end(), idx->begin(), idx->end());
      out->insert(out->end(), data->begin() + axis + 1, data->end());
    }
  }
  SetOutputType(node, 0, TypeOf(InputDType(node, 0), out));
  return Status::Ok();
}

Status RunGather(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* data, Input(ctx, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const Tensor* idx, Input(ctx, 1, "indices"));
  KILN_ASSIGN_OR_RETURN(int64_t axis, AxisAttr(ctx.node, 0, data->rank()));
  return SetOutput(ctx, ref::Gather(*data, *idx, axis));
}

Status InferGatherElements(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInputs(node, 2));
  KILN_RETURN_IF_ERROR(CheckIndexInput(node, 1));
  const Dims* data = InputShape(node, 0);
  const Dims* idx = InputShape(node, 1);
  if (data && idx && data->size() != idx->size())
    return Status::Error(node.Where(), "indices must have the rank of data");
  if (data) KILN_RETURN_IF_ERROR(AxisAttr(node, 0, data->size()).status());
  SetOutputType(node, 0,
                TypeOf(InputDType(node, 0), idx ? std::optional<Dims>(*idx) : std::nullopt));
  return Status::Ok();
}

Status RunGatherElements(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* data, Input(ctx, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const Tensor* idx, Input(ctx, 1, "indices"));
  KILN_ASSIGN_OR_RETURN(int64_t axis, AxisAttr(ctx.node, 0, data->rank()));
  return SetOutput(ctx, ref::GatherElements(*data, *idx, axis));
}

Expected<int64_t> BatchDims(const ir::Node& node) {
  ir::AttrReader attrs(node);
  const int64_t b = attrs.Int("batch_dims", 0);
  KILN_RETURN_IF_ERROR(attrs.status());
  if (b < 0) return Status::Error(node.Where(), "batch_dims ", b, " is negative");
  return b;
}

Status InferGatherND(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInputs(node, 2));
  KILN_RETURN_IF_ERROR(CheckIndexInput(node, 1));
  KILN_ASSIGN_OR_RETURN(int64_t b, BatchDims(node));
  const Dims* data = InputShape(node, 0);
  const Dims* idx = InputShape(node, 1);
  std::optional<Dims> out;
  if (data && idx && !idx->empty() && idx->back().is_static()) {
    const int64_t m = idx->back().value, r = data->size();
    if (m < 1 || b + m > r)
      return Status::Error(node.Where(), "indices address ", m, " dims of a rank-", r,
                           " data with batch_dims ", b);
    out.emplace(idx->begin(), idx->end() - 1);
    out->insert(out->end(), data->begin() + b + m, data->end());
  }
  SetOutputType(node, 0, TypeOf(InputDType(node, 0), out));
  return Status::Ok();
}

Status RunGatherND(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* data, Input(ctx, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const Tensor* idx, Input(ctx, 1, "indices"));
  KILN_ASSIGN_OR_RETURN(int64_t b, BatchDims(ctx.node));
  return SetOutput(ctx, ref::GatherND(*data, *idx, b));
}

// ---- Scatter family --------------------------------------------------------------------------

Status InferScatter(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInputs(node, 3));
  KILN_RETURN_IF_ERROR(CheckIndexInput(node, 1));
  KILN_RETURN_IF_ERROR(ReductionAttr(node).status());
  const DType t = InputDType(node, 0), u = InputDType(node, 2);
  if (t != DType::kUndefined && u != DType::kUndefined && t != u)
    return Status::Error(node.Where(), "updates are ", DTypeName(u), " but data is ", DTypeName(t));
  return InferSameAsInput0(node);
}

Status RunScatterElements(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* data, Input(ctx, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const Tensor* idx, Input(ctx, 1, "indices"));
  KILN_ASSIGN_OR_RETURN(const Tensor* updates, Input(ctx, 2, "updates"));
  KILN_ASSIGN_OR_RETURN(int64_t axis, AxisAttr(ctx.node, 0, data->rank()));
  KILN_ASSIGN_OR_RETURN(ref::Reduction r, ReductionAttr(ctx.node));
  return SetOutput(ctx, ref::ScatterElements(*data, *idx, *updates, axis, r));
}

Status RunScatterND(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* data, Input(ctx, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const Tensor* idx, Input(ctx, 1, "indices"));
  KILN_ASSIGN_OR_RETURN(const Tensor* updates, Input(ctx, 2, "updates"));
  KILN_ASSIGN_OR_RETURN(ref::Reduction r, ReductionAttr(ctx.node));
  return SetOutput(ctx, ref::ScatterND(*data, *idx, *updates, r));
}

// ---- OneHot, NonZero, Unique -----------------------------------------------------------------

// kiln refuses one-hot depths beyond this: the output would not fit in memory anyway.
constexpr double kMaxDepth = double(int64_t{1} << 40);

Expected<int64_t> Depth(const ir::Node& node, const Tensor& t) {
  if (t.numel() != 1 || t.dtype() == DType::kString)
    return Status::Error(node.Where(), "depth must be one number, got ", DescribeTensor(t));
  const double d = t.AsDouble(0);
  if (!(d >= 1 && d <= kMaxDepth))
    return Status::Error(node.Where(), "depth ", d, " must be in [1, 2^40]");
  return static_cast<int64_t>(d);
}

Status InferOneHot(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInputs(node, 3));
  const Dims* idx = InputShape(node, 0);
  std::optional<Dims> out;
  if (idx) {
    KILN_ASSIGN_OR_RETURN(int64_t axis, AxisAttr(node, -1, idx->size() + 1));
    Dim depth = Dim::Unknown();
    if (const Tensor* d = ConstantInput(node, 1)) {
      KILN_ASSIGN_OR_RETURN(int64_t v, Depth(node, *d));
      depth = Dim::Static(v);
    }
    out = *idx;
    out->insert(out->begin() + axis, depth);
  }
  SetOutputType(node, 0, TypeOf(InputDType(node, 2), out));
  return Status::Ok();
}

Status RunOneHot(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* idx, Input(ctx, 0, "indices"));
  KILN_ASSIGN_OR_RETURN(const Tensor* depth_t, Input(ctx, 1, "depth"));
  KILN_ASSIGN_OR_RETURN(const Tensor* values, Input(ctx, 2, "values"));
  if (idx->dtype() == DType::kString) return ctx.Error("indices must be numeric");
  KILN_ASSIGN_OR_RETURN(int64_t depth, Depth(ctx.node, *depth_t));
  KILN_ASSIGN_OR_RETURN(int64_t axis, AxisAttr(ctx.node, -1, idx->rank() + 1));
  return SetOutput(ctx, ref::OneHot(*idx, depth, *values, axis));
}

Status InferNonZero(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInputs(node, 1));
  const int64_t rank = InputRank(node, 0);
  Dims out{rank < 0 ? Dim::Unknown() : Dim::Static(std::max<int64_t>(rank, 1)), Dim::Unknown()};
  SetOutputType(node, 0, TypeOf(DType::kInt64, out));
  return Status::Ok();
}

Status RunNonZero(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* x, Input(ctx, 0, "X"));
  return SetOutput(ctx, ref::NonZero(*x));
}

// Unique's axis: -1 (flatten) when the attribute is absent.
Expected<int64_t> UniqueAxis(const ir::Node& node, int64_t rank) {
  if (!node.attr("axis")) return int64_t{-1};
  return AxisAttr(node, 0, rank);
}

Status InferUnique(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInputs(node, 1));
  const Dims* x = InputShape(node, 0);
  std::optional<Dims> y;
  Dim inverse = Dim::Unknown();
  if (!node.attr("axis")) {
    y = Dims{Dim::Unknown()};
    if (x && node.inputs[0]->type.has_static_shape()) {
      auto n = CheckedNumel(node.inputs[0]->type.static_dims(), "X");
      if (n.ok()) inverse = Dim::Static(*n);
    }
  } else if (x) {
    KILN_ASSIGN_OR_RETURN(int64_t axis, UniqueAxis(node, x->size()));
    y = *x;
    inverse = (*x)[axis];
    (*y)[axis] = Dim::Unknown();
  }
  SetOutputType(node, 0, TypeOf(InputDType(node, 0), y));
  SetOutputType(node, 1, TypeOf(DType::kInt64, Dims{Dim::Unknown()}));
  SetOutputType(node, 2, TypeOf(DType::kInt64, Dims{inverse}));
  SetOutputType(node, 3, TypeOf(DType::kInt64, Dims{Dim::Unknown()}));
  return Status::Ok();
}

Status RunUnique(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* x, Input(ctx, 0, "X"));
  KILN_ASSIGN_OR_RETURN(int64_t axis, UniqueAxis(ctx.node, x->rank()));
  ir::AttrReader attrs(ctx.node);
  const bool sorted = attrs.Int("sorted", 1) != 0;
  KILN_RETURN_IF_ERROR(attrs.status());
  auto r = ref::Unique(*x, axis, sorted);
  if (!r.ok()) return r.status().WithContext(ctx.node.Where());
  Tensor* outs[] = {&r->y, &r->indices, &r->inverse_indices, &r->counts};
  for (size_t i = 0; i < ctx.outputs.size() && i < 4; ++i) ctx.outputs[i] = std::move(*outs[i]);
  return Status::Ok();
}

constexpr OpDef kIndexingOps[] = {
    {"", "Gather", InferGather, RunGather, 1},
    {"", "GatherElements", InferGatherElements, RunGatherElements, 11},
    {"", "GatherND", InferGatherND, RunGatherND, 11},
    {"", "Scatter", InferScatter, RunScatterElements, 9},
    {"", "ScatterElements", InferScatter, RunScatterElements, 11},
    {"", "ScatterND", InferScatter, RunScatterND, 11},
    {"", "OneHot", InferOneHot, RunOneHot, 9},
    {"", "NonZero", InferNonZero, RunNonZero, 9},
    {"", "Unique", InferUnique, RunUnique, 11},
};

}  // namespace

std::span<const OpDef> IndexingOps() { return kIndexingOps; }

}  // namespace kiln::ops
