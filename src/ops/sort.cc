// TopK (k as an input; the frontend turns the pre-10 attribute into one), CumSum and
// NonMaxSuppression.
#include "kernels/ref/sort.h"

#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

// A one-element tensor (0-D or [1]) read as an int64: k, axis, max_output_boxes_per_class.
Expected<int64_t> ReadIntScalar(const ir::Node& node, const Tensor& t, const char* what) {
  if (t.numel() != 1 || t.rank() > 1)
    return Status::Error(node.Where(), "input '", what, "' must hold exactly one value, got ",
                         DescribeTensor(t));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v,
                        t.ToInt64Vector(StrCat(node.Where(), "input '", what, "'")));
  return v[0];
}

Expected<double> ReadFloatScalar(const ir::Node& node, const Tensor& t, const char* what) {
  if (t.numel() != 1 || t.rank() > 1 || !IsFloat(t.dtype()))
    return Status::Error(node.Where(), "input '", what, "' must be one float value, got ",
                         DescribeTensor(t));
  return t.AsDouble(0);
}

struct TopKAttrs {
  int64_t axis = -1;
  bool largest = true;
  bool sorted = true;
  std::optional<int64_t> attr_k;  // only when a graph still carries the opset-1 attribute
};

Expected<TopKAttrs> ReadTopKAttrs(const ir::Node& node) {
  ir::AttrReader reader(node);
  TopKAttrs a;
  a.axis = reader.Int("axis", -1);
  a.largest = reader.Int("largest", 1) != 0;
  a.sorted = reader.Int("sorted", 1) != 0;
  if (reader.Has("k")) a.attr_k = reader.Int("k", 0);
  KILN_RETURN_IF_ERROR(reader.status());
  return a;
}

Status InferTopK(ir::Node& node) {
  if (!node.has_input(0)) return Status::Error(node.Where(), "input 'X' is missing");
  KILN_ASSIGN_OR_RETURN(TopKAttrs a, ReadTopKAttrs(node));
  const ValueType& in = node.inputs[0]->type;
  ValueType values{in.dtype, std::nullopt};
  if (in.shape) {
    KILN_ASSIGN_OR_RETURN(int64_t axis,
                          NormalizeAxis(node, a.axis, static_cast<int64_t>(in.shape->size())));
    std::vector<Dim> dims = *in.shape;
    std::optional<int64_t> k = a.attr_k;
    if (const Tensor* t = ConstantInput(node, 1)) {
      KILN_ASSIGN_OR_RETURN(k, ReadIntScalar(node, *t, "K"));
    }
    const Dim& len = (*in.shape)[axis];
    if (k && (*k < 0 || (len.is_static() && *k > len.value)))
      return Status::Error(node.Where(), "k = ", *k, " is outside [0, size of axis ", axis,
                           "] for input ", in.ToString());
    dims[axis] = k ? Dim::Static(*k) : Dim::Unknown();
    values.shape = std::move(dims);
  }
  ValueType indices{DType::kInt64, values.shape};
  SetOutputType(node, 0, std::move(values));
  SetOutputType(node, 1, std::move(indices));
  return Status::Ok();
}

Status RunTopK(RunContext& ctx) {
  const Tensor* x = ctx.input(0);
  if (x == nullptr) return ctx.Error("input 'X' is missing");
  KILN_ASSIGN_OR_RETURN(TopKAttrs a, ReadTopKAttrs(ctx.node));
  ref::TopKParams p;
  p.largest = a.largest;
  p.sorted = a.sorted;
  KILN_ASSIGN_OR_RETURN(p.axis, NormalizeAxis(ctx.node, a.axis, x->rank()));
  if (const Tensor* k = ctx.input(1)) {
    KILN_ASSIGN_OR_RETURN(p.k, ReadIntScalar(ctx.node, *k, "K"));
  } else if (a.attr_k) {
    p.k = *a.attr_k;
  } else {
    return ctx.Error("input 'K' is missing");
  }
  Tensor values, indices;
  KILN_RETURN_IF_ERROR(ref::TopK(*x, p, &values, &indices).WithContext(ctx.node.Where()));
  ctx.outputs[0] = std::move(values);
  if (ctx.outputs.size() > 1) ctx.outputs[1] = std::move(indices);
  return Status::Ok();
}

Status InferCumSum(ir::Node& node) {
  if (!node.has_input(1)) return Status::Error(node.Where(), "input 'axis' is missing");
  return InferSameAsInput0(node);
}

Status RunCumSum(RunContext& ctx) {
  const Tensor* x = ctx.input(0);
  if (x == nullptr || ctx.input(1) == nullptr) return ctx.Error("needs inputs 'x' and 'axis'");
  ir::AttrReader reader(ctx.node);
  const bool exclusive = reader.Int("exclusive", 0) != 0;
  const bool reverse = reader.Int("reverse", 0) != 0;
  KILN_RETURN_IF_ERROR(reader.status());
  KILN_ASSIGN_OR_RETURN(int64_t axis, ReadIntScalar(ctx.node, *ctx.input(1), "axis"));
  KILN_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node, axis, x->rank()));
  auto y = ref::CumSum(*x, axis, exclusive, reverse);
  if (!y.ok()) return y.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(y).value();
  return Status::Ok();
}

Status InferNms(ir::Node& node) {
  if (!node.has_input(0) || !node.has_input(1))
    return Status::Error(node.Where(), "needs inputs 'boxes' and 'scores'");
  ValueType out{DType::kInt64, std::vector<Dim>{Dim::Unknown(), Dim::Static(3)}};
  SetOutputType(node, 0, std::move(out));
  return Status::Ok();
}

Status RunNms(RunContext& ctx) {
  if (ctx.input(0) == nullptr || ctx.input(1) == nullptr)
    return ctx.Error("needs inputs 'boxes' and 'scores'");
  ir::AttrReader reader(ctx.node);
  ref::NmsParams p;
  const int64_t center = reader.Int("center_point_box", 0);
  KILN_RETURN_IF_ERROR(reader.status());
  if (center != 0 && center != 1) return ctx.Error("center_point_box must be 0 or 1, got ", center);
  p.center_point_box = center == 1;
  if (const Tensor* t = ctx.input(2)) {
    KILN_ASSIGN_OR_RETURN(p.max_output_boxes_per_class,
                          ReadIntScalar(ctx.node, *t, "max_output_boxes_per_class"));
  }
  if (const Tensor* t = ctx.input(3)) {
    KILN_ASSIGN_OR_RETURN(double v, ReadFloatScalar(ctx.node, *t, "iou_threshold"));
    p.iou_threshold = static_cast<float>(v);
  }
  if (const Tensor* t = ctx.input(4)) {
    KILN_ASSIGN_OR_RETURN(double v, ReadFloatScalar(ctx.node, *t, "score_threshold"));
    p.score_threshold = static_cast<float>(v);
  }
  auto out = ref::NonMaxSuppression(*ctx.input(0), *ctx.input(1), p);
  if (!out.ok()) return out.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(out).value();
  return Status::Ok();
}

}  // namespace

std::span<const OpDef> SortOps() {
  // promote_half: float16/bfloat16 sort and sum in float32; only values are narrowed back.
  static const OpDef kOps[] = {
      {"", "TopK", InferTopK, RunTopK, 1, true},
      {"", "CumSum", InferCumSum, RunCumSum, 11, true},
      {"", "NonMaxSuppression", InferNms, RunNms, 10, true},
  };
  return kOps;
}

}  // namespace kiln::ops
