// Helpers the eltwise, pool and tensor lowerings share: type guards, constant reads and the
// emission of a one-node step. Guards come before any ctx.ValueId call, so a lowering that
// declines leaves no values or blobs behind.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "lower/native.h"

namespace kiln::lower::native_util {

// Element type `t` with a known rank (dims may be symbolic).
inline bool RankKnown(const ir::Value* v, DType t) {
  return v != nullptr && v->type.dtype == t && v->type.shape.has_value();
}
inline bool FloatRankKnown(const ir::Value* v) { return RankKnown(v, DType::kFloat32); }

inline std::optional<size_t> RankOf(const ir::Value* v) {
  if (v == nullptr || !v->type.shape) return std::nullopt;
  return v->type.shape->size();
}

// The values of a constant int32/int64 tensor (axes, shapes), or nullopt when not constant.
inline std::optional<std::vector<int64_t>> ConstInts(const ir::Value* v) {
  if (v == nullptr || !v->constant) return std::nullopt;
  const Tensor& t = *v->constant;
  if (t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32) return std::nullopt;
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = t.AsInt64(static_cast<int64_t>(i));
  return out;
}

// The one value of a constant float32 scalar (or one-element) tensor.
inline std::optional<float> ConstFloat(const ir::Value* v) {
  if (v == nullptr || !v->constant || v->constant->dtype() != DType::kFloat32 ||
      v->constant->numel() != 1)
    return std::nullopt;
  return v->constant->data<float>()[0];
}

// Axes in [-rank, rank) made non-negative, sorted; nullopt when one is out of range or repeats.
inline std::optional<std::vector<int64_t>> NormalizeAxes(std::vector<int64_t> axes, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  for (int64_t& a : axes) {
    if (a < -r || a >= r) return std::nullopt;
    if (a < 0) a += r;
  }
  std::sort(axes.begin(), axes.end());
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] == axes[i - 1]) return std::nullopt;
  return axes;
}

// A step for `node` running `kernel` on `inputs` (IR values, nullptr for omitted), writing the
// node's first `outputs` outputs.
inline Status EmitStep(const ir::Node& node, LowerContext& ctx, const std::string& kernel,
                       const std::vector<const ir::Value*>& inputs, size_t outputs,
                       runtime::StepParams params, std::vector<int32_t> blobs = {}) {
  runtime::Step step;
  step.kernel = kernel;
  step.name = node.name;
  step.op = node.domain.empty() ? node.op_type : node.domain + "." + node.op_type;
  for (const ir::Value* v : inputs) {
    KILN_ASSIGN_OR_RETURN(int32_t id, ctx.ValueId(v));
    step.inputs.push_back(id);
  }
  for (size_t i = 0; i < outputs; ++i) {
    KILN_ASSIGN_OR_RETURN(int32_t id, ctx.ValueId(node.outputs[i]));
    step.outputs.push_back(id);
  }
  step.blobs = std::move(blobs);
  step.params = std::move(params);
  ctx.AddStep(std::move(step));
  return Status::Ok();
}

// True when the node has exactly `n` outputs present (optional extra outputs absent).
inline bool OnlyOutputs(const ir::Node& node, size_t n) {
  for (size_t i = 0; i < node.outputs.size(); ++i)
    if ((i < n) != (node.outputs[i] != nullptr)) return false;
  return node.outputs.size() >= n;
}

}  // namespace kiln::lower::native_util
