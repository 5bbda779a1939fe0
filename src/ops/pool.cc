// Pooling ops: MaxPool, AveragePool, LpPool, their global forms, and MaxUnpool. The window
// geometry is shared with Conv (kernels/ref/conv.h); the loops live in kernels/ref/pool.cc.
#include "kernels/ref/pool.h"

#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

struct PoolPlan {
  ref::PoolGeometry geometry;
  std::vector<int64_t> out_dims;
};

Expected<PoolPlan> PlanPool(const ir::Node& node, const std::vector<int64_t>& x) {
  ir::AttrReader r(node);
  ref::WindowSpec spec;
  if (!r.Has("kernel_shape")) return Status::Error(node.Where(), "kernel_shape is required");
  spec.kernel = r.Ints("kernel_shape");
  spec.strides = r.Ints("strides");
  spec.dilations = r.Ints("dilations");
  spec.pads = r.Ints("pads");
  spec.auto_pad = r.String("auto_pad", "NOTSET");
  spec.ceil_mode = r.Int("ceil_mode", 0) != 0;
  KILN_RETURN_IF_ERROR(r.status());
  if (x.size() < 3 || x.size() > 2 + ref::kMaxSpatialRank)
    return Status::Error(node.Where(), "input X must have rank 3 to 5 ([N, C, spatial...]), got ",
                         DimsToString(x));
  std::vector<int64_t> in_spatial(x.begin() + 2, x.end());
  auto out = ref::ResolveWindow(in_spatial, &spec);
  if (!out.ok()) return out.status().WithContext(node.Where());
  // Windows come from attributes, not from a weight tensor, so a hostile kernel_shape with huge
  // pads could ask for ~2^60 steps; refuse work the reference loops cannot finish.
  constexpr double kMaxWork = double{int64_t{1} << 34};
  double work = static_cast<double>(x[0]) * static_cast<double>(x[1]);
  for (size_t i = 0; i < out->size(); ++i)
    work *= static_cast<double>((*out)[i]) * static_cast<double>(spec.kernel[i]);
  if (work > kMaxWork)
    return Status::Error(node.Where(), "pooling ", DimsToString(x), " with kernel ",
                         DimsToString(spec.kernel), " needs more than 2^34 steps");
  PoolPlan plan;
  plan.geometry.g = ref::MakeGeometry(x[0], x[1], x[1], 1, in_spatial, *out, spec);
  const size_t n = in_spatial.size(), lead = ref::kMaxSpatialRank - n;
  for (size_t i = 0; i < n; ++i) plan.geometry.pad_end[lead + i] = spec.pads[n + i];
  plan.out_dims = {x[0], x[1]};
  plan.out_dims.insert(plan.out_dims.end(), out->begin(), out->end());
  return plan;
}

// [N, C, spatial...] when all but the batch dim are static; [N, C, ?...] when only the rank is.
Status InferPool(ir::Node& node) {
  if (!node.has_input(0)) return Status::Error(node.Where(), "input X is required");
  const ValueType& xt = node.inputs[0]->type;
  ValueType out;
  out.dtype = xt.dtype;
  if (auto xd = StaticDimsBatchAsOne(xt)) {
    // A symbolic batch passes through: every other output dim is known.
    KILN_ASSIGN_OR_RETURN(PoolPlan plan, PlanPool(node, *xd));
    out = ValueType::Of(xt.dtype, plan.out_dims);
    (*out.shape)[0] = (*xt.shape)[0];
  } else if (xt.shape) {
    std::vector<Dim> dims(xt.shape->size(), Dim::Unknown());
    for (size_t i = 0; i < dims.size() && i < 2; ++i) dims[i] = (*xt.shape)[i];
    out.shape = std::move(dims);
  }
  SetOutputType(node, 0, out);
  out.dtype = DType::kInt64;
  SetOutputType(node, 1, out);
  return Status::Ok();
}

Status CheckX(const RunContext& ctx, bool allow_int8) {
  if (ctx.input(0) == nullptr) return ctx.Error("input X is required");
  const DType t = ctx.inputs[0]->dtype();
  if (t == DType::kFloat32 || t == DType::kFloat64) return Status::Ok();
  if (allow_int8 && (t == DType::kInt8 || t == DType::kUInt8)) return Status::Ok();
  return ctx.Error("X must be float", allow_int8 ? ", int8 or uint8" : "", ", got ",
                   DescribeTensor(*ctx.inputs[0]));
}

Status RunMaxPool(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckX(ctx, true));
  const Tensor& x = *ctx.inputs[0];
  KILN_ASSIGN_OR_RETURN(PoolPlan plan, PlanPool(ctx.node, x.dims()));
  ir::AttrReader r(ctx.node);
  const int64_t storage_order = r.Int("storage_order", 0);
  KILN_RETURN_IF_ERROR(r.status());
  if (storage_order != 0 && storage_order != 1)
    return ctx.Error("storage_order must be 0 or 1, got ", storage_order);
  KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::Make(x.dtype(), plan.out_dims, ctx.node.Where() + "Y"));
  const bool want_indices = ctx.node.has_output(1);
  Tensor indices = want_indices ? Tensor(DType::kInt64, plan.out_dims) : Tensor();
  int64_t* idx = want_indices ? indices.data<int64_t>() : nullptr;
  switch (x.dtype()) {
    case DType::kFloat32:
      ref::MaxPool(plan.geometry, x.data<float>(), y.data<float>(), idx, storage_order == 1);
      break;
    case DType::kFloat64:
      ref::MaxPool(plan.geometry, x.data<double>(), y.data<double>(), idx, storage_order == 1);
      break;
    case DType::kInt8:
      ref::MaxPool(plan.geometry, x.data<int8_t>(), y.data<int8_t>(), idx, storage_order == 1);
      break;
    default:
      ref::MaxPool(plan.geometry, x.data<uint8_t>(), y.data<uint8_t>(), idx, storage_order == 1);
      break;
  }
  ctx.outputs[0] = std::move(y);
  if (want_indices) ctx.outputs[1] = std::move(indices);
  return Status::Ok();
}

Status RunAveragePool(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckX(ctx, false));
  const Tensor& x = *ctx.inputs[0];
  KILN_ASSIGN_OR_RETURN(PoolPlan plan, PlanPool(ctx.node, x.dims()));
  ir::AttrReader r(ctx.node);
  const bool include_pad = r.Int("count_include_pad", 0) != 0;
  KILN_RETURN_IF_ERROR(r.status());
  KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::Make(x.dtype(), plan.out_dims, ctx.node.Where() + "Y"));
  KILN_DISPATCH_FLOAT(x.dtype(), T, return ctx.Error("unsupported type"),
                      ref::AveragePool(plan.geometry, x.data<T>(), y.data<T>(), include_pad));
  ctx.outputs[0] = std::move(y);
  return Status::Ok();
}

Expected<double> ReadP(const RunContext& ctx) {
  ir::AttrReader r(ctx.node);
  const int64_t p = r.Int("p", 2);
  KILN_RETURN_IF_ERROR(r.status());
  if (p < 1 || p > 1000) return ctx.Error("p must be in [1, 1000], got ", p);
  return static_cast<double>(p);
}

Status RunLpPool(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckX(ctx, false));
  const Tensor& x = *ctx.inputs[0];
  KILN_ASSIGN_OR_RETURN(double p, ReadP(ctx));
  KILN_ASSIGN_OR_RETURN(PoolPlan plan, PlanPool(ctx.node, x.dims()));
  KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::Make(x.dtype(), plan.out_dims, ctx.node.Where() + "Y"));
  KILN_DISPATCH_FLOAT(x.dtype(), T, return ctx.Error("unsupported type"),
                      ref::LpPool(plan.geometry, x.data<T>(), y.data<T>(), p));
  ctx.outputs[0] = std::move(y);
  return Status::Ok();
}

// Global pools: [N, C, 1, 1...] for X of rank >= 3.
Status InferGlobalPool(ir::Node& node) {
  if (!node.has_input(0)) return Status::Error(node.Where(), "input X is required");
  const ValueType& xt = node.inputs[0]->type;
  ValueType out;
  out.dtype = xt.dtype;
  if (xt.shape) {
    if (xt.shape->size() < 3)
      return Status::Error(node.Where(), "input X must have rank >= 3, got ", xt.ToString());
    std::vector<Dim> dims(xt.shape->size(), Dim::Static(1));
    dims[0] = (*xt.shape)[0];
    dims[1] = (*xt.shape)[1];
    out.shape = std::move(dims);
  }
  SetOutputType(node, 0, out);
  return Status::Ok();
}

Status RunGlobalPool(RunContext& ctx, ref::GlobalPoolKind kind) {
  KILN_RETURN_IF_ERROR(CheckX(ctx, false));
  const Tensor& x = *ctx.inputs[0];
  double p = 2;
  if (kind == ref::GlobalPoolKind::kLp) {
    KILN_ASSIGN_OR_RETURN(p, ReadP(ctx));
  }
  if (x.rank() < 3) return ctx.Error("input X must have rank >= 3, got ", DescribeTensor(x));
  std::vector<int64_t> out_dims(x.rank(), 1);
  out_dims[0] = x.dim(0);
  out_dims[1] = x.dim(1);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t plane_size = planes == 0 ? 0 : x.numel() / planes;
  if (plane_size == 0 && planes > 0 && kind != ref::GlobalPoolKind::kLp)
    return ctx.Error("cannot pool over an empty spatial extent ", DescribeTensor(x));
  Tensor y(x.dtype(), out_dims);
  KILN_DISPATCH_FLOAT(x.dtype(), T, return ctx.Error("unsupported type"),
                      ref::GlobalPool(kind, planes, plane_size, x.data<T>(), y.data<T>(), p));
  ctx.outputs[0] = std::move(y);
  return Status::Ok();
}

Status RunGlobalAveragePool(RunContext& ctx) {
  return RunGlobalPool(ctx, ref::GlobalPoolKind::kAverage);
}
Status RunGlobalMaxPool(RunContext& ctx) { return RunGlobalPool(ctx, ref::GlobalPoolKind::kMax); }
Status RunGlobalLpPool(RunContext& ctx) { return RunGlobalPool(ctx, ref::GlobalPoolKind::kLp); }

// MaxUnpool's default output: each spatial dim (in - 1) * stride + kernel - pads.
Expected<std::vector<int64_t>> UnpoolShape(const ir::Node& node, const std::vector<int64_t>& x) {
  ir::AttrReader r(node);
  std::vector<int64_t> kernel = r.Ints("kernel_shape"), strides = r.Ints("strides"),
                       pads = r.Ints("pads");
  KILN_RETURN_IF_ERROR(r.status());
  if (x.size() < 3) return Status::Error(node.Where(), "X must have rank >= 3");
  const size_t n = x.size() - 2;
  if (strides.empty()) strides.assign(n, 1);
  if (pads.empty()) pads.assign(2 * n, 0);
  if (kernel.size() != n || strides.size() != n || pads.size() != 2 * n)
    return Status::Error(node.Where(), "kernel_shape, strides and pads must have ", n, ", ", n,
                         " and ", 2 * n, " entries");
  std::vector<int64_t> out = {x[0], x[1]};
  constexpr int64_t kLimit = int64_t{1} << 30;
  for (size_t i = 0; i < n; ++i) {
    if (kernel[i] < 1 || kernel[i] > kLimit || strides[i] < 1 || strides[i] > kLimit ||
        pads[i] < 0 || pads[i] > kLimit || pads[i + n] < 0 || pads[i + n] > kLimit ||
        x[i + 2] > kLimit)
      return Status::Error(node.Where(), "kernel_shape, strides or pads out of range");
    const int64_t d = (x[i + 2] - 1) * strides[i] + kernel[i] - pads[i] - pads[i + n];
    if (d < 0) return Status::Error(node.Where(), "the pads make output dim ", i, " negative");
    out.push_back(d);
  }
  return out;
}

Status InferMaxUnpool(ir::Node& node) {
  if (!node.has_input(0)) return Status::Error(node.Where(), "input X is required");
  const ValueType& xt = node.inputs[0]->type;
  ValueType out;
  out.dtype = xt.dtype;
  if (const Tensor* shape = ConstantInput(node, 2)) {
    KILN_ASSIGN_OR_RETURN(auto dims, shape->ToInt64Vector(node.Where() + "output_shape"));
    out = ValueType::Of(xt.dtype, dims);
  } else if (!node.has_input(2) && xt.has_static_shape()) {
    KILN_ASSIGN_OR_RETURN(auto dims, UnpoolShape(node, xt.static_dims()));
    out = ValueType::Of(xt.dtype, dims);
  } else if (xt.shape) {
    out.shape = std::vector<Dim>(xt.shape->size(), Dim::Unknown());
  }
  SetOutputType(node, 0, out);
  return Status::Ok();
}

Status RunMaxUnpool(RunContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckX(ctx, false));
  const Tensor& x = *ctx.inputs[0];
  const Tensor* ind = ctx.input(1);
  if (ind == nullptr || ind->dtype() != DType::kInt64 || ind->dims() != x.dims())
    return ctx.Error("I must be int64 with X's shape ", DimsToString(x.dims()));
  KILN_ASSIGN_OR_RETURN(const std::vector<int64_t> natural, UnpoolShape(ctx.node, x.dims()));
  std::vector<int64_t> dims = natural;
  const int64_t* idx = ind->data<int64_t>();
  std::vector<int64_t> remapped;
  if (const Tensor* shape = ctx.input(2)) {
    KILN_ASSIGN_OR_RETURN(dims, shape->ToInt64Vector(ctx.node.Where() + "output_shape"));
    if (dims.size() != x.dims().size() || dims[0] != x.dim(0) || dims[1] != x.dim(1))
      return ctx.Error("output_shape ", DimsToString(dims), " must keep X's rank, N and C ",
                       DimsToString(x.dims()));
    KILN_RETURN_IF_ERROR(CheckedNumel(dims, ctx.node.Where() + "output_shape").status());
    if (dims != natural) {
      // Indices address the natural unpooled shape (as MaxPool produced them); each keeps its
      // coordinates in the requested shape.
      KILN_ASSIGN_OR_RETURN(int64_t natural_numel, CheckedNumel(natural, ctx.node.Where()));
      remapped.resize(x.numel());
      for (int64_t i = 0; i < x.numel(); ++i) {
        int64_t rest = idx[i], out = 0, scale = 1;
        if (rest < 0 || rest >= natural_numel)
          return ctx.Error("I: index ", rest, " is outside the unpooled shape ",
                           DimsToString(natural));
        for (size_t d = dims.size(); d-- > 0;) {
          const int64_t coord = rest % natural[d];
          rest /= natural[d];
          if (coord >= dims[d])
            return ctx.Error("I: index ", idx[i], " falls outside output_shape ",
                             DimsToString(dims));
          out += coord * scale;
          scale *= dims[d];
        }
        remapped[i] = out;
      }
      idx = remapped.data();
    }
  }
  KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::Make(x.dtype(), dims, ctx.node.Where() + "Y"));
  Status st;
  KILN_DISPATCH_FLOAT(x.dtype(), T, return ctx.Error("unsupported type"),
                      st = ref::MaxUnpool(x.data<T>(), idx, x.numel(), y.data<T>(), y.numel()));
  if (!st.ok()) return st.WithContext(ctx.node.Where() + "I: ");
  ctx.outputs[0] = std::move(y);
  return Status::Ok();
}

const OpDef kPoolOps[] = {
    {"", "MaxPool", InferPool, RunMaxPool, 1, true},
    {"", "AveragePool", InferPool, RunAveragePool, 1, true},
    {"", "LpPool", InferPool, RunLpPool, 1, true},
    {"", "GlobalAveragePool", InferGlobalPool, RunGlobalAveragePool, 1, true},
    {"", "GlobalMaxPool", InferGlobalPool, RunGlobalMaxPool, 1, true},
    {"", "GlobalLpPool", InferGlobalPool, RunGlobalLpPool, 1, true},
    {"", "MaxUnpool", InferMaxUnpool, RunMaxUnpool, 9, true},
};

}  // namespace

std::span<const OpDef> PoolOps() { return kPoolOps; }

}  // namespace kiln::ops
