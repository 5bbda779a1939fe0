// Native lowering of pooling and reductions over float32: 2-D MaxPool / AveragePool on NCHW
// ("maxpool2d", "avgpool2d"), GlobalAveragePool / GlobalMaxPool, and ReduceMean / ReduceSum
// over constant axes ("reduce"). Output dims are the kernels' business at run time, so only
// the rank must be known; SAME auto-padding needs static spatial dims (its pads depend on them).
#include <algorithm>

#include "lower/native_util.h"

namespace kiln::lower {
namespace {

using native_util::EmitStep;
using native_util::FloatRankKnown;
using native_util::OnlyOutputs;

constexpr int64_t kMaxWindowParam = int64_t{1} << 20;  // the kernel's own bound

bool InRange(const std::vector<int64_t>& v, size_t n, int64_t lo) {
  if (v.size() != n) return false;
  for (int64_t x : v)
    if (x < lo || x > kMaxWindowParam) return false;
  return true;
}

Expected<bool> LowerPool2d(const ir::Node& node, LowerContext& ctx) {
  if (!node.domain.empty()) return false;
  const bool max = node.op_type == "MaxPool";
  if (!max && node.op_type != "AveragePool") return false;
  // MaxPool's Indices output has no native kernel.
  if (!node.has_input(0) || !OnlyOutputs(node, 1)) return false;
  const ir::Value* x = node.inputs[0];
  if (!FloatRankKnown(x) || !FloatRankKnown(node.outputs[0]) || x->type.shape->size() != 4)
    return false;
  ir::AttrReader r(node);
  const std::vector<int64_t> kernel = r.Ints("kernel_shape");
  const std::vector<int64_t> strides = r.Ints("strides", {1, 1});
  const std::vector<int64_t> dilations = r.Ints("dilations", {1, 1});
  std::vector<int64_t> pads = r.Ints("pads", {0, 0, 0, 0});
  const std::string auto_pad = r.String("auto_pad", "NOTSET");
  const int64_t ceil_mode = r.Int("ceil_mode", 0);
  const int64_t include_pad = max ? 0 : r.Int("count_include_pad", 0);
  if (!r.status().ok()) return false;
  if (!InRange(kernel, 2, 1) || !InRange(strides, 2, 1) || !InRange(dilations, 2, 1) ||
      !InRange(pads, 4, 0))
    return false;
  if (auto_pad == "VALID") {
    pads.assign(4, 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < 2; ++i) {
      const ir::Dim& d = (*x->type.shape)[i + 2];
      if (!d.is_static()) return false;
      const int64_t in = d.value, s = strides[i];
      const int64_t dk = (kernel[i] - 1) * dilations[i] + 1;
      const int64_t total = std::max<int64_t>(0, ((in + s - 1) / s - 1) * s + dk - in);
      pads[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + 2] = total - pads[i];
    }
  } else if (auto_pad != "NOTSET" && !auto_pad.empty()) {
    return false;
  }
  for (size_t i = 0; i < 2; ++i)  // windows of padding only: left to the reference's rules
    if (pads[i] >= (kernel[i] - 1) * dilations[i] + 1) return false;
  runtime::StepParams p;
  p.int_lists["kernel"] = kernel;
  p.int_lists["strides"] = strides;
  p.int_lists["dilations"] = dilations;
  p.int_lists["pads"] = pads;
  p.ints["ceil_mode"] = ceil_mode != 0 ? 1 : 0;
  if (!max) p.ints["count_include_pad"] = include_pad != 0 ? 1 : 0;
  KILN_RETURN_IF_ERROR(EmitStep(node, ctx, max ? "maxpool2d" : "avgpool2d", {x}, 1, std::move(p)));
  return true;
}

Expected<bool> LowerGlobalPool(const ir::Node& node, LowerContext& ctx) {
  if (!node.domain.empty()) return false;
  const bool max = node.op_type == "GlobalMaxPool";
  if (!max && node.op_type != "GlobalAveragePool") return false;
  if (!node.has_input(0) || !OnlyOutputs(node, 1)) return false;
  if (!FloatRankKnown(node.inputs[0]) || !FloatRankKnown(node.outputs[0]) ||
      node.inputs[0]->type.shape->size() < 3)
    return false;
  KILN_RETURN_IF_ERROR(
      EmitStep(node, ctx, max ? "global_maxpool" : "global_avgpool", {node.inputs[0]}, 1, {}));
  return true;
}

Expected<bool> LowerReduce(const ir::Node& node, LowerContext& ctx) {
  if (!node.domain.empty()) return false;
  const bool mean = node.op_type == "ReduceMean";
  if (!mean && node.op_type != "ReduceSum") return false;
  if (!node.has_input(0) || !OnlyOutputs(node, 1)) return false;
  if (!FloatRankKnown(node.inputs[0]) || !FloatRankKnown(node.outputs[0])) return false;
  const size_t rank = *native_util::RankOf(node.inputs[0]);
  if (rank > 16) return false;
  ir::AttrReader r(node);
  const int64_t keepdims = r.Int("keepdims", 1);
  const int64_t noop = r.Int("noop_with_empty_axes", 0);
  std::vector<int64_t> axes;
  // The IR's newest form keeps axes in input 1; a graph built by hand may keep the attribute.
  if (node.has_input(1)) {
    const auto v = native_util::ConstInts(node.inputs[1]);
    if (!v || r.Has("axes")) return false;
    axes = *v;
  } else {
    axes = r.Ints("axes");
  }
  if (!r.status().ok() || node.inputs.size() > 2) return false;
  if (axes.empty()) {
    if (noop != 0) return false;  // identity: rare, left to the reference
    for (size_t i = 0; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  const auto normalized = native_util::NormalizeAxes(axes, rank);
  if (!normalized) return false;
  runtime::StepParams p;
  p.strings["op"] = mean ? "mean" : "sum";
  p.int_lists["axes"] = *normalized;
  p.ints["rank"] = static_cast<int64_t>(rank);
  p.ints["keepdims"] = keepdims != 0 ? 1 : 0;
  KILN_RETURN_IF_ERROR(EmitStep(node, ctx, "reduce", {node.inputs[0]}, 1, std::move(p)));
  return true;
}

constexpr NativeLowering kLowerings[] = {LowerPool2d, LowerGlobalPool, LowerReduce};

}  // namespace

std::span<const NativeLowering> PoolLowerings() { return kLowerings; }

}  // namespace kiln::lower
