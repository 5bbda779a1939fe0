// Gemm, MatMul, MatMulInteger, QLinearMatMul and Einsum: checks, shape inference and the binding to
// kernels/ref/matmul.h and kernels/ref/einsum.h.
#include "kernels/ref/matmul.h"

#include <cmath>

#include "kernels/ref/einsum.h"
#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

// ---- MatMul family ----

// Output type of a numpy matmul: exact when both shapes are static, else the rank with M and N.
Expected<ValueType> InferMatMulType(const ir::Node& node, size_t ai, size_t bi, DType out_type) {
  if (!node.has_input(ai) || !node.has_input(bi))
    return Status::Error(node.Where(), "inputs A and B are required");
  const ValueType& at = node.inputs[ai]->type;
  const ValueType& bt = node.inputs[bi]->type;
  ValueType out;
  out.dtype = out_type;
  if (at.has_static_shape() && bt.has_static_shape()) {
    std::vector<int64_t> dims;
    auto g = ref::PlanMatMul(at.static_dims(), bt.static_dims(), &dims);
    if (!g.ok()) return g.status().WithContext(node.Where());
    return ValueType::Of(out_type, dims);
  }
  if (!at.shape || !bt.shape) return out;
  const auto& a = *at.shape;
  const auto& b = *bt.shape;
  if (a.empty() || b.empty())
    return Status::Error(node.Where(), "MatMul operands must have rank >= 1");
  const size_t batch = std::max(a.size() > 2 ? a.size() - 2 : 0, b.size() > 2 ? b.size() - 2 : 0);
  std::vector<Dim> dims(batch, Dim::Unknown());
  for (size_t i = 0; i < batch; ++i) {
    // A batch dim is known when both sides agree or only one side has it.
    const int64_t ao =
        static_cast<int64_t>(i) - static_cast<int64_t>(batch) + static_cast<int64_t>(a.size()) - 2;
    const int64_t bo =
        static_cast<int64_t>(i) - static_cast<int64_t>(batch) + static_cast<int64_t>(b.size()) - 2;
    const Dim* da = a.size() > 2 && ao >= 0 ? &a[ao] : nullptr;
    const Dim* db = b.size() > 2 && bo >= 0 ? &b[bo] : nullptr;
    if (da && db && *da == *db && (da->is_static() || !da->symbol.empty()))
      dims[i] = *da;
    else if (da && !db)
      dims[i] = *da;
    else if (db && !da)
      dims[i] = *db;
  }
  if (a.size() > 1) dims.push_back(a[a.size() - 2]);
  if (b.size() > 1) dims.push_back(b.back());
  out.shape = std::move(dims);
  return out;
}

Status InferMatMul(ir::Node& node) {
  if (!node.has_input(0)) return Status::Error(node.Where(), "input A is required");
  KILN_ASSIGN_OR_RETURN(ValueType t, InferMatMulType(node, 0, 1, node.inputs[0]->type.dtype));
  SetOutputType(node, 0, t);
  return Status::Ok();
}

Status RunMatMul(RunContext& ctx) {
  const Tensor* a = ctx.input(0);
  const Tensor* b = ctx.input(1);
  if (a == nullptr || b == nullptr) return ctx.Error("inputs A and B are required");
  if (a->dtype() != b->dtype())
    return ctx.Error("A and B must have one type, got ", DescribeTensor(*a), " and ",
                     DescribeTensor(*b));
  std::vector<int64_t> dims;
  auto g = ref::PlanMatMul(a->dims(), b->dims(), &dims);
  if (!g.ok()) return g.status().WithContext(ctx.node.Where());
  KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::Make(a->dtype(), dims, ctx.node.Where() + "Y"));
  KILN_DISPATCH_NUMERIC(a->dtype(), T, return ctx.Error("unsupported type ", DTypeName(a->dtype())),
                        ref::MatMul<T>(*g, a->data<T>(), b->data<T>(), y.data<T>()));
  ctx.outputs[0] = std::move(y);
  return Status::Ok();
}

bool Is8Bit(DType t) { return t == DType::kUInt8 || t == DType::kInt8; }

// A zero point or scale vector: absent is `absent`; one value; or `count` values (1-D).
Expected<std::vector<double>> ReadPerAxis(const RunContext& ctx, size_t i, int64_t count,
                                          double absent, const char* name) {
  const Tensor* t = ctx.input(i);
  if (t == nullptr) return std::vector<double>(count, absent);
  if (t->numel() == 1) return std::vector<double>(count, t->AsDouble(0));
  if (t->numel() == count && t->rank() >= 1) {
    std::vector<double> v(count);
    for (int64_t k = 0; k < count; ++k) v[k] = t->AsDouble(k);
    return v;
  }
  return ctx.Error(name, " must be a scalar or have ", count, " entries, got ", DescribeTensor(*t));
}

std::vector<int32_t> ToInt32(const std::vector<double>& v) {
  return std::vector<int32_t>(v.begin(), v.end());
}

// The int32 product of 8-bit a (input ai, zero point azi) and b (bi, bzi).
Expected<Tensor> IntegerMatMul(const RunContext& ctx, size_t ai, size_t azi, size_t bi, size_t bzi,
                               ref::MatMulGeometry* geometry) {
  const Tensor* a = ctx.input(ai);
  const Tensor* b = ctx.input(bi);
  if (a == nullptr || b == nullptr) return ctx.Error("inputs A and B are required");
  if (!Is8Bit(a->dtype()) || !Is8Bit(b->dtype()))
    return ctx.Error("A and B must be int8 or uint8, got ", DescribeTensor(*a), " and ",
                     DescribeTensor(*b));
  for (auto [zi, t] : {std::pair{azi, a}, std::pair{bzi, b}})
    if (ctx.input(zi) && ctx.input(zi)->dtype() != t->dtype())
      return ctx.Error("zero point ", DescribeTensor(*ctx.input(zi)),
                       " must have its tensor's type ", DTypeName(t->dtype()));
  std::vector<int64_t> dims;
  auto g = ref::PlanMatMul(a->dims(), b->dims(), &dims);
  if (!g.ok()) return g.status().WithContext(ctx.node.Where());
  KILN_ASSIGN_OR_RETURN(auto az, ReadPerAxis(ctx, azi, g->m, 0, "a_zero_point"));
  KILN_ASSIGN_OR_RETURN(auto bz, ReadPerAxis(ctx, bzi, g->n, 0, "b_zero_point"));
  KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::Make(DType::kInt32, dims, ctx.node.Where() + "Y"));
  const auto za = ToInt32(az), zb = ToInt32(bz);
  int32_t* out = y.data<int32_t>();
  const bool as = a->dtype() == DType::kInt8, bs = b->dtype() == DType::kInt8;
  if (!as && !bs)
    ref::MatMulInteger(*g, a->data<uint8_t>(), za, b->data<uint8_t>(), zb, out);
  else if (!as)
    ref::MatMulInteger(*g, a->data<uint8_t>(), za, b->data<int8_t>(), zb, out);
  else if (!bs)
    ref::MatMulInteger(*g, a->data<int8_t>(), za, b->data<uint8_t>(), zb, out);
  else
    ref::MatMulInteger(*g, a->data<int8_t>(), za, b->data<int8_t>(), zb, out);
  *geometry = *g;
  return y;
}

Status InferMatMulInteger(ir::Node& node) {
  KILN_ASSIGN_OR_RETURN(ValueType t, InferMatMulType(node, 0, 1, DType::kInt32));
  SetOutputType(node, 0, t);
  return Status::Ok();
}

Status RunMatMulInteger(RunContext& ctx) {
  ref::MatMulGeometry g;
  KILN_ASSIGN_OR_RETURN(ctx.outputs[0], IntegerMatMul(ctx, 0, 2, 1, 3, &g));
  return Status::Ok();
}

Status InferQLinearMatMul(ir::Node& node) {
  const DType t = node.has_input(7) ? node.inputs[7]->type.dtype : DType::kUInt8;
  KILN_ASSIGN_OR_RETURN(ValueType vt, InferMatMulType(node, 0, 3, t));
  SetOutputType(node, 0, vt);
  return Status::Ok();
}

Status RunQLinearMatMul(RunContext& ctx) {
  ref::MatMulGeometry g;
  KILN_ASSIGN_OR_RETURN(Tensor acc, IntegerMatMul(ctx, 0, 2, 3, 5, &g));
  for (size_t i : {1, 4, 6})
    if (ctx.input(i) == nullptr || ctx.input(i)->dtype() != DType::kFloat32)
      return ctx.Error("scales must be float32 tensors (input ", i, ")");
  KILN_ASSIGN_OR_RETURN(auto as, ReadPerAxis(ctx, 1, g.m, 1, "a_scale"));
  KILN_ASSIGN_OR_RETURN(auto bs, ReadPerAxis(ctx, 4, g.n, 1, "b_scale"));
  KILN_ASSIGN_OR_RETURN(auto ys, ReadPerAxis(ctx, 6, 1, 1, "y_scale"));
  const Tensor* yz_t = ctx.input(7);
  const DType out_type = yz_t ? yz_t->dtype() : DType::kUInt8;
  if (!Is8Bit(out_type)) return ctx.Error("y_zero_point must be int8 or uint8");
  KILN_ASSIGN_OR_RETURN(auto yz, ReadPerAxis(ctx, 7, 1, 0, "y_zero_point"));
  Tensor y(out_type, acc.dims());
  const double lo = out_type == DType::kUInt8 ? 0 : -128,
               hi = out_type == DType::kUInt8 ? 255 : 127;
  const int32_t* a = acc.data<int32_t>();
  for (int64_t i = 0; i < acc.numel(); ++i) {
    const int64_t row = (i / std::max<int64_t>(g.n, 1)) % std::max<int64_t>(g.m, 1);
    const int64_t col = i % std::max<int64_t>(g.n, 1);
    // The multiplier is formed in float, as the ONNX reference does, so ties round alike.
    const float mult =
        static_cast<float>(as[row]) * static_cast<float>(bs[col]) / static_cast<float>(ys[0]);
    const double q = std::clamp(std::nearbyint(static_cast<double>(a[i]) * mult) + yz[0], lo, hi);
    if (out_type == DType::kUInt8)
      y.data<uint8_t>()[i] = static_cast<uint8_t>(q);
    else
      y.data<int8_t>()[i] = static_cast<int8_t>(q);
  }
  ctx.outputs[0] = std::move(y);
  return Status::Ok();
}

// ---- Gemm ----

struct GemmAttrs {
  bool trans_a = false, trans_b = false;
  float alpha = 1, beta = 1;
};

Expected<GemmAttrs> ReadGemmAttrs(const ir::Node& node) {
  ir::AttrReader r(node);
  GemmAttrs a;
  a.trans_a = r.Int("transA", 0) != 0;
  a.trans_b = r.Int("transB", 0) != 0;
  a.alpha = r.Float("alpha", 1.0f);
  a.beta = r.Float("beta", 1.0f);
  KILN_RETURN_IF_ERROR(r.status());
  return a;
}

Status InferGemm(ir::Node& node) {
  if (!node.has_input(0) || !node.has_input(1))
    return Status::Error(node.Where(), "inputs A and B are required");
  KILN_ASSIGN_OR_RETURN(GemmAttrs attrs, ReadGemmAttrs(node));
  const ValueType& at = node.inputs[0]->type;
  const ValueType& bt = node.inputs[1]->type;
  ValueType out;
  out.dtype = at.dtype;
  if (at.shape && bt.shape) {
    if (at.shape->size() != 2 || bt.shape->size() != 2)
      return Status::Error(node.Where(), "A and B must be 2-D, got ", at.ToString(), " and ",
                           bt.ToString());
    out.shape =
        std::vector<Dim>{(*at.shape)[attrs.trans_a ? 1 : 0], (*bt.shape)[attrs.trans_b ? 0 : 1]};
  }
  SetOutputType(node, 0, out);
  return Status::Ok();
}

Status RunGemm(RunContext& ctx) {
  const Tensor* a = ctx.input(0);
  const Tensor* b = ctx.input(1);
  const Tensor* c = ctx.input(2);
  if (a == nullptr || b == nullptr) return ctx.Error("inputs A and B are required");
  KILN_ASSIGN_OR_RETURN(GemmAttrs attrs, ReadGemmAttrs(ctx.node));
  const DType t = a->dtype();
  if ((t != DType::kFloat32 && t != DType::kFloat64) || b->dtype() != t || (c && c->dtype() != t))
    return ctx.Error("A, B and C must be float tensors of one type, got ", DescribeTensor(*a), ", ",
                     DescribeTensor(*b), c ? ", " + DescribeTensor(*c) : "");
  if (a->rank() != 2 || b->rank() != 2)
    return ctx.Error("A and B must be 2-D, got ", DescribeTensor(*a), " and ", DescribeTensor(*b));
  const int64_t m = attrs.trans_a ? a->dim(1) : a->dim(0);
  const int64_t k = attrs.trans_a ? a->dim(0) : a->dim(1);
  const int64_t kb = attrs.trans_b ? b->dim(1) : b->dim(0);
  const int64_t n = attrs.trans_b ? b->dim(0) : b->dim(1);
  if (k != kb)
    return ctx.Error("inner dims differ: op(A) is [", m, ",", k, "] and op(B) is [", kb, ",", n,
                     "]");
  // C broadcasts one way to [M, N]: read through strides, 0 along dims of size 1.
  int64_t c_rs = 0, c_cs = 0;
  if (c != nullptr) {
    const auto& cd = c->dims();
    const int64_t cm = cd.size() == 2 ? cd[0] : 1;
    const int64_t cn = cd.empty() ? 1 : cd.back();
    if (cd.size() > 2 || (cm != 1 && cm != m) || (cn != 1 && cn != n))
      return ctx.Error("C ", DescribeTensor(*c), " does not broadcast to [", m, ",", n, "]");
    c_cs = cn == 1 ? 0 : 1;
    c_rs = cm == 1 ? 0 : cn;
  }
  KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::Make(t, {m, n}, ctx.node.Where() + "Y"));
  KILN_DISPATCH_FLOAT(
      t, T, return ctx.Error("unsupported type"),
      ref::Gemm<T>(m, k, n, a->data<T>(), attrs.trans_a, b->data<T>(), attrs.trans_b, attrs.alpha,
                   c ? c->data<T>() : nullptr, c_rs, c_cs, attrs.beta, y.data<T>()));
  ctx.outputs[0] = std::move(y);
  return Status::Ok();
}

// ---- Einsum ----

Expected<std::string> ReadEquation(const ir::Node& node) {
  ir::AttrReader r(node);
  if (!r.Has("equation")) return Status::Error(node.Where(), "attribute 'equation' is required");
  std::string eq = r.String("equation", "");
  KILN_RETURN_IF_ERROR(r.status());
  return eq;
}

Status InferEinsum(ir::Node& node) {
  KILN_ASSIGN_OR_RETURN(std::string eq, ReadEquation(node));
  if (node.inputs.empty() || !node.has_input(0))
    return Status::Error(node.Where(), "Einsum needs at least one input");
  ValueType out;
  out.dtype = node.inputs[0]->type.dtype;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!node.has_input(i) || !node.inputs[i]->type.has_static_shape()) {
      SetOutputType(node, 0, out);
      return Status::Ok();
    }
    shapes.push_back(node.inputs[i]->type.static_dims());
  }
  auto plan = ref::PlanEinsum(eq, shapes);
  if (!plan.ok()) return plan.status().WithContext(node.Where());
  SetOutputType(node, 0, ValueType::Of(out.dtype, plan->out_dims));
  return Status::Ok();
}

Status RunEinsum(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string eq, ReadEquation(ctx.node));
  if (ctx.num_inputs() == 0) return ctx.Error("Einsum needs at least one input");
  std::vector<std::vector<int64_t>> shapes;
  const DType t = ctx.inputs[0] ? ctx.inputs[0]->dtype() : DType::kUndefined;
  for (const Tensor* in : ctx.inputs) {
    if (in == nullptr || in->dtype() != t)
      return ctx.Error("all Einsum inputs must be present and of one type");
    shapes.push_back(in->dims());
  }
  auto plan = ref::PlanEinsum(eq, shapes);
  if (!plan.ok()) return plan.status().WithContext(ctx.node.Where());
  KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::Make(t, plan->out_dims, ctx.node.Where() + "Y"));
  auto run = [&](auto tag) {
    using T = decltype(tag);
    std::vector<const T*> ops;
    for (const Tensor* in : ctx.inputs) ops.push_back(in->data<T>());
    ref::Einsum<T>(*plan, ops, y.data<T>());
  };
  switch (t) {
    case DType::kFloat32:
      run(float{});
      break;
    case DType::kFloat64:
      run(double{});
      break;
    case DType::kInt32:
      run(int32_t{});
      break;
    case DType::kInt64:
      run(int64_t{});
      break;
    case DType::kUInt32:
      run(uint32_t{});
      break;
    case DType::kUInt64:
      run(uint64_t{});
      break;
    default:
      return ctx.Error("unsupported type ", DTypeName(t));
  }
  ctx.outputs[0] = std::move(y);
  return Status::Ok();
}

const OpDef kMatMulOps[] = {
    {"", "Gemm", InferGemm, RunGemm, 1, true},
    {"", "MatMul", InferMatMul, RunMatMul, 1, true},
    {"", "MatMulInteger", InferMatMulInteger, RunMatMulInteger, 10, false},
    {"", "QLinearMatMul", InferQLinearMatMul, RunQLinearMatMul, 10, false},
    {"", "Einsum", InferEinsum, RunEinsum, 12, true},
};

}  // namespace

std::span<const OpDef> MatMulOps() { return kMatMulOps; }

}  // namespace kiln::ops
