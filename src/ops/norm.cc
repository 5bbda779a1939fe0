// Normalization ops: BatchNormalization, InstanceNormalization, GroupNormalization,
// LayerNormalization, LRN and MeanVarianceNormalization; loops in kernels/ref/norm.cc.
#include "kernels/ref/norm.h"

#include <algorithm>

#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

// The float input 0 every normalization takes, with rank >= min_rank.
Status CheckX(const RunContext& ctx, int64_t min_rank) {
  const Tensor* x = ctx.input(0);
  if (x == nullptr) return ctx.Error("input X is required");
  if (x->dtype() != DType::kFloat32 && x->dtype() != DType::kFloat64)
    return ctx.Error("X must be a float tensor, got ", DescribeTensor(*x));
  if (x->rank() < min_rank)
    return ctx.Error("X must have rank >= ", min_rank, ", got ", DescribeTensor(*x));
  return Status::Ok();
}

// Input i must be present, of X's type, with `count` elements (any shape that holds them).
Status CheckParam(const RunContext& ctx, size_t i, int64_t count, const char* name) {
  const Tensor* t = ctx.input(i);
  if (t == nullptr) return ctx.Error("input ", name, " is required");
  if (t->dtype() != ctx.inputs[0]->dtype() || t->numel() != count)
    return ctx.Error(name, " must be ", DTypeName(ctx.inputs[0]->dtype()), " with ", count,
                     " elements, got ", DescribeTensor(*t));
  return Status::Ok();
}

ref::NCS ViewNCS(const Tensor& x) {
  ref::NCS s;
  s.n = x.dim(0);
  s.c = x.rank() > 1 ? x.dim(1) : 1;
  s.spatial = 1;
  for (int64_t d = 2; d < x.rank(); ++d) s.spatial *= x.dim(d);
  return s;
}

// ---- BatchNormalization ----

Status InferBatchNorm(ir::Node& node) {
  KILN_RETURN_IF_ERROR(InferSameAsInput0(node));
  if (node.has_input(3)) SetOutputType(node, 1, node.inputs[3]->type);
  if (node.has_input(4)) SetOutputType(node, 2, node.inputs[4]->type);
  return Status::Ok();
}

Status RunBatchNorm(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckX(ctx, 2));
  const Tensor& x = *ctx.inputs[0];
  ir::AttrReader r(ctx.node);
  const double eps = r.Float("epsilon", 1e-5f);
  const double momentum = r.Float("momentum", 0.9f);
  const bool training = r.Int("training_mode", 0) != 0;
  const bool spatial = r.Int("spatial", 1) != 0;  // opset 7-8 only
  KILN_RETURN_IF_ERROR(r.status());
  const ref::NCS s = ViewNCS(x);
  if (ctx.node.opset < 14 && ctx.node.outputs.size() > 1)
    for (size_t i = 1; i < ctx.node.outputs.size(); ++i)
      if (ctx.node.has_output(i))
        return ctx.Error("training outputs before opset 14 are not supported");
  // Opset 7-8 with spatial=0 keeps one parameter per channel and position.
  const bool per_element = !spatial && ctx.node.opset < 9 && ctx.input(1) &&
                           ctx.input(1)->numel() == s.c * s.spatial && s.spatial != 1;
  const int64_t count = per_element ? s.c * s.spatial : s.c;
  for (auto [i, name] :
       {std::pair<size_t, const char*>{1, "scale"}, {2, "B"}, {3, "input_mean"}, {4, "input_var"}})
    KILN_RETURN_IF_ERROR(CheckParam(ctx, i, count, name));
  Tensor y(x.dtype(), x.dims());
  const bool want_mean = ctx.node.has_output(1), want_var = ctx.node.has_output(2);
  Tensor mean_out, var_out;
  if (want_mean) mean_out = Tensor(x.dtype(), ctx.inputs[3]->dims());
  if (want_var) var_out = Tensor(x.dtype(), ctx.inputs[4]->dims());
  KILN_DISPATCH_FLOAT(x.dtype(), T, return ctx.Error("unsupported type"), {
    const T* sc = ctx.inputs[1]->data<T>();
    const T* b = ctx.inputs[2]->data<T>();
    const T* m = ctx.inputs[3]->data<T>();
    const T* v = ctx.inputs[4]->data<T>();
    if (training) {
      ref::BatchNormTraining<T>(s, x.data<T>(), sc, b, m, v, eps, momentum, y.data<T>(),
                                want_mean ? mean_out.data<T>() : nullptr,
                                want_var ? var_out.data<T>() : nullptr);
    } else {
      ref::BatchNormInference<T>(s, x.data<T>(), sc, b, m, v, eps, per_element, y.data<T>());
      // Outside training the running statistics pass through unchanged.
      if (want_mean) std::copy(m, m + count, mean_out.data<T>());
      if (want_var) std::copy(v, v + count, var_out.data<T>());
    }
  });
  ctx.outputs[0] = std::move(y);
  if (want_mean) ctx.outputs[1] = std::move(mean_out);
  if (want_var) ctx.outputs[2] = std::move(var_out);
  return Status::Ok();
}

// ---- InstanceNormalization, GroupNormalization ----

Status RunInstanceNorm(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckX(ctx, 3));
  const Tensor& x = *ctx.inputs[0];
  ir::AttrReader r(ctx.node);
  const double eps = r.Float("epsilon", 1e-5f);
  KILN_RETURN_IF_ERROR(r.status());
  const ref::NCS s = ViewNCS(x);
  KILN_RETURN_IF_ERROR(CheckParam(ctx, 1, s.c, "scale"));
  KILN_RETURN_IF_ERROR(CheckParam(ctx, 2, s.c, "B"));
  Tensor y(x.dtype(), x.dims());
  KILN_DISPATCH_FLOAT(x.dtype(), T, return ctx.Error("unsupported type"),
                      ref::InstanceNorm<T>(s, x.data<T>(), ctx.inputs[1]->data<T>(),
                                           ctx.inputs[2]->data<T>(), eps, y.data<T>()));
  ctx.outputs[0] = std::move(y);
  return Status::Ok();
}

Status RunGroupNorm(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckX(ctx, 3));
  const Tensor& x = *ctx.inputs[0];
  ir::AttrReader r(ctx.node);
  const double eps = r.Float("epsilon", 1e-5f);
  const bool has_groups = r.Has("num_groups");
  const int64_t groups = r.Int("num_groups", 1);
  KILN_RETURN_IF_ERROR(r.status());
  if (!has_groups) return ctx.Error("attribute 'num_groups' is required");
  const ref::NCS s = ViewNCS(x);
  if (groups < 1 || s.c % groups != 0)
    return ctx.Error("num_groups ", groups, " must be >= 1 and divide the ", s.c, " channels");
  // Opset 18 has one scale per group, opset 21 one per channel; the size tells which.
  const bool per_group = ctx.input(1) && ctx.input(1)->numel() == groups && groups != s.c;
  const int64_t count = per_group ? groups : s.c;
  KILN_RETURN_IF_ERROR(CheckParam(ctx, 1, count, "scale"));
  KILN_RETURN_IF_ERROR(CheckParam(ctx, 2, count, "bias"));
  Tensor y(x.dtype(), x.dims());
  KILN_DISPATCH_FLOAT(x.dtype(), T, return ctx.Error("unsupported type"),
                      ref::GroupNorm<T>(s, groups, x.data<T>(), ctx.inputs[1]->data<T>(),
                                        ctx.inputs[2]->data<T>(), per_group, eps, y.data<T>()));
  ctx.outputs[0] = std::move(y);
  return Status::Ok();
}

// ---- LayerNormalization ----

Status InferLayerNorm(ir::Node& node) {
  KILN_RETURN_IF_ERROR(InferSameAsInput0(node));
  ir::AttrReader r(node);
  int64_t axis = r.Int("axis", -1);
  KILN_RETURN_IF_ERROR(r.status());
  const ValueType& xt = node.inputs[0]->type;
  ValueType stat;
  stat.dtype = xt.dtype;
  if (xt.shape) {
    KILN_ASSIGN_OR_RETURN(axis, NormalizeAxis(node, axis, static_cast<int64_t>(xt.shape->size())));
    std::vector<Dim> dims = *xt.shape;
    for (size_t d = axis; d < dims.size(); ++d) dims[d] = Dim::Static(1);
    stat.shape = std::move(dims);
  }
  SetOutputType(node, 1, stat);
  SetOutputType(node, 2, stat);
  return Status::Ok();
}

// Scale or bias expanded to the `inner` normalized elements; it may have fewer dims (or leading
// 1s) and broadcast along dims of size 1.
Expected<std::vector<double>> ExpandToInner(const RunContext& ctx, const Tensor& p,
                                            const std::vector<int64_t>& norm_dims,
                                            const char* name) {
  std::vector<int64_t> pd = p.dims();
  while (pd.size() > norm_dims.size() && pd.front() == 1) pd.erase(pd.begin());
  bool ok = pd.size() <= norm_dims.size() && p.dtype() == ctx.inputs[0]->dtype();
  for (size_t i = 0; ok && i < pd.size(); ++i) {
    const int64_t nd = norm_dims[norm_dims.size() - pd.size() + i];
    ok = pd[i] == 1 || pd[i] == nd;
  }
  if (!ok)
    return ctx.Error(name, " ", DescribeTensor(p), " does not broadcast to the normalized dims ",
                     DimsToString(norm_dims));
  int64_t inner = 1;
  for (int64_t d : norm_dims) inner *= d;
  std::vector<double> out(inner);
  // Walk the normalized dims, reading p through broadcast strides.
  std::vector<int64_t> strides(norm_dims.size(), 0), pos(norm_dims.size(), 0);
  int64_t st = 1;
  for (size_t i = pd.size(); i-- > 0;) {
    strides[norm_dims.size() - pd.size() + i] = pd[i] == 1 ? 0 : st;
    st *= pd[i];
  }
  for (int64_t k = 0; k < inner; ++k) {
    int64_t off = 0;
    for (size_t d = 0; d < norm_dims.size(); ++d) off += pos[d] * strides[d];
    out[k] = p.AsDouble(off);
    for (size_t d = norm_dims.size(); d-- > 0;) {
      if (++pos[d] < norm_dims[d]) break;
      pos[d] = 0;
    }
  }
  return out;
}

Status RunLayerNorm(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckX(ctx, 1));
  const Tensor& x = *ctx.inputs[0];
  ir::AttrReader r(ctx.node);
  int64_t axis = r.Int("axis", -1);
  const double eps = r.Float("epsilon", 1e-5f);
  KILN_RETURN_IF_ERROR(r.status());
  KILN_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node, axis, x.rank()));
  std::vector<int64_t> norm_dims(x.dims().begin() + axis, x.dims().end());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d : norm_dims) inner *= d;
  if (ctx.input(1) == nullptr) return ctx.Error("input Scale is required");
  KILN_ASSIGN_OR_RETURN(auto scale, ExpandToInner(ctx, *ctx.input(1), norm_dims, "Scale"));
  std::vector<double> bias;
  if (ctx.input(2)) {
    KILN_ASSIGN_OR_RETURN(bias, ExpandToInner(ctx, *ctx.input(2), norm_dims, "B"));
  }
  std::vector<int64_t> stat_dims = x.dims();
  for (size_t d = axis; d < stat_dims.size(); ++d) stat_dims[d] = 1;
  Tensor y(x.dtype(), x.dims()), mean(x.dtype(), stat_dims), inv_std(x.dtype(), stat_dims);
  KILN_DISPATCH_FLOAT(x.dtype(), T, return ctx.Error("unsupported type"), {
    std::vector<T> sc(scale.begin(), scale.end()), b(bias.begin(), bias.end());
    ref::LayerNorm<T>(outer, inner, x.data<T>(), sc.data(), bias.empty() ? nullptr : b.data(), eps,
                      y.data<T>(), mean.data<T>(), inv_std.data<T>());
  });
  ctx.outputs[0] = std::move(y);
  if (ctx.node.has_output(1)) ctx.outputs[1] = std::move(mean);
  if (ctx.node.has_output(2)) ctx.outputs[2] = std::move(inv_std);
  return Status::Ok();
}

// ---- LRN, MeanVarianceNormalization ----

Status RunLrn(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckX(ctx, 2));
  const Tensor& x = *ctx.inputs[0];
  ir::AttrReader r(ctx.node);
  const double alpha = r.Float("alpha", 1e-4f), beta = r.Float("beta", 0.75f);
  const double bias = r.Float("bias", 1.0f);
  const bool has_size = r.Has("size");
  const int64_t size = r.Int("size", 1);
  KILN_RETURN_IF_ERROR(r.status());
  if (!has_size || size < 1 || size > (int64_t{1} << 30))
    return ctx.Error("attribute 'size' is required and must be >= 1");
  Tensor y(x.dtype(), x.dims());
  KILN_DISPATCH_FLOAT(x.dtype(), T, return ctx.Error("unsupported type"),
                      ref::Lrn<T>(ViewNCS(x), x.data<T>(), size, alpha, beta, bias, y.data<T>()));
  ctx.outputs[0] = std::move(y);
  return Status::Ok();
}

Status RunMvn(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckX(ctx, 1));
  const Tensor& x = *ctx.inputs[0];
  ir::AttrReader r(ctx.node);
  std::vector<int64_t> axes = r.Ints("axes", {0, 2, 3});
  KILN_RETURN_IF_ERROR(r.status());
  std::vector<bool> reduce(x.rank(), false);
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis(ctx.node, a, x.rank()));
    reduce[ax] = true;
  }
  Tensor y(x.dtype(), x.dims());
  KILN_DISPATCH_FLOAT(x.dtype(), T, return ctx.Error("unsupported type"),
                      ref::MeanVarianceNorm<T>(x.dims(), reduce, x.data<T>(), y.data<T>()));
  ctx.outputs[0] = std::move(y);
  return Status::Ok();
}

const OpDef kNormOps[] = {
    {"", "BatchNormalization", InferBatchNorm, RunBatchNorm, 7, true},
    {"", "InstanceNormalization", InferSameAsInput0, RunInstanceNorm, 6, true},
    {"", "GroupNormalization", InferSameAsInput0, RunGroupNorm, 18, true},
    {"", "LayerNormalization", InferLayerNorm, RunLayerNorm, 17, true},
    {"", "LRN", InferSameAsInput0, RunLrn, 1, true},
    {"", "MeanVarianceNormalization", InferSameAsInput0, RunMvn, 9, true},
};

}  // namespace

std::span<const OpDef> NormOps() { return kNormOps; }

}  // namespace kiln::ops
