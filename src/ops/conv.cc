// Conv, ConvTranspose, ConvInteger and QLinearConv: attributes, checks, shape inference, and the
// binding to the reference kernels in kernels/ref/conv.h.
#include "kernels/ref/conv.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

struct ConvAttrs {
  ref::WindowSpec spec;
  int64_t group = 1;
  bool has_kernel_shape = false;
  std::vector<int64_t> output_padding, output_shape;  // ConvTranspose only
};

Status ReadConvAttrs(const ir::Node& node, ConvAttrs* a) {
  ir::AttrReader r(node);
  a->spec.kernel = r.Ints("kernel_shape");
  a->has_kernel_shape = r.Has("kernel_shape");
  a->spec.strides = r.Ints("strides");
  a->spec.dilations = r.Ints("dilations");
  a->spec.pads = r.Ints("pads");
  a->spec.auto_pad = r.String("auto_pad", "NOTSET");
  a->group = r.Int("group", 1);
  a->output_padding = r.Ints("output_padding");
  a->output_shape = r.Ints("output_shape");
  KILN_RETURN_IF_ERROR(r.status());
  if (a->group < 1) return Status::Error(node.Where(), "group must be >= 1, got ", a->group);
  return Status::Ok();
}

struct ConvPlan {
  ref::ConvGeometry geometry;
  std::vector<int64_t> out_dims;
};

// Checks x and w against each other and the attributes and computes the output shape. For
// ConvTranspose w is [C, M/group, k...], otherwise [M, C/group, k...].
Expected<ConvPlan> PlanConv(const ir::Node& node, const std::vector<int64_t>& x,
                            const std::vector<int64_t>& w, bool transposed) {
  ConvAttrs a;
  KILN_RETURN_IF_ERROR(ReadConvAttrs(node, &a));
  const int64_t rank = static_cast<int64_t>(x.size());
  if (rank < 3 || rank > 2 + ref::kMaxSpatialRank)
    return Status::Error(node.Where(), "input X must have rank 3 to 5 ([N, C, spatial...]), got ",
                         DimsToString(x));
  if (static_cast<int64_t>(w.size()) != rank)
    return Status::Error(node.Where(), "weight W ", DimsToString(w), " must have the rank of X ",
                         DimsToString(x));
  const int64_t n = rank - 2, c = x[1];
  std::vector<int64_t> in_spatial(x.begin() + 2, x.end()), k_spatial(w.begin() + 2, w.end());
  if (a.has_kernel_shape && a.spec.kernel != k_spatial)
    return Status::Error(node.Where(), "kernel_shape ", DimsToString(a.spec.kernel),
                         " does not match weight W ", DimsToString(w));
  a.spec.kernel = k_spatial;
  // group <= C also keeps products like W's dim 1 * group from overflowing.
  if (c % a.group != 0 || a.group > std::max<int64_t>(c, 1))
    return Status::Error(node.Where(), "X has ", c, " channels, not a multiple of group ", a.group);
  int64_t m;
  if (!transposed) {
    m = w[0];
    if (w[1] != c / a.group)
      return Status::Error(node.Where(), "weight W ", DimsToString(w), " expects ", w[1], " x ",
                           a.group, " (group) input channels, but X ", DimsToString(x), " has ", c);
    if (m % a.group != 0)
      return Status::Error(node.Where(), "W has ", m, " output channels, not a multiple of group ",
                           a.group);
    auto out = ref::ResolveWindow(in_spatial, &a.spec);
    if (!out.ok()) return out.status().WithContext(node.Where());
    ConvPlan plan;
    plan.geometry = ref::MakeGeometry(x[0], c, m, a.group, in_spatial, *out, a.spec);
    plan.out_dims = {x[0], m};
    plan.out_dims.insert(plan.out_dims.end(), out->begin(), out->end());
    return plan;
  }

  if (w[0] != c)
    return Status::Error(node.Where(), "weight W ", DimsToString(w), " must have X's ", c,
                         " input channels in dim 0");
  m = w[1] * a.group;
  // The window attributes are validated as a forward conv over the output would be.
  ref::WindowSpec& s = a.spec;
  if (s.strides.empty()) s.strides.assign(n, 1);
  if (s.dilations.empty()) s.dilations.assign(n, 1);
  if (s.pads.empty()) s.pads.assign(2 * n, 0);
  if (a.output_padding.empty()) a.output_padding.assign(n, 0);
  if (static_cast<int64_t>(a.output_shape.size()) == n + 2)  // older exporters include N and C
    a.output_shape.erase(a.output_shape.begin(), a.output_shape.begin() + 2);
  if (static_cast<int64_t>(s.strides.size()) != n ||
      static_cast<int64_t>(s.dilations.size()) != n ||
      static_cast<int64_t>(s.pads.size()) != 2 * n ||
      static_cast<int64_t>(a.output_padding.size()) != n ||
      (!a.output_shape.empty() && static_cast<int64_t>(a.output_shape.size()) != n))
    return Status::Error(node.Where(), "strides, dilations, output_padding and output_shape need ",
                         n, " entries and pads ", 2 * n);
  constexpr int64_t kLimit = int64_t{1} << 30;
  auto bad = [&](int64_t v, int64_t lo) { return v < lo || v > kLimit; };
  const std::string& ap = s.auto_pad;
  if (ap != "NOTSET" && ap != "VALID" && ap != "SAME_UPPER" && ap != "SAME_LOWER" && !ap.empty())
    return Status::Error(node.Where(), "unknown auto_pad '", ap, "'");
  std::vector<int64_t> out(n);
  for (int64_t i = 0; i < n; ++i) {
    if (bad(s.kernel[i], 1) || bad(s.strides[i], 1) || bad(s.dilations[i], 1) ||
        bad(s.pads[i], 0) || bad(s.pads[i + n], 0) || bad(a.output_padding[i], 0) ||
        bad(in_spatial[i], 0) || (!a.output_shape.empty() && bad(a.output_shape[i], 0)))
      return Status::Error(node.Where(),
                           "a kernel size, stride, dilation, pad, output_padding or "
                           "output_shape entry is out of range");
    if (a.output_padding[i] >= std::max(s.strides[i], s.dilations[i]))
      return Status::Error(node.Where(), "output_padding ", DimsToString(a.output_padding),
                           " must be smaller than the stride or the dilation");
    const int64_t dk = (s.kernel[i] - 1) * s.dilations[i] + 1;
    const int64_t full = s.strides[i] * (in_spatial[i] - 1) + a.output_padding[i] + dk;
    if (!a.output_shape.empty() || ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      out[i] = !a.output_shape.empty() ? a.output_shape[i] : in_spatial[i] * s.strides[i];
      // A negative total (a requested output larger than the scatter covers) is zeros at the end.
      const int64_t total = full - out[i];
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      s.pads[i] = ap == "SAME_UPPER" ? half : total - half;
      s.pads[i + n] = total - s.pads[i];
    } else {
      if (ap == "VALID") s.pads[i] = s.pads[i + n] = 0;
      out[i] = full - s.pads[i] - s.pads[i + n];
    }
    if (out[i] < 0)
      return Status::Error(node.Where(), "the pads make output dim ", i, " negative (", out[i],
                           ")");
  }
  ConvPlan plan;
  plan.geometry = ref::MakeGeometry(x[0], c, m, a.group, in_spatial, out, s);
  plan.out_dims = {x[0], m};
  plan.out_dims.insert(plan.out_dims.end(), out.begin(), out.end());
  return plan;
}

// Infers [N, M, spatial...]; spatial dims are computed when X's and W's shapes are static.
Status InferConvShape(ir::Node& node, DType out_type, size_t x_index, size_t w_index,
                      bool transposed) {
  if (!node.has_input(x_index) || !node.has_input(w_index))
    return Status::Error(node.Where(), "inputs X and W are required");
  const ValueType& xt = node.inputs[x_index]->type;
  const ValueType& wt = node.inputs[w_index]->type;
  ValueType out;
  out.dtype = out_type;
  if (auto xd = StaticDimsBatchAsOne(xt); xd && wt.has_static_shape()) {
    // A symbolic batch passes through: every other output dim is known.
    KILN_ASSIGN_OR_RETURN(ConvPlan plan, PlanConv(node, *xd, wt.static_dims(), transposed));
    out = ValueType::Of(out_type, plan.out_dims);
    (*out.shape)[0] = (*xt.shape)[0];
  } else if (xt.shape) {
    std::vector<Dim> dims(xt.shape->size(), Dim::Unknown());
    if (!dims.empty()) dims[0] = (*xt.shape)[0];
    if (dims.size() > 1 && wt.shape && wt.shape->size() == dims.size() && !transposed)
      dims[1] = (*wt.shape)[0];
    out.shape = std::move(dims);
  }
  SetOutputType(node, 0, out);
  return Status::Ok();
}

Status CheckFloatInputs(const RunContext& ctx, std::initializer_list<size_t> idx) {
  const DType t = ctx.inputs[0]->dtype();
  if (t != DType::kFloat32 && t != DType::kFloat64)
    return ctx.Error("X must be a float tensor, got ", DTypeName(t));
  for (size_t i : idx)
    if (ctx.input(i) && ctx.input(i)->dtype() != t)
      return ctx.Error("input ", i, " is ", DTypeName(ctx.input(i)->dtype()), " but X is ",
                       DTypeName(t));
  return Status::Ok();
}

Status CheckBias(const RunContext& ctx, size_t i, int64_t m) {
  const Tensor* b = ctx.input(i);
  if (b != nullptr && (b->rank() != 1 || b->dim(0) != m))
    return ctx.Error("bias B must be [", m, "], got ", DescribeTensor(*b));
  return Status::Ok();
}

Status InferConv(ir::Node& node) {
  if (!node.has_input(0)) return Status::Error(node.Where(), "input X is required");
  return InferConvShape(node, node.inputs[0]->type.dtype, 0, 1, false);
}

Status InferConvTranspose(ir::Node& node) {
  if (!node.has_input(0)) return Status::Error(node.Where(), "input X is required");
  return InferConvShape(node, node.inputs[0]->type.dtype, 0, 1, true);
}

Status RunConvLike(RunContext& ctx, bool transposed) {
  if (ctx.input(0) == nullptr || ctx.input(1) == nullptr) return ctx.Error("X and W are required");
  KILN_RETURN_IF_ERROR(CheckFloatInputs(ctx, {1, 2}));
  const Tensor &x = *ctx.inputs[0], &w = *ctx.inputs[1];
  KILN_ASSIGN_OR_RETURN(ConvPlan plan, PlanConv(ctx.node, x.dims(), w.dims(), transposed));
  KILN_RETURN_IF_ERROR(CheckBias(ctx, 2, plan.geometry.out_channels));
  KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::Make(x.dtype(), plan.out_dims, ctx.node.Where() + "Y"));
  const Tensor* b = ctx.input(2);
  KILN_DISPATCH_FLOAT(x.dtype(), T, return ctx.Error("unsupported type"), {
    const T* bias = b ? b->data<T>() : nullptr;
    if (transposed)
      ref::ConvTranspose<T>(plan.geometry, x.data<T>(), w.data<T>(), bias, y.data<T>());
    else
      ref::Conv<T>(plan.geometry, x.data<T>(), w.data<T>(), bias, y.data<T>());
  });
  ctx.outputs[0] = std::move(y);
  return Status::Ok();
}

Status RunConv(RunContext& ctx) { return RunConvLike(ctx, false); }
Status RunConvTranspose(RunContext& ctx) { return RunConvLike(ctx, true); }

bool Is8Bit(DType t) { return t == DType::kUInt8 || t == DType::kInt8; }

// A zero point: absent means 0; one value, or (when per_channel > 0) one per output channel.
Expected<std::vector<int32_t>> ReadZeroPoints(const RunContext& ctx, size_t i, DType expect,
                                              int64_t per_channel, const char* name) {
  const Tensor* t = ctx.input(i);
  if (t == nullptr) return std::vector<int32_t>(std::max<int64_t>(per_channel, 1), 0);
  if (t->dtype() != expect)
    return ctx.Error(name, " must be ", DTypeName(expect), " like its tensor, got ",
                     DescribeTensor(*t));
  if (t->numel() == 1) {
    return std::vector<int32_t>(std::max<int64_t>(per_channel, 1),
                                static_cast<int32_t>(t->AsInt64(0)));
  }
  if (per_channel > 0 && t->rank() == 1 && t->numel() == per_channel) {
    std::vector<int32_t> v(per_channel);
    for (int64_t k = 0; k < per_channel; ++k) v[k] = static_cast<int32_t>(t->AsInt64(k));
    return v;
  }
  return ctx.Error(name, " must be a scalar", per_channel > 0 ? " or one per output channel" : "",
                   ", got ", DescribeTensor(*t));
}

// Runs the integer convolution of inputs x_i (zero point x_i+1... as given) into an int32 tensor.
Expected<Tensor> IntegerConv(RunContext& ctx, size_t xi, size_t xzi, size_t wi, size_t wzi) {
  const Tensor* x = ctx.input(xi);
  const Tensor* w = ctx.input(wi);
  if (x == nullptr || w == nullptr) return ctx.Error("x and w are required");
  if (!Is8Bit(x->dtype()) || !Is8Bit(w->dtype()))
    return ctx.Error("x and w must be int8 or uint8, got ", DescribeTensor(*x), " and ",
                     DescribeTensor(*w));
  KILN_ASSIGN_OR_RETURN(ConvPlan plan, PlanConv(ctx.node, x->dims(), w->dims(), false));
  const int64_t m = plan.geometry.out_channels;
  KILN_ASSIGN_OR_RETURN(auto xz, ReadZeroPoints(ctx, xzi, x->dtype(), 0, "x_zero_point"));
  KILN_ASSIGN_OR_RETURN(auto wz, ReadZeroPoints(ctx, wzi, w->dtype(), m, "w_zero_point"));
  KILN_ASSIGN_OR_RETURN(Tensor y,
                        Tensor::Make(DType::kInt32, plan.out_dims, ctx.node.Where() + "y"));
  const auto& g = plan.geometry;
  int32_t* out = y.data<int32_t>();
  const bool xs = x->dtype() == DType::kInt8, ws = w->dtype() == DType::kInt8;
  if (!xs && !ws)
    ref::ConvInteger(g, x->data<uint8_t>(), xz[0], w->data<uint8_t>(), wz, out);
  else if (!xs && ws)
    ref::ConvInteger(g, x->data<uint8_t>(), xz[0], w->data<int8_t>(), wz, out);
  else if (xs && !ws)
    ref::ConvInteger(g, x->data<int8_t>(), xz[0], w->data<uint8_t>(), wz, out);
  else
    ref::ConvInteger(g, x->data<int8_t>(), xz[0], w->data<int8_t>(), wz, out);
  return y;
}

Status InferConvInteger(ir::Node& node) { return InferConvShape(node, DType::kInt32, 0, 1, false); }

Status RunConvInteger(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(ctx.outputs[0], IntegerConv(ctx, 0, 2, 1, 3));
  return Status::Ok();
}

Status InferQLinearConv(ir::Node& node) {
  DType t = node.has_input(7)   ? node.inputs[7]->type.dtype
            : node.has_input(0) ? node.inputs[0]->type.dtype
                                : DType::kUndefined;
  return InferConvShape(node, t, 0, 3, false);
}

// Scales: a positive finite float scalar, or (per_channel > 0) one per output channel.
Expected<std::vector<double>> ReadScales(const RunContext& ctx, size_t i, int64_t per_channel,
                                         const char* name) {
  const Tensor* t = ctx.input(i);
  if (t == nullptr || t->dtype() != DType::kFloat32)
    return ctx.Error(name, " must be a float32 tensor");
  std::vector<double> v;
  if (t->numel() == 1) {
    v.assign(std::max<int64_t>(per_channel, 1), t->data<float>()[0]);
  } else if (per_channel > 0 && t->rank() == 1 && t->numel() == per_channel) {
    v.assign(t->data<float>(), t->data<float>() + per_channel);
  } else {
    return ctx.Error(name, " must be a scalar", per_channel > 0 ? " or one per output channel" : "",
                     ", got ", DescribeTensor(*t));
  }
  return v;
}

Status RunQLinearConv(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Tensor acc, IntegerConv(ctx, 0, 2, 3, 5));
  const int64_t m = acc.dim(1);
  KILN_ASSIGN_OR_RETURN(auto xs, ReadScales(ctx, 1, 0, "x_scale"));
  KILN_ASSIGN_OR_RETURN(auto ws, ReadScales(ctx, 4, m, "w_scale"));
  KILN_ASSIGN_OR_RETURN(auto ys, ReadScales(ctx, 6, 0, "y_scale"));
  const Tensor* yz_t = ctx.input(7);
  const DType out_type = yz_t ? yz_t->dtype() : ctx.inputs[0]->dtype();
  if (!Is8Bit(out_type)) return ctx.Error("y_zero_point must be int8 or uint8");
  KILN_ASSIGN_OR_RETURN(auto yz, ReadZeroPoints(ctx, 7, out_type, 0, "y_zero_point"));
  const Tensor* b = ctx.input(8);
  if (b != nullptr && (b->dtype() != DType::kInt32 || b->rank() != 1 || b->dim(0) != m))
    return ctx.Error("bias B must be int32[", m, "], got ", DescribeTensor(*b));
  Tensor y(out_type, acc.dims());
  const int64_t plane = acc.numel() / std::max<int64_t>(1, acc.dim(0) * m);
  const double lo = out_type == DType::kUInt8 ? 0 : -128,
               hi = out_type == DType::kUInt8 ? 255 : 127;
  const int32_t* a = acc.data<int32_t>();
  for (int64_t i = 0; i < acc.numel(); ++i) {
    const int64_t c = (i / plane) % m;
    // The multiplier is formed in float as the ONNX reference does, so ties round alike.
    const float mult =
        static_cast<float>(xs[0]) * static_cast<float>(ws[c]) / static_cast<float>(ys[0]);
    const double v =
        static_cast<double>(static_cast<int64_t>(a[i]) + (b ? b->data<int32_t>()[c] : 0));
    const double q = std::clamp(std::nearbyint(v * mult) + yz[0], lo, hi);
    if (out_type == DType::kUInt8)
      y.data<uint8_t>()[i] = static_cast<uint8_t>(q);
    else
      y.data<int8_t>()[i] = static_cast<int8_t>(q);
  }
  ctx.outputs[0] = std::move(y);
  return Status::Ok();
}

const OpDef kConvOps[] = {
    {"", "Conv", InferConv, RunConv, 1, true},
    {"", "ConvTranspose", InferConvTranspose, RunConvTranspose, 1, true},
    {"", "ConvInteger", InferConvInteger, RunConvInteger, 10, false},
    {"", "QLinearConv", InferQLinearConv, RunQLinearConv, 10, false},
};

}  // namespace

std::span<const OpDef> ConvOps() { return kConvOps; }

}  // namespace kiln::ops
