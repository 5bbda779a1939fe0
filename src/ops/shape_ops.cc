// Shape ops: Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout, Constant,
// ConstantOfShape, EyeLike, Range. Most only relabel dims: run() shares the input's buffer.
#include <algorithm>
#include <optional>
#include <random>

#include "kernels/ref/dropout.h"
#include "kernels/ref/movement.h"
#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

using Dims = std::vector<Dim>;

// The constant int32/int64 values of input i (nullopt when absent or not constant).
Expected<std::optional<std::vector<int64_t>>> ConstInts(const ir::Node& node, size_t i,
                                                        const char* what) {
  const Tensor* t = ConstantInput(node, i);
  if (t == nullptr) return std::optional<std::vector<int64_t>>();
  auto v = t->ToInt64Vector(what);
  if (!v.ok()) return v.status().WithContext(node.Where());
  return std::optional<std::vector<int64_t>>(std::move(*v));
}

Expected<std::vector<int64_t>> IntsOf(RunContext& ctx, const Tensor& t, const char* what) {
  auto v = t.ToInt64Vector(what);
  if (!v.ok()) return v.status().WithContext(ctx.node.Where());
  return v;
}

Dims StaticDims(const std::vector<int64_t>& dims) {
  Dims out;
  for (int64_t d : dims) out.push_back(Dim::Static(d));
  return out;
}

std::vector<int64_t> ToInts(const Dims& dims) {
  std::vector<int64_t> out;
  for (const Dim& d : dims) out.push_back(d.value);
  return out;
}

bool AllStatic(const Dims& dims) {
  return std::all_of(dims.begin(), dims.end(), [](const Dim& d) { return d.is_static(); });
}

// ---- Shape, Size -----------------------------------------------------------------------------

// Shape's [start, end) after clamping into [0, rank] (opset 15 start/end).
std::pair<int64_t, int64_t> ShapeRange(const ir::Node& node, int64_t rank, Status* st) {
  ir::AttrReader attrs(node);
  int64_t start = attrs.Int("start", 0), end = attrs.Int("end", rank);
  *st = attrs.status();
  if (start < 0) start = std::max<int64_t>(0, start + rank);
  if (end < 0) end = std::max<int64_t>(0, end + rank);
  start = std::min(start, rank);
  end = std::min(end, rank);
  return {start, std::max(start, end)};
}

Status InferShape(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "data"));
  const Dims* in = InputShape(node, 0);
  Dims out{Dim::Unknown()};
  if (in) {
    Status st;
    auto [start, end] = ShapeRange(node, static_cast<int64_t>(in->size()), &st);
    KILN_RETURN_IF_ERROR(st);
    out[0] = Dim::Static(end - start);
  }
  SetOutputType(node, 0, TypeOf(DType::kInt64, out));
  return Status::Ok();
}

Status RunShape(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "data"));
  Status st;
  auto [start, end] = ShapeRange(ctx.node, in->rank(), &st);
  KILN_RETURN_IF_ERROR(st);
  std::vector<int64_t> dims(in->dims().begin() + start, in->dims().begin() + end);
  ctx.outputs[0] = Tensor::FromVector(dims, {end - start});
  return Status::Ok();
}

Status InferSize(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "data"));
  SetOutputType(node, 0, TypeOf(DType::kInt64, Dims{}));
  return Status::Ok();
}

Status RunSize(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "data"));
  ctx.outputs[0] = Tensor::Scalar<int64_t>(in->numel());
  return Status::Ok();
}

// ---- Reshape, Flatten ------------------------------------------------------------------------

// Reshape's output dims from the input's (maybe partly unknown) dims and the shape values.
// Resolves 0 (copy, unless allowzero) and -1 (inferred) wherever the known dims allow.
Expected<Dims> ReshapeDims(const ir::Node& node, const Dims* in, const std::vector<int64_t>& shape,
                           bool allowzero) {
  Dims out;
  int64_t infer_at = -1;
  bool has_zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t s = shape[i];
    if (s == -1) {
      if (infer_at >= 0)
        return Status::Error(node.Where(), "shape ", DimsToString(shape), " has more than one -1");
      infer_at = static_cast<int64_t>(i);
      out.push_back(Dim::Unknown());
    } else if (s < -1) {
      return Status::Error(node.Where(), "shape ", DimsToString(shape), " has invalid value ", s);
    } else if (s == 0 && !allowzero) {
      if (in && i >= in->size())
        return Status::Error(node.Where(), "shape ", DimsToString(shape), " copies dim ", i,
                             " of a rank-", in->size(), " input");
      out.push_back(in ? (*in)[i] : Dim::Unknown());
    } else {
      has_zero = has_zero || s == 0;
      out.push_back(Dim::Static(s));
    }
  }
  if (allowzero && has_zero && infer_at >= 0)
    return Status::Error(node.Where(), "shape ", DimsToString(shape),
                         " has both 0 and -1 while allowzero is set");
  if (!in || !AllStatic(*in)) return out;
  auto in_numel = CheckedNumel(ToInts(*in), "Reshape input");
  if (!in_numel.ok()) return in_numel.status().WithContext(node.Where());
  if (infer_at >= 0) {
    Dims others = out;
    others[infer_at] = Dim::Static(1);
    if (!AllStatic(others)) return out;
    auto rest = CheckedNumel(ToInts(others), "Reshape shape");
    if (!rest.ok()) return rest.status().WithContext(node.Where());
    if (*rest == 0 || *in_numel % *rest != 0)
      return Status::Error(node.Where(), "cannot reshape ", *in_numel, " elements to ",
                           DimsToString(shape));
    out[infer_at] = Dim::Static(*in_numel / *rest);
  }
  if (AllStatic(out)) {
    auto out_numel = CheckedNumel(ToInts(out), "Reshape shape");
    if (!out_numel.ok()) return out_numel.status().WithContext(node.Where());
    if (*out_numel != *in_numel)
      return Status::Error(node.Where(), "cannot reshape ", *in_numel, " elements to ",
                           DimsToString(ToInts(out)));
  }
  return out;
}

Status InferReshape(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "data"));
  KILN_RETURN_IF_ERROR(RequireInput(node, 1, "shape"));
  ir::AttrReader attrs(node);
  const bool allowzero = attrs.Int("allowzero", 0) != 0;
  KILN_RETURN_IF_ERROR(attrs.status());
  KILN_ASSIGN_OR_RETURN(auto shape, ConstInts(node, 1, "shape"));
  std::optional<Dims> out;
  if (shape) {
    KILN_ASSIGN_OR_RETURN(out, ReshapeDims(node, InputShape(node, 0), *shape, allowzero));
  } else if (const Dims* s = InputShape(node, 1); s && s->size() == 1 && (*s)[0].is_static()) {
    out = Dims((*s)[0].value, Dim::Unknown());
  }
  SetOutputType(node, 0, TypeOf(InputDType(node, 0), out));
  return Status::Ok();
}

Status RunReshape(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const Tensor* shape_t, Input(ctx, 1, "shape"));
  if (shape_t->rank() != 1) return ctx.Error("shape must be 1-D, got ", DescribeTensor(*shape_t));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, IntsOf(ctx, *shape_t, "shape"));
  ir::AttrReader attrs(ctx.node);
  const bool allowzero = attrs.Int("allowzero", 0) != 0;
  KILN_RETURN_IF_ERROR(attrs.status());
  const Dims in_dims = StaticDims(in->dims());
  KILN_ASSIGN_OR_RETURN(Dims out, ReshapeDims(ctx.node, &in_dims, shape, allowzero));
  if (!AllStatic(out)) return ctx.Error("cannot resolve shape ", DimsToString(shape));
  ctx.outputs[0] = in->Reshaped(ToInts(out));
  return Status::Ok();
}

// Product of dims[from, to) as a Dim: static if every factor is, unknown otherwise.
Dim DimProduct(const Dims& dims, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t k = from; k < to; ++k) {
    if (!dims[k].is_static()) return Dim::Unknown();
    if (dims[k].value != 0 && n > (int64_t{1} << 62) / dims[k].value) return Dim::Unknown();
    n *= dims[k].value;
  }
  return Dim::Static(n);
}

Expected<int64_t> FlattenAxis(const ir::Node& node, int64_t rank) {
  ir::AttrReader attrs(node);
  int64_t axis = attrs.Int("axis", 1);
  KILN_RETURN_IF_ERROR(attrs.status());
  if (axis < -rank || axis > rank)
    return Status::Error(node.Where(), "axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

Status InferFlatten(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "input"));
  const Dims* in = InputShape(node, 0);
  std::optional<Dims> out;
  if (in) {
    KILN_ASSIGN_OR_RETURN(int64_t axis, FlattenAxis(node, static_cast<int64_t>(in->size())));
    out = Dims{DimProduct(*in, 0, axis), DimProduct(*in, axis, in->size())};
  }
  SetOutputType(node, 0, TypeOf(InputDType(node, 0), out));
  return Status::Ok();
}

Status RunFlatten(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "input"));
  KILN_ASSIGN_OR_RETURN(int64_t axis, FlattenAxis(ctx.node, in->rank()));
  const std::vector<int64_t>& d = in->dims();
  // Checked: with a zero elsewhere, one side's product may overflow while numel is 0.
  auto outer = CheckedNumel({d.begin(), d.begin() + axis}, "Flatten outer dims");
  auto inner = CheckedNumel({d.begin() + axis, d.end()}, "Flatten inner dims");
  if (!outer.ok()) return outer.status().WithContext(ctx.node.Where());
  if (!inner.ok()) return inner.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = in->Reshaped({*outer, *inner});
  return Status::Ok();
}

// ---- Squeeze, Unsqueeze ----------------------------------------------------------------------

// Normalizes axes against rank, refusing duplicates.
Expected<std::vector<int64_t>> NormalizeAxes(const ir::Node& node, std::vector<int64_t> axes,
                                             int64_t rank) {
  for (int64_t& a : axes) {
    KILN_ASSIGN_OR_RETURN(a, NormalizeAxis(node, a, rank));
  }
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    return Status::Error(node.Where(), "axes ", DimsToString(axes), " repeat an axis");
  return sorted;
}

// Squeeze's output dims; axes == nullopt removes every dim known to be 1 (nullopt result when a
// dim is unknown, since it might be 1).
Expected<std::optional<Dims>> SqueezeDims(const ir::Node& node, const Dims& in,
                                          const std::optional<std::vector<int64_t>>& axes) {
  Dims out;
  if (!axes || axes->empty()) {  // an empty axes input squeezes every 1, like an absent one
    for (const Dim& d : in) {
      if (!d.is_static()) return std::optional<Dims>();
      if (d.value != 1) out.push_back(d);
    }
    return std::optional<Dims>(out);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> norm,
                        NormalizeAxes(node, *axes, static_cast<int64_t>(in.size())));
  for (size_t k = 0; k < in.size(); ++k) {
    if (std::binary_search(norm.begin(), norm.end(), static_cast<int64_t>(k))) {
      if (in[k].is_static() && in[k].value != 1)
        return Status::Error(node.Where(), "cannot squeeze axis ", k, " of size ", in[k].value);
      continue;
    }
    out.push_back(in[k]);
  }
  return std::optional<Dims>(out);
}

Status InferSqueeze(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "data"));
  const Dims* in = InputShape(node, 0);
  std::optional<Dims> out;
  if (in && (!node.has_input(1) || ConstantInput(node, 1))) {
    KILN_ASSIGN_OR_RETURN(auto axes, ConstInts(node, 1, "axes"));
    KILN_ASSIGN_OR_RETURN(out, SqueezeDims(node, *in, axes));
  }
  SetOutputType(node, 0, TypeOf(InputDType(node, 0), out));
  return Status::Ok();
}

Status RunSqueeze(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "data"));
  std::optional<std::vector<int64_t>> axes;
  if (const Tensor* a = ctx.input(1)) {
    KILN_ASSIGN_OR_RETURN(axes, IntsOf(ctx, *a, "axes"));
  }
  KILN_ASSIGN_OR_RETURN(std::optional<Dims> out,
                        SqueezeDims(ctx.node, StaticDims(in->dims()), axes));
  ctx.outputs[0] = in->Reshaped(ToInts(*out));
  return Status::Ok();
}

Expected<Dims> UnsqueezeDims(const ir::Node& node, const Dims& in,
                             const std::vector<int64_t>& axes) {
  const int64_t out_rank = static_cast<int64_t>(in.size() + axes.size());
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> norm, NormalizeAxes(node, axes, out_rank));
  Dims out;
  size_t next = 0;
  for (int64_t k = 0; k < out_rank; ++k) {
    if (std::binary_search(norm.begin(), norm.end(), k))
      out.push_back(Dim::Static(1));
    else
      out.push_back(in[next++]);
  }
  return out;
}

Status InferUnsqueeze(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "data"));
  KILN_RETURN_IF_ERROR(RequireInput(node, 1, "axes"));
  const Dims* in = InputShape(node, 0);
  KILN_ASSIGN_OR_RETURN(auto axes, ConstInts(node, 1, "axes"));
  std::optional<Dims> out;
  if (in && axes) {
    KILN_ASSIGN_OR_RETURN(out, UnsqueezeDims(node, *in, *axes));
  }
  SetOutputType(node, 0, TypeOf(InputDType(node, 0), out));
  return Status::Ok();
}

Status RunUnsqueeze(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "data"));
  KILN_ASSIGN_OR_RETURN(const Tensor* axes_t, Input(ctx, 1, "axes"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, IntsOf(ctx, *axes_t, "axes"));
  KILN_ASSIGN_OR_RETURN(Dims out, UnsqueezeDims(ctx.node, StaticDims(in->dims()), axes));
  ctx.outputs[0] = in->Reshaped(ToInts(out));
  return Status::Ok();
}

// ---- Identity, Dropout -----------------------------------------------------------------------

Status RunIdentity(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "input"));
  ctx.outputs[0] = *in;
  return Status::Ok();
}

Status InferDropout(ir::Node& node) {
  KILN_RETURN_IF_ERROR(InferSameAsInput0(node));
  SetOutputType(node, 1, TypeOf(DType::kBool, node.inputs[0]->type.shape));
  return Status::Ok();
}

Status RunDropout(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "data"));
  // Opset 12+ carries ratio and training_mode as inputs (older opsets: inference only).
  double ratio = 0.5;
  if (const Tensor* r = ctx.input(1)) {
    if (r->numel() != 1 || !IsFloat(r->dtype()))
      return ctx.Error("ratio must be a floating-point scalar, got ", DescribeTensor(*r));
    ratio = r->AsDouble(0);
  }
  const Tensor* training = ctx.input(2);
  if (training && (training->numel() != 1 || training->dtype() != DType::kBool))
    return ctx.Error("training_mode must be a bool scalar, got ", DescribeTensor(*training));
  if (training && training->AsInt64(0) != 0 && ratio != 0) {
    // A `seed` attribute makes the mask reproducible; without one each run draws its own.
    ir::AttrReader attrs(ctx.node);
    const int64_t seed = attrs.Int("seed", static_cast<int64_t>(std::random_device{}()));
    KILN_RETURN_IF_ERROR(attrs.status());
    Tensor mask;
    Status st = ref::DropoutTrain(*in, ratio, static_cast<uint32_t>(seed), &ctx.outputs[0], &mask);
    if (!st.ok()) return ctx.Error(st.message());
    if (ctx.node.has_output(1)) ctx.outputs[1] = std::move(mask);
    return Status::Ok();
  }
  ctx.outputs[0] = *in;
  if (ctx.node.has_output(1)) {
    Tensor mask(DType::kBool, in->dims());
    std::fill_n(mask.data<bool>(), mask.numel(), true);
    ctx.outputs[1] = std::move(mask);
  }
  return Status::Ok();
}

// ---- Constant, ConstantOfShape, EyeLike, Range -----------------------------------------------

Expected<Tensor> ConstantValue(const ir::Node& node) {
  int set = 0;
  for (const auto& [name, attr] : node.attrs) set += name.rfind("value", 0) == 0 ? 1 : 0;
  if (node.attr("sparse_value"))
    return Status::Error(node.Where(), "sparse_value constants are not supported");
  if (set != 1)
    return Status::Error(node.Where(), "exactly one value attribute must be set, found ", set);
  ir::AttrReader attrs(node);
  Tensor out;
  if (attrs.Has("value")) {
    const Tensor* t = attrs.TensorAttr("value");
    if (t) out = *t;
  } else if (attrs.Has("value_float")) {
    out = Tensor::Scalar(attrs.Float("value_float", 0));
  } else if (attrs.Has("value_floats")) {
    std::vector<float> v = attrs.Floats("value_floats");
    out = Tensor::FromVector(v, {static_cast<int64_t>(v.size())});
  } else if (attrs.Has("value_int")) {
    out = Tensor::Scalar<int64_t>(attrs.Int("value_int", 0));
  } else if (attrs.Has("value_ints")) {
    std::vector<int64_t> v = attrs.Ints("value_ints");
    out = Tensor::FromVector(v, {static_cast<int64_t>(v.size())});
  } else if (attrs.Has("value_string")) {
    out = Tensor(DType::kString, {});
    out.strings()[0] = attrs.String("value_string", "");
  } else if (attrs.Has("value_strings")) {
    std::vector<std::string> v = attrs.Strings("value_strings");
    out = Tensor(DType::kString, {static_cast<int64_t>(v.size())});
    out.strings() = v;
  } else {
    return Status::Error(node.Where(), "unknown value attribute");
  }
  KILN_RETURN_IF_ERROR(attrs.status());
  if (!out.defined()) return Status::Error(node.Where(), "the value attribute holds no tensor");
  return out;
}

Status InferConstant(ir::Node& node) {
  KILN_ASSIGN_OR_RETURN(Tensor t, ConstantValue(node));
  SetOutputType(node, 0, ValueType::Of(t.dtype(), t.dims()));
  return Status::Ok();
}

Status RunConstant(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(ctx.outputs[0], ConstantValue(ctx.node));
  return Status::Ok();
}

Expected<Tensor> ConstantOfShapeValue(const ir::Node& node) {
  ir::AttrReader attrs(node);
  const Tensor* v = attrs.TensorAttr("value");
  KILN_RETURN_IF_ERROR(attrs.status());
  if (v == nullptr) return Tensor::Scalar(0.0f);
  if (v->numel() != 1 || v->dtype() == DType::kString)
    return Status::Error(node.Where(), "value must hold one number, got ", DescribeTensor(*v));
  return *v;
}

Status InferConstantOfShape(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "input"));
  KILN_ASSIGN_OR_RETURN(Tensor value, ConstantOfShapeValue(node));
  KILN_ASSIGN_OR_RETURN(auto shape, ConstInts(node, 0, "input"));
  std::optional<Dims> out;
  if (shape) {
    for (int64_t d : *shape)
      if (d < 0) return Status::Error(node.Where(), "shape ", DimsToString(*shape), " is negative");
    out = StaticDims(*shape);
  } else if (const Dims* s = InputShape(node, 0); s && s->size() == 1 && (*s)[0].is_static()) {
    out = Dims((*s)[0].value, Dim::Unknown());
  }
  SetOutputType(node, 0, TypeOf(value.dtype(), out));
  return Status::Ok();
}

Status RunConstantOfShape(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* shape_t, Input(ctx, 0, "input"));
  if (shape_t->rank() != 1) return ctx.Error("input must be 1-D, got ", DescribeTensor(*shape_t));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, IntsOf(ctx, *shape_t, "input"));
  KILN_ASSIGN_OR_RETURN(Tensor value, ConstantOfShapeValue(ctx.node));
  auto out = Tensor::Make(value.dtype(), shape, "ConstantOfShape output");
  if (!out.ok()) return out.status().WithContext(ctx.node.Where());
  ref::FillWith(value, &*out);
  ctx.outputs[0] = std::move(*out);
  return Status::Ok();
}

Expected<DType> EyeLikeDType(const ir::Node& node, DType input) {
  ir::AttrReader attrs(node);
  const int64_t dt = attrs.Int("dtype", static_cast<int64_t>(input));
  KILN_RETURN_IF_ERROR(attrs.status());
  if (dt < 0 || dt > 1000 || !IsKnownDType(static_cast<int32_t>(dt)) ||
      dt == static_cast<int64_t>(DType::kString))
    return Status::Error(node.Where(), "dtype ", dt, " is not supported");
  return static_cast<DType>(dt);
}

Status InferEyeLike(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "input"));
  const DType in_t = InputDType(node, 0);
  if (in_t == DType::kUndefined && !node.attr("dtype")) return InferDTypeOfInput0(node);
  KILN_ASSIGN_OR_RETURN(DType t, EyeLikeDType(node, in_t));
  const Dims* in = InputShape(node, 0);
  if (in && in->size() != 2)
    return Status::Error(node.Where(), "input must be 2-D, got ", node.inputs[0]->type.ToString());
  SetOutputType(node, 0, TypeOf(t, in ? std::optional<Dims>(*in) : std::nullopt));
  return Status::Ok();
}

Status RunEyeLike(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "input"));
  KILN_ASSIGN_OR_RETURN(DType t, EyeLikeDType(ctx.node, in->dtype()));
  ir::AttrReader attrs(ctx.node);
  const int64_t k = attrs.Int("k", 0);
  KILN_RETURN_IF_ERROR(attrs.status());
  auto out = ref::EyeLike(in->dims(), t, k);
  if (!out.ok()) return out.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(*out);
  return Status::Ok();
}

Status InferRange(ir::Node& node) {
  for (size_t i = 0; i < 3; ++i) KILN_RETURN_IF_ERROR(RequireInput(node, i, "start/limit/delta"));
  Dims out{Dim::Unknown()};
  const Tensor* s = ConstantInput(node, 0);
  const Tensor* l = ConstantInput(node, 1);
  const Tensor* d = ConstantInput(node, 2);
  if (s && l && d) {
    auto t = ref::Range(*s, *l, *d);
    if (!t.ok()) return t.status().WithContext(node.Where());
    out[0] = Dim::Static(t->numel());
  }
  SetOutputType(node, 0, TypeOf(InputDType(node, 0), out));
  return Status::Ok();
}

Status RunRange(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* s, Input(ctx, 0, "start"));
  KILN_ASSIGN_OR_RETURN(const Tensor* l, Input(ctx, 1, "limit"));
  KILN_ASSIGN_OR_RETURN(const Tensor* d, Input(ctx, 2, "delta"));
  auto out = ref::Range(*s, *l, *d);
  if (!out.ok()) return out.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(*out);
  return Status::Ok();
}

constexpr OpDef kShapeOps[] = {
    {"", "Shape", InferShape, RunShape, 1},
    {"", "Size", InferSize, RunSize, 1},
    {"", "Reshape", InferReshape, RunReshape, 5},
    {"", "Flatten", InferFlatten, RunFlatten, 1},
    {"", "Squeeze", InferSqueeze, RunSqueeze, 1},
    {"", "Unsqueeze", InferUnsqueeze, RunUnsqueeze, 1},
    {"", "Identity", InferSameAsInput0, RunIdentity, 1},
    {"", "Dropout", InferDropout, RunDropout, 1},
    {"", "Constant", InferConstant, RunConstant, 1},
    {"", "ConstantOfShape", InferConstantOfShape, RunConstantOfShape, 9},
    {"", "EyeLike", InferEyeLike, RunEyeLike, 9},
    {"", "Range", InferRange, RunRange, 11},
};

}  // namespace

std::span<const OpDef> ShapeOps() { return kShapeOps; }

}  // namespace kiln::ops
