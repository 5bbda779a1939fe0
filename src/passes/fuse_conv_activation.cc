#include "passes/fuse_conv_activation.h"

#include <cmath>
#include <limits>
#include <optional>

#include "passes/graph_edit.h"

namespace kiln::passes {
namespace {

bool Is(const ir::Node* n, const char* op) {
  return n && n->domain.empty() && n->op_type == op && n->outputs.size() == 1 && n->has_output(0);
}

bool IsKiln(const ir::Node* n, const char* op) {
  return n && n->domain == "kiln" && n->op_type == op && n->outputs.size() == 1 && n->has_output(0);
}

bool IsFloat32(const ir::Value* v) { return v && v->type.dtype == DType::kFloat32; }

int64_t Rank(const ir::Value* v) {
  if (v && v->constant) return v->constant->rank();
  return v && v->type.shape ? static_cast<int64_t>(v->type.shape->size()) : -1;
}

const Tensor* Float32Constant(const ir::Node& n, size_t i) {
  if (!n.has_input(i) || !n.inputs[i]->constant) return nullptr;
  const Tensor* t = &*n.inputs[i]->constant;
  return t->dtype() == DType::kFloat32 ? t : nullptr;
}

// An epilogue of kiln.FusedConv/FusedGemm: `activation` and `activation_params`.
struct Epilogue {
  const char* name;
  std::vector<float> params;
};

// Clip's bounds, when both are known at compile time: constant inputs, or the attributes of
// opsets before 11 (the reference Clip reads those too). An absent bound is the float range.
std::optional<Epilogue> ClipEpilogue(const ir::Node& clip) {
  if (clip.inputs.size() > 3) return std::nullopt;
  float bounds[2] = {std::numeric_limits<float>::lowest(), std::numeric_limits<float>::max()};
  ir::AttrReader r(clip);
  for (size_t i = 1; i <= 2; ++i) {
    if (clip.has_input(i)) {
      const Tensor* b = Float32Constant(clip, i);
      if (b == nullptr || b->numel() != 1) return std::nullopt;
      bounds[i - 1] = b->data<float>()[0];
    } else if (r.Has(i == 1 ? "min" : "max")) {
      bounds[i - 1] = r.Float(i == 1 ? "min" : "max", 0);
    }
  }
  if (!r.status().ok() || std::isnan(bounds[0]) || std::isnan(bounds[1])) return std::nullopt;
  return Epilogue{"Clip", {bounds[0], bounds[1]}};
}

// The epilogue `act` computes, if it is one that the fused kernels apply (gemm::Activation).
std::optional<Epilogue> EpilogueOf(const ir::Node& act) {
  if (Is(&act, "Clip")) return ClipEpilogue(act);
  if (act.inputs.size() != 1) return std::nullopt;
  if (Is(&act, "Relu")) return Epilogue{"Relu", {}};
  if (Is(&act, "HardSwish") || IsKiln(&act, "HardSwish")) return Epilogue{"HardSwish", {}};
  if (IsKiln(&act, "Silu")) return Epilogue{"Silu", {}};
  if (Is(&act, "Gelu") || IsKiln(&act, "Gelu")) {
    // The epilogue has the erf form only.
    ir::AttrReader r(act);
    if (r.String("approximate", "none") == "none" && r.status().ok()) return Epilogue{"Gelu", {}};
  }
  return std::nullopt;
}

struct Matcher {
  ir::Graph& g;
  std::unordered_map<const ir::Value*, std::vector<ir::Node*>> users;
  const std::set<std::string>& outer;

  // Whether `reader` alone reads v (once) and v is neither a graph output nor read by a
  // subgraph: only then may the rewrite drop v.
  bool Private(const ir::Value* v, const ir::Node* reader) const {
    if (v == nullptr || IsGraphOutput(g, v) || outer.count(v->name)) return false;
    auto it = users.find(v);
    return it != users.end() && it->second.size() == 1 && it->second[0] == reader;
  }
};

// p (which produced x) produces y instead; x is left without producer or reader.
void TakeOverOutput(ir::Node& p, ir::Value* y) {
  p.outputs[0]->producer = nullptr;
  p.outputs[0] = y;
  y->producer = &p;
}

// A BatchNormalization that kiln.FusedBatchNorm can stand for: inference (one output,
// training_mode 0), float32 X of rank >= 2, all four statistics given, and no opset 7-8
// `spatial` (its per-element form is not the fused op's).
bool InferenceBatchNorm(const ir::Node* n) {
  if (!Is(n, "BatchNormalization") || n->inputs.size() != 5 || !IsFloat32(n->inputs[0]) ||
      Rank(n->inputs[0]) < 2)
    return false;
  for (size_t i = 1; i < 5; ++i)
    if (!n->has_input(i)) return false;
  ir::AttrReader r(*n);
  return r.Int("training_mode", 0) == 0 && !r.Has("spatial") && r.status().ok();
}

// Conv/Gemm/BatchNormalization -> activation: the producer becomes kiln.FusedConv/FusedGemm/
// FusedBatchNorm and takes over the activation's output (keeping its name, which may be a graph
// output).
bool TryActivation(Matcher& m, ir::Node& act, std::unordered_set<const ir::Node*>* dead) {
  if (!act.has_input(0) || act.outputs.size() != 1 || !act.has_output(0)) return false;
  ir::Value* x = act.inputs[0];
  ir::Node* p = x->producer;
  if (!m.Private(x, &act) || !IsFloat32(x)) return false;
  const char* fused = nullptr;
  if (Is(p, "Conv") && p->inputs.size() <= 3 && p->has_input(1) && IsFloat32(p->inputs[0]) &&
      Rank(p->inputs[0]) == 4 && Rank(p->inputs[1]) == 4)
    fused = "FusedConv";
  else if (Is(p, "Gemm") && IsFloat32(p->inputs[0]))
    fused = "FusedGemm";
  else if (InferenceBatchNorm(p))
    fused = "FusedBatchNorm";
  if (fused == nullptr) return false;
  std::optional<Epilogue> e = EpilogueOf(act);
  if (!e) return false;

  if (m.g.opset("kiln") == 0) m.g.opset_imports["kiln"] = 1;
  p->op_type = fused;
  p->domain = "kiln";
  p->opset = m.g.opset("kiln");
  ir::Attribute name;
  name.kind = ir::Attribute::Kind::kString;
  name.s = e->name;
  p->attrs["activation"] = name;
  if (!e->params.empty()) {
    ir::Attribute params;
    params.kind = ir::Attribute::Kind::kFloats;
    params.floats = e->params;
    p->attrs["activation_params"] = params;
  }
  TakeOverOutput(*p, act.outputs[0]);
  dead->insert(&act);
  return true;
}

// MatMul(X [M, K], constant W [K, N]) -> Add(constant bias [N] or [1, N]), either Add order:
// exactly Gemm(X, W, bias). It stays a plain Gemm unless an activation follows, which the next
// scan folds in (FusedGemm always has an activation).
bool TryMatMulAdd(Matcher& m, ir::Node& add, std::unordered_set<const ir::Node*>* dead) {
  if (!Is(&add, "Add") || add.inputs.size() != 2) return false;
  for (size_t k = 0; k < 2; ++k) {
    ir::Value* prod = add.inputs[k];
    ir::Node* mm = prod ? prod->producer : nullptr;
    if (!Is(mm, "MatMul") || mm->inputs.size() != 2 || !m.Private(prod, &add)) continue;
    ir::Value* x = mm->inputs[0];
    const Tensor* w = Float32Constant(*mm, 1);
    const Tensor* bias = Float32Constant(add, 1 - k);
    if (!IsFloat32(x) || Rank(x) != 2 || !w || w->rank() != 2 || !bias) continue;
    const int64_t n = w->dim(1);
    const bool per_column = (bias->rank() == 1 && bias->dim(0) == n) ||
                            (bias->rank() == 2 && bias->dim(0) == 1 && bias->dim(1) == n);
    if (!per_column) continue;
    mm->op_type = "Gemm";
    mm->inputs = {x, mm->inputs[1], add.inputs[1 - k]};
    TakeOverOutput(*mm, add.outputs[0]);
    dead->insert(&add);
    return true;
  }
  return false;
}

Expected<bool> Fuse(ir::Graph& g) {
  // A Gemm made from MatMul+Add meets the activation after it on the next scan.
  return RewriteOneAtATime<Matcher>(
      g, [](Matcher& m, ir::Node& n, std::unordered_set<const ir::Node*>* dead) {
        return TryMatMulAdd(m, n, dead) || TryActivation(m, n, dead);
      });
}

class FuseConvActivation : public Pass {
 public:
  const char* name() const override { return "fuse_conv_activation"; }
  Expected<bool> Run(ir::Graph& graph) const override { return ForEachGraph(graph, Fuse); }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseConvActivationPass() {
  return std::make_unique<FuseConvActivation>();
}

}  // namespace kiln::passes
