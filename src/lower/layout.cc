#include "lower/layout.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/conv/conv.h"
#include "kernels/conv/conv_ukernels.h"
#include "lower/switches.h"

namespace kiln::lower {
namespace {

using runtime::Module;
using runtime::Step;
using runtime::ValueInfo;
using runtime::ValueKind;

constexpr int kNone = -1;

// How a step relates to the blocked layout.
enum class StepKind {
  kPlain,     // reads and writes NCHW only
  kConv,      // a conv on NCHWc: either side may be blocked
  kStem,      // an image stem (kStemNchwc): reads NCHW, writes NCHWc or NCHW
  kAgnostic,  // elementwise over same-shape values: runs on either layout, all sides alike
  kPoolIn,    // a global average pool: reads either layout, writes plain [N, C, 1, 1]
  kScale0,    // x * s with s [N or 1, C, 1, 1] per channel: x (input 0) and the output share a
  kScale1,    //   layout, s stays plain; kScale1: x is input 1
};

// Whether a step of this kind reads input `slot` in its group's layout, and writes its output so.
bool ReadsInGroup(StepKind k, size_t slot) {
  switch (k) {
    case StepKind::kPlain:
    case StepKind::kStem:
      return false;
    case StepKind::kAgnostic:
      return true;
    case StepKind::kScale1:
      return slot == 1;
    default:
      return slot == 0;
  }
}
bool WritesInGroup(StepKind k) { return k != StepKind::kPlain && k != StepKind::kPoolIn; }
bool JoinsGroup(StepKind k) {  // its in-group sides must share one layout
  return k == StepKind::kAgnostic || k == StepKind::kScale0 || k == StepKind::kScale1;
}

bool SameShape(const ValueInfo& a, const ValueInfo& b) {
  return a.rank_known && b.rank_known && a.dims == b.dims && a.dim_params == b.dim_params;
}

bool IsStem(const Step& s) {
  auto algo = s.params.strings.find("algorithm");
  return s.kernel == "conv2d" && algo != s.params.strings.end() &&
         algo->second == conv::AlgorithmName(conv::Algorithm::kStemNchwc);
}

// The block of a conv step that convolves on NCHWc (direct, depthwise or Winograd prepared
// blocked, or an image stem's output), or 0.
int64_t ConvBlock(const Step& s) {
  if (s.kernel != "conv2d" || s.inputs.size() != 1 || s.outputs.size() != 1) return 0;
  auto algo = s.params.strings.find("algorithm");
  if (algo == s.params.strings.end() ||
      (algo->second != conv::AlgorithmName(conv::Algorithm::kDirectNchwc) &&
       algo->second != conv::AlgorithmName(conv::Algorithm::kDepthwise) &&
       algo->second != conv::AlgorithmName(conv::Algorithm::kWinograd) && !IsStem(s)))
    return 0;
  const int64_t block = s.params.IntOr("block", 1);
  return block > 1 ? block : 0;
}

// s holds one value per channel of the 4-D x: [N or 1, C, 1, 1].
bool IsChannelScale(const std::vector<int64_t>& x, const std::vector<int64_t>& s) {
  return x.size() == 4 && s.size() == 4 && (s[0] == 1 || s[0] == x[0]) && s[1] == x[1] &&
         s[1] > 0 && s[2] == 1 && s[3] == 1;
}

StepKind Classify(const Step& s, const Module& m) {
  if (ConvBlock(s) > 0) return IsStem(s) ? StepKind::kStem : StepKind::kConv;
  for (int32_t id : s.inputs)
    if (id < 0) return StepKind::kPlain;
  if (s.kernel == "eltwise_unary" && s.inputs.size() == 1 && s.outputs.size() == 1 &&
      SameShape(m.values[s.inputs[0]], m.values[s.outputs[0]]))
    return StepKind::kAgnostic;
  if (s.kernel == "eltwise_binary" && s.inputs.size() == 2 && s.outputs.size() == 1) {
    const ValueInfo &a = m.values[s.inputs[0]], &b = m.values[s.inputs[1]];
    const ValueInfo& y = m.values[s.outputs[0]];
    if (SameShape(a, y) && SameShape(b, y)) return StepKind::kAgnostic;
    auto op = s.params.strings.find("op");
    if (op != s.params.strings.end() && op->second == "mul" && a.rank_known && b.rank_known &&
        y.rank_known) {
      if (SameShape(a, y) && IsChannelScale(a.dims, b.dims) && b.kind != ValueKind::kConstant)
        return StepKind::kScale0;
      if (SameShape(b, y) && IsChannelScale(b.dims, a.dims) && a.kind != ValueKind::kConstant)
        return StepKind::kScale1;
    }
  }
  if (s.kernel == "global_avgpool" && s.inputs.size() == 1 &&
      s.outputs.size() == 1 && m.values[s.inputs[0]].rank_known &&
      m.values[s.inputs[0]].dims.size() == 4)
    return StepKind::kPoolIn;
  return StepKind::kPlain;
}

// A float [N, C, H, W] activation or input with static C, H, W (N may be symbolic).
bool Blockable(const ValueInfo& v) {
  if (v.kind == ValueKind::kConstant || v.dtype != DType::kFloat32 || !v.rank_known ||
      v.dims.size() != 4)
    return false;
  for (size_t i = 1; i < 4; ++i)
    if (v.dims[i] < 1 || !v.dim_params[i].empty()) return false;
  return true;
}

// Whether C channels may be held in blocks of b: whole blocks, or a last block padded by at most
// a third of C (MobileNetV2's 24 -> 32 and MobileNetV3's 40, 72, 120, 184, 200 at 16; not 20),
// whose padding lanes the convs multiply by zero weights and write as act(0). A third, not a
// quarter: with 24 blocked too, MobileNetV2 runs 4% faster (its 56x56 stage stays NCHWc).
bool FillsBlocks(int64_t c, int64_t b) {
  const int64_t padded = (c + b - 1) / b * b;
  return c % b == 0 || padded * 3 <= c * 4;
}

// Whether a layout-agnostic step keeps padding lanes finite (they start at zero or act(0)), so
// that the zero weights of the next conv cancel them: no division, logarithm or square root.
bool PadSafe(const Step& s) {
  if (s.kernel == "eltwise_binary") {
    auto op = s.params.strings.find("op");
    return op != s.params.strings.end() &&
           (op->second == "add" || op->second == "sub" || op->second == "mul");
  }
  if (s.kernel != "eltwise_unary") return true;
  static const char* const kSafe[] = {"relu",     "sigmoid",   "tanh",      "silu",
                                      "hardswish", "hardsigmoid", "gelu", "gelu_tanh",
                                      "leakyrelu", "clip",     "mulscalar", "addscalar",
                                      "neg",      "abs"};
  auto ops = s.params.strings.find("ops");
  if (ops == s.params.strings.end()) return false;
  size_t start = 0;
  const std::string& list = ops->second;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(',', start), list.size());
    const std::string op = list.substr(start, end - start);
    bool safe = false;
    for (const char* k : kSafe) safe = safe || op == k;
    if (!safe) return false;
    start = end + 1;
  }
  return true;
}

int Find(std::vector<int>& parent, int v) {
  while (parent[v] != v) v = parent[v] = parent[parent[v]];
  return v;
}

struct Use {
  size_t step;
  size_t slot;
};

struct Group {
  bool ok = true;
  bool padded = false;    // its channels do not fill whole blocks
  bool pad_unsafe = false;  // a step in it could turn padding lanes into inf or NaN
  int64_t block = 0;
  size_t conv_ends = 0;  // conv inputs and outputs in the group: in-step reorders saved
  size_t reorders = 0;   // explicit reorders the group would need
};

Step Reorder(const ValueInfo& from, int32_t in, int32_t out, int64_t block, int64_t channels,
             bool to_blocked) {
  Step s;
  s.kernel = "layout_reorder";
  s.name = from.name;
  s.op = to_blocked ? "ReorderToNchwc" : "ReorderToNchw";
  s.inputs = {in};
  s.outputs = {out};
  s.params.ints = {{"block", block}, {"channels", channels}, {"to_blocked", to_blocked ? 1 : 0}};
  return s;
}

}  // namespace

bool LayoutPlanningEnabled() {
  return SwitchOn("KILN_LAYOUT");
}

Status PlanBlockedLayout(Module& m, LayoutReport* report) {
  if (report) *report = {};
  const size_t n_values = m.values.size(), n_steps = m.steps.size();
  std::vector<StepKind> kind(n_steps);
  std::vector<int> producer(n_values, kNone);
  std::vector<std::vector<Use>> readers(n_values);
  std::vector<bool> is_output(n_values, false);
  for (int32_t id : m.outputs)
    if (id >= 0 && static_cast<size_t>(id) < n_values) is_output[id] = true;
  for (size_t s = 0; s < n_steps; ++s) {
    const Step& step = m.steps[s];
    for (int32_t id : step.inputs)
      if (id < -1 || id >= static_cast<int32_t>(n_values))
        return Status::Error("step '", step.name, "' reads value ", id, ", not in the module");
    for (int32_t id : step.outputs)
      if (id < 0 || id >= static_cast<int32_t>(n_values))
        return Status::Error("step '", step.name, "' writes value ", id, ", not in the module");
    kind[s] = Classify(step, m);
    for (size_t i = 0; i < step.inputs.size(); ++i)
      if (step.inputs[i] >= 0) readers[step.inputs[i]].push_back({s, i});
    for (int32_t id : step.outputs) producer[id] = static_cast<int>(s);
  }

  // Groups: values an agnostic step joins must share one layout.
  std::vector<int> parent(n_values);
  std::iota(parent.begin(), parent.end(), 0);
  for (size_t s = 0; s < n_steps; ++s) {
    if (!JoinsGroup(kind[s])) continue;
    const int root = Find(parent, m.steps[s].outputs[0]);
    for (size_t i = 0; i < m.steps[s].inputs.size(); ++i)
      if (ReadsInGroup(kind[s], i)) parent[Find(parent, m.steps[s].inputs[i])] = root;
  }
  std::vector<Group> groups(n_values);
  for (size_t s = 0; s < n_steps; ++s) {
    if (kind[s] != StepKind::kConv && kind[s] != StepKind::kStem) continue;
    const int64_t block = ConvBlock(m.steps[s]);
    std::vector<int32_t> ends = {m.steps[s].outputs[0]};
    if (kind[s] == StepKind::kConv) ends.push_back(m.steps[s].inputs[0]);  // a stem's stays NCHW
    for (int32_t id : ends) {
      Group& g = groups[Find(parent, id)];
      if (g.block != 0 && g.block != block) g.ok = false;
      g.block = block;
      ++g.conv_ends;
    }
  }
  auto in_group = [&](const Use& u) { return ReadsInGroup(kind[u.step], u.slot); };
  auto produced_in_group = [&](size_t v) {
    return producer[v] != kNone && WritesInGroup(kind[producer[v]]);
  };
  auto needs_reorder = [&](size_t v) {
    for (const Use& u : readers[v])
      if (in_group(u) != produced_in_group(v)) return true;
    return produced_in_group(v) && is_output[v];
  };
  for (size_t v = 0; v < n_values; ++v) {
    Group& g = groups[Find(parent, static_cast<int>(v))];
    if (g.conv_ends == 0) continue;
    if (!Blockable(m.values[v]) || !FillsBlocks(m.values[v].dims[1], g.block)) g.ok = false;
    if (g.ok && m.values[v].dims[1] % g.block != 0) g.padded = true;
    if (needs_reorder(v)) ++g.reorders;
  }
  for (size_t s = 0; s < n_steps; ++s)
    if (kind[s] == StepKind::kAgnostic && !PadSafe(m.steps[s]))
      groups[Find(parent, m.steps[s].outputs[0])].pad_unsafe = true;
  for (Group& g : groups)
    if (g.padded && g.pad_unsafe) g.ok = false;
  auto blocked = [&](size_t v) {
    const Group& g = groups[Find(parent, static_cast<int>(v))];
    // A tie saves nothing: the convs' in-step reorders do the same work with fewer steps.
    return g.ok && g.reorders < g.conv_ends;
  };

  // Rewrite: a blocked value produced by a plain step (or bound by the caller) gets a blocked
  // twin that its blocked readers read; one produced by a blocked step turns blocked itself and
  // gets a plain twin, under its own name, for its plain readers and the caller.
  std::vector<Step> front;                    // reorders of module inputs
  std::vector<std::vector<Step>> after(n_steps);  // reorders right after each step
  size_t blocked_values = 0, reorders = 0;
  std::vector<bool> blocked_id(n_values, false);  // ids now holding NCHWc data (twins appended)
  for (size_t v = 0; v < n_values; ++v) {
    if (!blocked(v)) continue;
    ++blocked_values;
    const int64_t b = groups[Find(parent, static_cast<int>(v))].block;
    const ValueInfo plain = m.values[v];
    ValueInfo blocked_info = plain;
    blocked_info.name = StrCat(plain.name, ".nchwc", b);
    blocked_info.kind = ValueKind::kActivation;
    blocked_info.dims = {plain.dims[0], (plain.dims[1] + b - 1) / b, plain.dims[2], plain.dims[3],
                         b};
    blocked_info.dim_params = {plain.dim_params[0], "", "", "", ""};
    const int64_t channels = plain.dims[1];
    const bool inside = produced_in_group(v);
    if (!needs_reorder(v)) {
      m.values[v] = std::move(blocked_info);
      blocked_id[v] = true;
      continue;
    }
    const auto twin = static_cast<int32_t>(m.values.size());
    const auto id = static_cast<int32_t>(v);
    blocked_id.push_back(!inside);
    blocked_id[v] = inside;
    if (inside) {
      m.values[v] = std::move(blocked_info);
      m.values.push_back(plain);
      for (const Use& u : readers[v])
        if (!in_group(u)) m.steps[u.step].inputs[u.slot] = twin;
      for (int32_t& out : m.outputs)
        if (out == id) out = twin;
      after[producer[v]].push_back(Reorder(plain, id, twin, b, channels, false));
    } else {
      m.values.push_back(std::move(blocked_info));
      for (const Use& u : readers[v])
        if (in_group(u)) m.steps[u.step].inputs[u.slot] = twin;
      Step r = Reorder(plain, id, twin, b, channels, true);
      (producer[v] == kNone ? front : after[producer[v]]).push_back(std::move(r));
    }
    ++reorders;
  }
  for (size_t s = 0; s < n_steps; ++s) {
    Step& step = m.steps[s];
    if (kind[s] == StepKind::kConv || kind[s] == StepKind::kStem) {
      const int64_t b = ConvBlock(step);
      if (kind[s] == StepKind::kConv && blocked_id[step.inputs[0]])
        step.params.ints["layout_in"] = b;
      if (blocked_id[step.outputs[0]]) step.params.ints["layout_out"] = b;
    } else if (kind[s] == StepKind::kPoolIn && blocked_id[step.inputs[0]]) {
      step.params.ints["layout_in"] = m.values[step.inputs[0]].dims[4];
      step.params.ints["channels"] = m.values[step.outputs[0]].dims[1];
    } else if ((kind[s] == StepKind::kScale0 || kind[s] == StepKind::kScale1) &&
               blocked_id[step.outputs[0]]) {
      // x (now blocked) first, the per-channel scale second: channel_scale_nchwc.
      if (kind[s] == StepKind::kScale1) std::swap(step.inputs[0], step.inputs[1]);
      step.kernel = "channel_scale_nchwc";
      step.params.strings.erase("op");
      step.params.ints["block"] = m.values[step.outputs[0]].dims[4];
    }
  }
  if (reorders > 0 || blocked_values > 0) {
    std::vector<Step> steps = std::move(front);
    for (size_t s = 0; s < n_steps; ++s) {
      steps.push_back(std::move(m.steps[s]));
      for (Step& r : after[s]) steps.push_back(std::move(r));
    }
    m.steps = std::move(steps);
  }
  if (report) {
    report->blocked_values = blocked_values;
    report->reorders = reorders;
  }
  return Status::Ok();
}

namespace {

// The IR side of ChooseBlockedConvs: node kinds as PlanBlockedLayout will see their steps.
bool IrSameShape(const ir::Value* a, const ir::Value* b) {
  return a && b && a->type.dtype == b->type.dtype && a->type.shape && b->type.shape &&
         *a->type.shape == *b->type.shape;
}

// Unary elementwise ops that lower to "eltwise_unary" (native_eltwise.cc); a miss only costs a
// reorder, since the module plan decides from the steps actually emitted.
bool IrUnaryEltwise(const ir::Node& n) {
  static const char* const kOnnx[] = {"Relu",  "Sigmoid",   "Tanh",      "Exp",        "Log",
                                      "Neg",   "Abs",       "Sqrt",      "Erf",        "HardSwish",
                                      "Clip",  "LeakyRelu", "HardSigmoid", "Gelu"};
  static const char* const kKiln[] = {"Silu", "HardSwish", "Gelu", "FusedElementwise"};
  const bool onnx = n.domain.empty() || n.domain == "ai.onnx";
  if (!onnx && n.domain != "kiln") return false;
  for (const char* op : onnx ? std::span<const char* const>(kOnnx)
                             : std::span<const char* const>(kKiln))
    if (n.op_type == op) return true;
  return false;
}

// A float value with static [N, C, H, W] (N may be symbolic).
bool IrStatic4d(const ir::Value* v) {
  if (!v || v->constant || v->type.dtype != DType::kFloat32 || !v->type.shape ||
      v->type.shape->size() != 4)
    return false;
  for (size_t i = 1; i < 4; ++i)
    if (!(*v->type.shape)[i].is_static() || (*v->type.shape)[i].value < 1) return false;
  return true;
}

// IrStatic4d, and C fills blocks (FillsBlocks).
bool IrBlockable(const ir::Value* v, int64_t block) {
  return IrStatic4d(v) && FillsBlocks((*v->type.shape)[1].value, block);
}

// PadSafe for an IR node the pre-pass counts as layout-agnostic.
bool IrPadSafe(const ir::Node& n) {
  static const char* const kUnsafe[] = {"Div", "Log", "Sqrt", "Exp", "FusedElementwise"};
  for (const char* op : kUnsafe)
    if (n.op_type == op) return false;
  return true;
}

// How much a Conv gains from NCHWc, when its input channels fill blocks (FillsBlocks).
enum class Gain {
  kNone,    // not a conv that can run blocked
  kWeak,    // a 1x1 the cost model runs on gemm1x1: direct_nchwc is about as fast (94-98% of
            // peak against 72-90% on MobileNetV2's 14x14 and 7x7 layers, within a few % at
            // 28x28 and up, 5-10% slower strided), so only worth it with both sides blocked
  kStrong,  // depthwise: dwconv's blocked kernels run 2-3x its NCHW ones; one side will do
  kAlways,  // a window the cost model gives the direct kernel anyway, or Winograd (whose NCHWc
            // form runs 1.15-1.6x its NCHW one: conv::Run, 1 thread, ResNet's 3x3 layers)
  kStem,    // an image stem (C <= 4, never blocked itself): kStemNchwc writes its output NCHWc,
            // worth it when that output is blocked (it saves a reorder, or a depthwise conv's
            // own NCHW-to-NCHWc copy); kGroupedDirect stays faster for an NCHW output (kiln
            // profile, 1 thread, min of 8: ResNet-18's 7x7 3->64 2.37 ms against 2.87 for
            // kStemNchwc and its in-step reorder back, SqueezeNet's 3x3 3->64 0.59 vs 1.03)
};

Gain IrConvGain(const ir::Node& n, int64_t block, IsaLevel isa) {
  const bool conv = (n.domain.empty() && n.op_type == "Conv") ||
                    (n.domain == "kiln" && n.op_type == "FusedConv");
  if (!conv || !n.has_input(0) || !n.has_input(1) || n.outputs.size() != 1 || !n.has_output(0))
    return Gain::kNone;
  const ir::Value* x = n.inputs[0];
  const ir::Value* w = n.inputs[1];
  if (!IrStatic4d(x) || !w->constant || w->constant->dims().size() != 4) return Gain::kNone;
  const std::vector<int64_t>& wd = w->constant->dims();
  ir::AttrReader r(n);
  conv::ConvParams p;
  p.c = static_cast<size_t>((*x->type.shape)[1].value);
  p.h = static_cast<size_t>((*x->type.shape)[2].value);
  p.w = static_cast<size_t>((*x->type.shape)[3].value);
  p.m = static_cast<size_t>(std::max<int64_t>(wd[0], 1));
  p.kh = static_cast<size_t>(std::max<int64_t>(wd[2], 1));
  p.kw = static_cast<size_t>(std::max<int64_t>(wd[3], 1));
  p.groups = static_cast<size_t>(std::max<int64_t>(r.Int("group", 1), 1));
  const std::vector<int64_t> strides = r.Ints("strides", {1, 1});
  const std::vector<int64_t> dilations = r.Ints("dilations", {1, 1});
  const std::vector<int64_t> pads = r.Ints("pads", {0, 0, 0, 0});
  if (!r.status().ok() || strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    return Gain::kNone;
  for (int64_t v : strides)
    if (v < 1) return Gain::kNone;
  for (int64_t v : dilations)
    if (v < 1) return Gain::kNone;
  for (int64_t v : pads)
    if (v < 0) return Gain::kNone;
  p.stride_h = static_cast<size_t>(strides[0]);
  p.stride_w = static_cast<size_t>(strides[1]);
  p.dilation_h = static_cast<size_t>(dilations[0]);
  p.dilation_w = static_cast<size_t>(dilations[1]);
  p.pad_top = static_cast<size_t>(pads[0]);
  p.pad_left = static_cast<size_t>(pads[1]);
  p.pad_bottom = static_cast<size_t>(pads[2]);
  p.pad_right = static_cast<size_t>(pads[3]);
  if (!conv::ValidateParams(p).ok()) return Gain::kNone;  // the lowering leaves it to the reference
  if (conv::Supports(conv::Algorithm::kStemNchwc, p)) return Gain::kStem;
  if (!FillsBlocks(static_cast<int64_t>(p.c), block)) return Gain::kNone;
  if (p.groups > 1)
    return conv::SupportsBlocked(conv::Algorithm::kDepthwise, p, isa) ? Gain::kStrong : Gain::kNone;
  const conv::Algorithm chosen = conv::ChooseAlgorithm(p, isa);
  if (chosen == conv::Algorithm::kDirectNchwc || chosen == conv::Algorithm::kWinograd) {
    return Gain::kAlways;
  }
  return p.kh == 1 && p.kw == 1 ? Gain::kWeak : Gain::kNone;
}

}  // namespace

std::unordered_set<const ir::Node*> ChooseBlockedConvs(const ir::Graph& g, IsaLevel isa) {
  std::unordered_set<const ir::Node*> chosen;
  if (isa < IsaLevel::kAvx2) return chosen;
  const auto block = static_cast<int64_t>(conv::SelectConvNchwcUkernel(isa).block);
  std::unordered_map<const ir::Value*, int> id;
  std::vector<const ir::Value*> values;
  auto index = [&](const ir::Value* v) {
    auto [it, added] = id.emplace(v, static_cast<int>(values.size()));
    if (added) values.push_back(v);
    return it->second;
  };
  const size_t n_nodes = g.nodes().size();
  std::vector<StepKind> kind(n_nodes, StepKind::kPlain);
  std::vector<Gain> gain(n_nodes, Gain::kNone);
  std::unordered_map<const ir::Node*, size_t> node_index;
  for (size_t i = 0; i < n_nodes; ++i) {
    const ir::Node& n = *g.nodes()[i];
    node_index[&n] = i;
    for (const ir::Value* v : n.inputs)
      if (v) index(v);
    for (const ir::Value* v : n.outputs)
      if (v) index(v);
    const bool one_out = n.outputs.size() == 1 && n.has_output(0);
    gain[i] = IrConvGain(n, block, isa);
    if (gain[i] != Gain::kNone) {
      kind[i] = gain[i] == Gain::kStem ? StepKind::kStem : StepKind::kConv;
    } else if (one_out && n.inputs.size() == 1 && n.has_input(0) && IrUnaryEltwise(n) &&
               IrSameShape(n.inputs[0], n.outputs[0])) {
      kind[i] = StepKind::kAgnostic;
    } else if (one_out && n.inputs.size() == 2 && n.has_input(0) && n.has_input(1) &&
               (n.domain.empty() || n.domain == "ai.onnx") &&
               (n.op_type == "Add" || n.op_type == "Sub" || n.op_type == "Mul" ||
                n.op_type == "Div") &&
               IrSameShape(n.inputs[0], n.outputs[0]) && IrSameShape(n.inputs[1], n.outputs[0])) {
      kind[i] = StepKind::kAgnostic;
    } else if (n.domain.empty() && n.op_type == "Clip" && one_out && n.has_input(0) &&
               IrSameShape(n.inputs[0], n.outputs[0])) {
      kind[i] = StepKind::kAgnostic;  // Clip with constant min / max inputs
    } else if (one_out && n.inputs.size() == 2 && n.has_input(0) && n.has_input(1) &&
               n.domain.empty() && n.op_type == "Mul") {
      // A squeeze-and-excitation scale: x [N, C, H, W] times s [N or 1, C, 1, 1].
      const ir::Value *a = n.inputs[0], *b = n.inputs[1];
      auto dims = [](const ir::Value* v) {
        return v->type.has_static_shape() ? v->type.static_dims() : std::vector<int64_t>{};
      };
      if (!b->constant && IrSameShape(a, n.outputs[0]) && IsChannelScale(dims(a), dims(b)))
        kind[i] = StepKind::kScale0;
      else if (!a->constant && IrSameShape(b, n.outputs[0]) && IsChannelScale(dims(b), dims(a)))
        kind[i] = StepKind::kScale1;
    } else if (n.domain.empty() && one_out && n.inputs.size() == 1 && n.has_input(0) &&
               n.op_type == "GlobalAveragePool" &&
               n.inputs[0]->type.shape && n.inputs[0]->type.shape->size() == 4) {
      kind[i] = StepKind::kPoolIn;
    }
  }
  for (const ir::Value* v : g.outputs)
    if (v) index(v);
  const size_t n_values = values.size();
  std::vector<int> parent(n_values);
  std::iota(parent.begin(), parent.end(), 0);
  for (size_t i = 0; i < n_nodes; ++i) {
    if (!JoinsGroup(kind[i])) continue;
    const ir::Node& n = *g.nodes()[i];
    const int root = Find(parent, id.at(n.outputs[0]));
    for (size_t slot = 0; slot < n.inputs.size(); ++slot) {
      const ir::Value* v = n.inputs[slot];
      if (v && !v->constant && ReadsInGroup(kind[i], slot)) parent[Find(parent, id.at(v))] = root;
    }
  }
  std::vector<bool> is_output(n_values, false);
  for (const ir::Value* v : g.outputs)
    if (v) is_output[id.at(v)] = true;
  // Convs that would not pay for their blocking leave the candidates (they run as the cost
  // model says, NCHW), which may unblock their groups and so drop more: repeat until stable.
  std::vector<bool> blocked_root(n_values, false);
  // A stem's input is never blocked: it stays a candidate while its output is.
  auto in_blocked = [&](size_t i) {
    return kind[i] == StepKind::kConv && blocked_root[id.at(g.nodes()[i]->inputs[0])];
  };
  for (bool changed = true; changed;) {
    std::vector<Group> groups(n_values);
    for (size_t i = 0; i < n_nodes; ++i) {
      if (kind[i] != StepKind::kConv && kind[i] != StepKind::kStem) continue;
      const ir::Node& n = *g.nodes()[i];
      ++groups[Find(parent, id.at(n.outputs[0]))].conv_ends;
      if (kind[i] == StepKind::kConv) ++groups[Find(parent, id.at(n.inputs[0]))].conv_ends;
    }
    // Which kinds of step read each value: in its group's layout or NCHW.
    std::vector<bool> read_in(n_values, false), read_out(n_values, false);
    for (size_t i = 0; i < n_nodes; ++i) {
      const ir::Node& n = *g.nodes()[i];
      for (size_t slot = 0; slot < n.inputs.size(); ++slot)
        if (n.inputs[slot])  // a conv reads only its X blocked; W and B are weights
          (ReadsInGroup(kind[i], slot) ? read_in : read_out)[id.at(n.inputs[slot])] = true;
    }
    for (size_t v = 0; v < n_values; ++v) {
      const ir::Value* val = values[v];
      if (val->constant) continue;
      Group& grp = groups[Find(parent, static_cast<int>(v))];
      if (grp.conv_ends == 0) continue;
      if (!IrBlockable(val, block)) grp.ok = false;
      if (IrBlockable(val, block) && (*val->type.shape)[1].value % block != 0) grp.padded = true;
      auto it = val->producer ? node_index.find(val->producer) : node_index.end();
      const bool inside = it != node_index.end() && WritesInGroup(kind[it->second]);
      if ((inside ? read_out[v] : read_in[v]) || (inside && is_output[v])) ++grp.reorders;
    }
    for (size_t i = 0; i < n_nodes; ++i)
      if (kind[i] == StepKind::kAgnostic && !IrPadSafe(*g.nodes()[i]))
        groups[Find(parent, id.at(g.nodes()[i]->outputs[0]))].pad_unsafe = true;
    for (size_t v = 0; v < n_values; ++v) {
      const Group& grp = groups[Find(parent, static_cast<int>(v))];
      blocked_root[v] = grp.ok && !(grp.padded && grp.pad_unsafe) && grp.reorders < grp.conv_ends;
    }
    changed = false;
    for (size_t i = 0; i < n_nodes; ++i) {
      if ((kind[i] != StepKind::kConv && kind[i] != StepKind::kStem) || gain[i] == Gain::kAlways)
        continue;
      const ir::Node& n = *g.nodes()[i];
      const bool in = in_blocked(i), out = blocked_root[id.at(n.outputs[0])];
      if (gain[i] == Gain::kWeak ? in && out : in || out) continue;
      kind[i] = StepKind::kPlain;
      changed = true;
    }
  }
  for (size_t i = 0; i < n_nodes; ++i) {
    const ir::Node& n = *g.nodes()[i];
    const bool conv = kind[i] == StepKind::kConv || kind[i] == StepKind::kStem;
    if (conv && (in_blocked(i) || blocked_root[id.at(n.outputs[0])])) chosen.insert(&n);
  }
  return chosen;
}

}  // namespace kiln::lower
