#include "passes/fold_batchnorm.h"

#include "passes/graph_edit.h"
#include "passes/weight_math.h"

namespace kiln::passes {
namespace {

bool Is(const ir::Node* n, const char* op) { return n && n->domain.empty() && n->op_type == op; }

const Tensor* Float32Constant(const ir::Node& n, size_t i) {
  if (!n.has_input(i) || !n.inputs[i]->constant) return nullptr;
  const Tensor* t = &*n.inputs[i]->constant;
  return t->dtype() == DType::kFloat32 ? t : nullptr;
}

// What the folded affine map follows: a Conv or Gemm with constant float32 weights whose output
// `x` only the affine node reads.
struct Producer {
  ir::Node* node = nullptr;
  int64_t out_rank = 0;  // rank of its output: W's for Conv, 2 for Gemm
  int64_t channels = 0;  // extent of the output's axis 1
};

std::optional<Producer> FoldableProducer(const ir::Graph& g, const ir::Value* x) {
  if (!x || IsGraphOutput(g, x) || NamesReadBySubgraphs(g).count(x->name)) return std::nullopt;
  ir::Node* p = x->producer;
  if (!(Is(p, "Conv") || Is(p, "Gemm")) || p->outputs.size() != 1) return std::nullopt;
  auto users = Users(g);
  if (users[x].size() != 1) return std::nullopt;
  const Tensor* w = Float32Constant(*p, 1);
  if (!w) return std::nullopt;
  if (p->has_input(2) && !Float32Constant(*p, 2)) return std::nullopt;
  if (Is(p, "Conv")) {
    if (w->rank() < 3) return std::nullopt;
    return Producer{p, w->rank(), w->dim(0)};
  }
  if (w->rank() != 2) return std::nullopt;
  const bool trans_b = ir::AttrReader(*p).Int("transB", 0) != 0;
  return Producer{p, 2, w->dim(trans_b ? 0 : 1)};
}

// Gemm's C as one value per output column (times beta), or nullopt when C varies by row.
std::optional<std::vector<float>> GemmBiasPerColumn(const ir::Node& gemm, int64_t columns) {
  if (!gemm.has_input(2)) return std::vector<float>{};
  const Tensor& c = *gemm.inputs[2]->constant;
  const float beta = ir::AttrReader(gemm).Float("beta", 1.0f);
  std::vector<float> v = c.ToFloatVector();
  const bool per_column =
      c.numel() == columns && (c.rank() == 1 || (c.rank() == 2 && c.dim(0) == 1));
  if (c.numel() == 1)
    v.assign(columns, v[0]);
  else if (!per_column)
    return std::nullopt;
  for (float& x : v) x *= beta;
  return v;
}

// "w" -> "w_folded"; a weight folded again keeps one suffix (FreshName numbers it).
std::string FoldedName(const std::string& name) {
  const std::string suffix = "_folded";
  const bool has = name.size() >= suffix.size() &&
                   name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  return has ? name : name + suffix;
}

// Folds y = x * scale + shift into p's weights and bias; p then produces y directly.
bool FoldInto(ir::Graph& g, const Producer& p, const ChannelAffine& affine, ir::Value* y) {
  ir::Node& n = *p.node;
  const bool gemm = Is(&n, "Gemm");
  const bool trans_b = gemm && ir::AttrReader(n).Int("transB", 0) != 0;
  std::vector<float> bias;
  if (gemm) {
    auto c = GemmBiasPerColumn(n, p.channels);
    if (!c) return false;
    bias = *c;
  } else if (n.has_input(2)) {
    bias = n.inputs[2]->constant->ToFloatVector();
  }
  ir::Value* w = n.inputs[1];
  Tensor w2 = ScaleSlices(*w->constant, gemm && !trans_b ? 1 : 0, affine.scale);
  Tensor b2 = Tensor::FromVector(AffineBias(bias, affine), {p.channels});
  const std::string bias_base = n.has_input(2) ? n.inputs[2]->name : w->name + "_bias";
  n.inputs[1] = AddConstant(g, FoldedName(w->name), std::move(w2));
  n.inputs.resize(3, nullptr);
  n.inputs[2] = AddConstant(g, FoldedName(bias_base), std::move(b2));
  if (gemm) {
    ir::Attribute beta;
    beta.kind = ir::Attribute::Kind::kFloat;
    beta.f = 1.0f;
    n.attrs["beta"] = beta;
  }
  // p takes over y (keeping y's name, which may be a graph output); x is left unread.
  n.outputs[0]->producer = nullptr;
  n.outputs[0] = y;
  y->producer = &n;
  return true;
}

// Inference BatchNormalization with constant float32 parameters, as an affine map.
std::optional<ChannelAffine> BatchNormAsAffine(const ir::Graph& g, const ir::Node& bn) {
  ir::AttrReader attrs(bn);
  if (attrs.Int("training_mode", 0) != 0 || attrs.Int("spatial", 1) != 1) return std::nullopt;
  for (size_t i = 1; i < bn.outputs.size(); ++i)
    if (bn.outputs[i] && IsUsed(g, bn.outputs[i])) return std::nullopt;
  const Tensor* params[4];
  for (size_t i = 0; i < 4; ++i) {
    params[i] = Float32Constant(bn, i + 1);
    if (!params[i] || params[i]->rank() != 1 || params[i]->numel() != params[0]->numel())
      return std::nullopt;
  }
  return BatchNormAffine(params[0]->ToFloatVector(), params[1]->ToFloatVector(),
                         params[2]->ToFloatVector(), params[3]->ToFloatVector(),
                         attrs.Float("epsilon", 1e-5f));
}

// One trigger node: BatchNormalization(x, ...), Mul(x, c) or Add(x, c) (either order).
bool TryFold(ir::Graph& g, ir::Node& n) {
  if (!n.has_output(0) || n.inputs.size() < 2) return false;
  if (Is(&n, "BatchNormalization")) {
    auto p = FoldableProducer(g, n.inputs[0]);
    if (!p) return false;
    auto affine = BatchNormAsAffine(g, n);
    if (!affine || static_cast<int64_t>(affine->scale.size()) != p->channels) return false;
    return FoldInto(g, *p, *affine, n.outputs[0]);
  }
  const bool mul = Is(&n, "Mul");
  if (!(mul || Is(&n, "Add")) || n.inputs.size() != 2) return false;
  for (size_t k = 0; k < 2; ++k) {
    const Tensor* c = Float32Constant(n, 1 - k);
    auto p = c ? FoldableProducer(g, n.inputs[k]) : std::nullopt;
    if (!p) continue;
    auto values = PerChannelValues(*c, p->out_rank, p->channels);
    if (!values) continue;
    ChannelAffine affine{std::vector<float>(p->channels, 1.0f),
                         std::vector<float>(p->channels, 0.0f)};
    (mul ? affine.scale : affine.shift) = *values;
    return FoldInto(g, *p, affine, n.outputs[0]);
  }
  return false;
}

Expected<bool> Fold(ir::Graph& g) {
  std::unordered_set<const ir::Node*> dead;
  // Topological order: Conv -> BatchNormalization -> Mul folds in one walk, each step into the
  // Conv that the previous one left producing the next node's input.
  for (auto& up : g.mutable_nodes())
    if (TryFold(g, *up)) dead.insert(up.get());
  EraseNodes(g, dead);
  return !dead.empty();
}

class FoldBatchNorm : public Pass {
 public:
  const char* name() const override { return "fold_batchnorm"; }
  // Recurses into subgraphs; a Conv output a subgraph reads by name is left alone.
  Expected<bool> Run(ir::Graph& graph) const override { return ForEachGraph(graph, Fold); }
};

}  // namespace

std::unique_ptr<Pass> CreateFoldBatchNormPass() { return std::make_unique<FoldBatchNorm>(); }

}  // namespace kiln::passes
