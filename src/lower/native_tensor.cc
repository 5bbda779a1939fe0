// Native lowering of tensor-movement nodes: Reshape, Flatten, Squeeze and Unsqueeze (one
// "reshape" kernel: a copy the planner can make in place), Concat, Transpose, Slice and Pad.
// They move bytes, so float32, int64 and int32 all run natively; shapes, axes, starts/ends
// and pads must be constants (a node with one computed at run time stays with the reference).
#include <cstring>
#include <numeric>

#include "lower/native_util.h"

namespace kiln::lower {
namespace {

using native_util::EmitStep;
using native_util::OnlyOutputs;
using native_util::RankOf;

bool Movable(const ir::Value* v) {
  if (v == nullptr) return false;
  const DType t = v->type.dtype;
  return t == DType::kFloat32 || t == DType::kInt64 || t == DType::kInt32;
}

// Input 0 and output 0 present, of one movable type, the input's rank known (when `need_rank`).
bool Simple(const ir::Node& node, bool need_rank) {
  if (!node.has_input(0) || !OnlyOutputs(node, 1)) return false;
  const ir::Value* x = node.inputs[0];
  if (!Movable(x) || node.outputs[0]->type.dtype != x->type.dtype) return false;
  return !need_rank || (x->type.shape && x->type.shape->size() <= 16);
}

// The axes of input 1 (a constant) or, in a hand-built old-form graph, the `axes` attribute.
std::optional<std::vector<int64_t>> AxesOf(const ir::Node& node) {
  ir::AttrReader r(node);
  if (node.has_input(1)) {
    if (r.Has("axes")) return std::nullopt;
    return native_util::ConstInts(node.inputs[1]);
  }
  std::vector<int64_t> axes = r.Ints("axes");
  if (!r.status().ok()) return std::nullopt;
  return axes;
}

Expected<bool> LowerReshapeFamily(const ir::Node& node, LowerContext& ctx) {
  if (!node.domain.empty()) return false;
  const std::string& op = node.op_type;
  runtime::StepParams p;
  if (op == "Reshape") {
    if (!Simple(node, false) || node.inputs.size() != 2) return false;
    const auto shape = native_util::ConstInts(node.inputs[1]);
    if (!shape || shape->size() > 16) return false;
    ir::AttrReader r(node);
    const int64_t allowzero = r.Int("allowzero", 0);
    if (!r.status().ok()) return false;
    p.strings["mode"] = "reshape";
    p.int_lists["shape"] = *shape;
    p.ints["allowzero"] = allowzero != 0 ? 1 : 0;
  } else if (op == "Flatten") {
    if (!Simple(node, true)) return false;
    const auto rank = static_cast<int64_t>(*RankOf(node.inputs[0]));
    ir::AttrReader r(node);
    const int64_t axis = r.Int("axis", 1);
    if (!r.status().ok() || axis < -rank || axis > rank) return false;
    p.strings["mode"] = "flatten";
    p.ints["axis"] = axis < 0 ? axis + rank : axis;
    p.ints["rank"] = rank;
  } else if (op == "Squeeze" || op == "Unsqueeze") {
    if (!Simple(node, true) || node.inputs.size() > 2) return false;
    auto axes = AxesOf(node);
    if (!axes) return false;
    const size_t rank = *RankOf(node.inputs[0]);
    const bool squeeze = op == "Squeeze";
    if (squeeze && axes->empty()) {
      // "Every unit dim" must not depend on a symbolic dim that a run may bind to 1: the rank
      // would change under the steps planned for it. Resolve it now, from static dims only.
      const ir::ValueType& xt = node.inputs[0]->type;
      if (!xt.has_static_shape()) return false;
      const std::vector<int64_t> dims = xt.static_dims();
      for (size_t i = 0; i < dims.size(); ++i)
        if (dims[i] == 1) axes->push_back(static_cast<int64_t>(i));
      if (axes->empty()) return false;  // nothing to squeeze: the kernel's empty list means all
    }
    if (!squeeze && axes->empty()) return false;
    const size_t out_rank = squeeze ? rank : rank + axes->size();
    if (out_rank > 16) return false;
    const auto normalized = native_util::NormalizeAxes(*axes, out_rank);
    if (!normalized) return false;
    p.strings["mode"] = squeeze ? "squeeze" : "unsqueeze";
    p.int_lists["axes"] = *normalized;
    p.ints["rank"] = static_cast<int64_t>(rank);
  } else {
    return false;
  }
  KILN_RETURN_IF_ERROR(EmitStep(node, ctx, "reshape", {node.inputs[0]}, 1, std::move(p)));
  return true;
}

Expected<bool> LowerConcat(const ir::Node& node, LowerContext& ctx) {
  if (!node.domain.empty() || node.op_type != "Concat") return false;
  if (node.inputs.empty() || !OnlyOutputs(node, 1) || !Simple(node, true)) return false;
  const DType t = node.inputs[0]->type.dtype;
  const size_t rank = *RankOf(node.inputs[0]);
  for (const ir::Value* v : node.inputs)
    if (v == nullptr || v->type.dtype != t || RankOf(v) != rank) return false;
  ir::AttrReader r(node);
  const int64_t axis = r.Int("axis", 0);
  const auto rk = static_cast<int64_t>(rank);
  if (!r.status().ok() || !r.Has("axis") || axis < -rk || axis >= rk) return false;
  runtime::StepParams p;
  p.ints["axis"] = axis < 0 ? axis + rk : axis;
  std::vector<const ir::Value*> inputs(node.inputs.begin(), node.inputs.end());
  KILN_RETURN_IF_ERROR(EmitStep(node, ctx, "concat", inputs, 1, std::move(p)));
  return true;
}

Expected<bool> LowerTranspose(const ir::Node& node, LowerContext& ctx) {
  if (!node.domain.empty() || node.op_type != "Transpose") return false;
  if (!Simple(node, true) || node.inputs.size() != 1) return false;
  const size_t rank = *RankOf(node.inputs[0]);
  std::vector<int64_t> reversed(rank);
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  ir::AttrReader r(node);
  const std::vector<int64_t> perm = r.Ints("perm", reversed);
  if (!r.status().ok() || perm.size() != rank) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t a : perm) {
    if (a < 0 || a >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(a)]) return false;
    seen[static_cast<size_t>(a)] = true;
  }
  runtime::StepParams p;
  p.int_lists["perm"] = perm;
  KILN_RETURN_IF_ERROR(EmitStep(node, ctx, "transpose", {node.inputs[0]}, 1, std::move(p)));
  return true;
}

// Slice (opset 10+: starts, ends, axes, steps are inputs) with constant parameters. Axes are
// normalized here; starts and ends stay as ONNX wrote them, because their clamping depends on
// dims a symbolic batch leaves to the run.
Expected<bool> LowerSlice(const ir::Node& node, LowerContext& ctx) {
  if (!node.domain.empty() || node.op_type != "Slice" || node.opset < 10) return false;
  if (!Simple(node, true) || node.inputs.size() < 3 || node.inputs.size() > 5) return false;
  const size_t rank = *RankOf(node.inputs[0]);
  const auto starts = native_util::ConstInts(node.inputs[1]);
  const auto ends = native_util::ConstInts(node.inputs[2]);
  if (!starts || !ends || starts->size() != ends->size()) return false;
  std::vector<int64_t> axes(starts->size()), steps(starts->size(), 1);
  std::iota(axes.begin(), axes.end(), 0);
  for (size_t i : {size_t{3}, size_t{4}}) {
    if (!node.has_input(i)) continue;
    auto v = native_util::ConstInts(node.inputs[i]);
    if (!v || v->size() != starts->size()) return false;
    (i == 3 ? axes : steps) = std::move(*v);
  }
  const auto r = static_cast<int64_t>(rank);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t& a = axes[i];
    if (a < -r || a >= r) return false;
    if (a < 0) a += r;
    if (seen[static_cast<size_t>(a)] || steps[i] == 0) return false;
    seen[static_cast<size_t>(a)] = true;
  }
  runtime::StepParams p;
  p.ints["rank"] = r;
  p.int_lists["starts"] = *starts;
  p.int_lists["ends"] = *ends;
  p.int_lists["axes"] = std::move(axes);
  p.int_lists["steps"] = std::move(steps);
  KILN_RETURN_IF_ERROR(EmitStep(node, ctx, "slice", {node.inputs[0]}, 1, std::move(p)));
  return true;
}

// Pad (opset 11+: pads, constant_value and axes are inputs) with constant parameters, in the
// full [begins, ends] form over every axis.
Expected<bool> LowerPad(const ir::Node& node, LowerContext& ctx) {
  if (!node.domain.empty() || node.op_type != "Pad" || node.opset < 11) return false;
  if (!Simple(node, true) || node.inputs.size() < 2 || node.inputs.size() > 4) return false;
  const size_t rank = *RankOf(node.inputs[0]);
  ir::AttrReader r(node);
  const std::string mode = r.String("mode", "constant");
  if (!r.status().ok()) return false;
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") return false;
  const auto pads = native_util::ConstInts(node.inputs[1]);
  if (!pads) return false;
  std::vector<int64_t> axes(rank);
  std::iota(axes.begin(), axes.end(), 0);
  if (node.has_input(3)) {
    auto v = native_util::ConstInts(node.inputs[3]);
    if (!v) return false;
    axes = std::move(*v);
  }
  if (pads->size() != 2 * axes.size()) return false;
  const auto rk = static_cast<int64_t>(rank);
  std::vector<int64_t> full(2 * rank, 0);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    if (a < -rk || a >= rk) return false;
    if (a < 0) a += rk;
    if (seen[static_cast<size_t>(a)]) return false;
    seen[static_cast<size_t>(a)] = true;
    full[static_cast<size_t>(a)] = (*pads)[i];
    full[static_cast<size_t>(a) + rank] = (*pads)[i + axes.size()];
  }
  int64_t bits = 0;
  if (node.has_input(2)) {
    const ir::Value* v = node.inputs[2];
    if (!v->constant || v->constant->dtype() != node.inputs[0]->type.dtype ||
        v->constant->numel() > 1)
      return false;
    if (v->constant->numel() == 1) std::memcpy(&bits, v->constant->raw(), v->constant->nbytes());
  }
  runtime::StepParams p;
  p.ints["rank"] = rk;
  p.int_lists["pads"] = std::move(full);
  p.strings["mode"] = mode;
  p.ints["value_bits"] = bits;
  KILN_RETURN_IF_ERROR(EmitStep(node, ctx, "pad", {node.inputs[0]}, 1, std::move(p)));
  return true;
}

constexpr NativeLowering kLowerings[] = {LowerReshapeFamily, LowerConcat, LowerTranspose,
                                         LowerSlice,         LowerPad};

}  // namespace

std::span<const NativeLowering> TensorLowerings() { return kLowerings; }

}  // namespace kiln::lower
