// QuantizeLinear, DequantizeLinear (per tensor and per axis) and DynamicQuantizeLinear.
#include "kernels/ref/quant.h"

#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

struct QuantAttrs {
  int64_t axis = 1;
  DType output_dtype = DType::kUndefined;  // QuantizeLinear-21's attribute; 0 = unset
};

Expected<QuantAttrs> ReadQuantAttrs(const ir::Node& node) {
  ir::AttrReader reader(node);
  QuantAttrs a;
  a.axis = reader.Int("axis", 1);
  const int64_t block_size = reader.Int("block_size", 0);
  const int64_t output_dtype = reader.Int("output_dtype", 0);
  KILN_RETURN_IF_ERROR(reader.status());
  if (block_size != 0)
    return Status::Error(node.Where(), "blocked quantization (block_size ", block_size,
                         ") is not supported");
  if (output_dtype != 0) {
    if (!IsKnownDType(static_cast<int32_t>(output_dtype)))
      return Status::Error(node.Where(), "output_dtype ", output_dtype, " is not a known type");
    a.output_dtype = static_cast<DType>(output_dtype);
  }
  return a;
}

// The quantized type: the zero point's, else output_dtype, else uint8.
DType QuantizedType(const ir::Node& node, const QuantAttrs& a) {
  if (node.has_input(2)) return node.inputs[2]->type.dtype;
  return a.output_dtype != DType::kUndefined ? a.output_dtype : DType::kUInt8;
}

Status InferQuantize(ir::Node& node) {
  if (!node.has_input(0) || !node.has_input(1))
    return Status::Error(node.Where(), "needs inputs 'x' and 'y_scale'");
  KILN_ASSIGN_OR_RETURN(QuantAttrs a, ReadQuantAttrs(node));
  SetOutputType(node, 0, ValueType{QuantizedType(node, a), node.inputs[0]->type.shape});
  return Status::Ok();
}

Status RunQuantize(RunContext& ctx) {
  if (ctx.input(0) == nullptr || ctx.input(1) == nullptr)
    return ctx.Error("needs inputs 'x' and 'y_scale'");
  KILN_ASSIGN_OR_RETURN(QuantAttrs a, ReadQuantAttrs(ctx.node));
  const Tensor* zp = ctx.input(2);
  if (zp != nullptr && a.output_dtype != DType::kUndefined && zp->dtype() != a.output_dtype)
    return ctx.Error("output_dtype ", DTypeName(a.output_dtype), " differs from the zero point's ",
                     DTypeName(zp->dtype()));
  const DType out_type = a.output_dtype != DType::kUndefined ? a.output_dtype : DType::kUInt8;
  auto y = ref::QuantizeLinear(*ctx.input(0), *ctx.input(1), zp, out_type, a.axis);
  if (!y.ok()) return y.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(y).value();
  return Status::Ok();
}

Status InferDequantize(ir::Node& node) {
  if (!node.has_input(0) || !node.has_input(1))
    return Status::Error(node.Where(), "needs inputs 'x' and 'x_scale'");
  KILN_RETURN_IF_ERROR(ReadQuantAttrs(node).status());
  SetOutputType(node, 0, ValueType{node.inputs[1]->type.dtype, node.inputs[0]->type.shape});
  return Status::Ok();
}

Status RunDequantize(RunContext& ctx) {
  if (ctx.input(0) == nullptr || ctx.input(1) == nullptr)
    return ctx.Error("needs inputs 'x' and 'x_scale'");
  KILN_ASSIGN_OR_RETURN(QuantAttrs a, ReadQuantAttrs(ctx.node));
  auto y = ref::DequantizeLinear(*ctx.input(0), *ctx.input(1), ctx.input(2), a.axis);
  if (!y.ok()) return y.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(y).value();
  return Status::Ok();
}

Status InferDynamicQuantize(ir::Node& node) {
  if (!node.has_input(0)) return Status::Error(node.Where(), "input 'x' is missing");
  SetOutputType(node, 0, ValueType{DType::kUInt8, node.inputs[0]->type.shape});
  SetOutputType(node, 1, ValueType{DType::kFloat32, std::vector<Dim>{}});
  SetOutputType(node, 2, ValueType{DType::kUInt8, std::vector<Dim>{}});
  return Status::Ok();
}

Status RunDynamicQuantize(RunContext& ctx) {
  if (ctx.input(0) == nullptr) return ctx.Error("input 'x' is missing");
  auto r = ref::DynamicQuantizeLinear(*ctx.input(0));
  if (!r.ok()) return r.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(r->y);
  if (ctx.outputs.size() > 1) ctx.outputs[1] = std::move(r->scale);
  if (ctx.outputs.size() > 2) ctx.outputs[2] = std::move(r->zero_point);
  return Status::Ok();
}

}  // namespace

std::span<const OpDef> QuantOps() {
  // promote_half: a float16/bfloat16 x or scale is handled in float32; DequantizeLinear's output
  // is narrowed back to the scale's type. DynamicQuantizeLinear takes float32 only, and its
  // float32 y_scale must stay float32.
  static const OpDef kOps[] = {
      {"", "QuantizeLinear", InferQuantize, RunQuantize, 10, true},
      {"", "DequantizeLinear", InferDequantize, RunDequantize, 10, true},
      {"", "DynamicQuantizeLinear", InferDynamicQuantize, RunDynamicQuantize, 11, false},
  };
  return kOps;
}

}  // namespace kiln::ops
