#include "passes/fold_constants.h"

#include <exception>

#include "ops/op_registry.h"
#include "passes/graph_edit.h"

namespace kiln::passes {
namespace {

// Folding must not turn a small graph into a large file: outputs above this stay computed.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 20;

bool IsHalf(const Tensor* t) {
  return t && (t->dtype() == DType::kFloat16 || t->dtype() == DType::kBFloat16);
}

bool TooLarge(const ir::Value* v) {
  if (v == nullptr || !v->type.has_static_shape()) return false;
  int64_t n = 1;
  for (int64_t d : v->type.static_dims()) {
    if (d > kMaxFoldedElements) return true;
    n *= d;
    if (n > kMaxFoldedElements) return true;
  }
  return false;
}

// Runs n's reference kernel; nullopt when the node cannot or should not fold. A kernel error is
// left for run time to report, where the user sees it with real inputs.
std::optional<std::vector<Tensor>> Evaluate(const ir::Node& n) {
  const ops::OpDef* def = ops::FindOp(n.domain, n.op_type);
  if (def == nullptr) return std::nullopt;
  ops::RunContext ctx{n, {}, {}, {}};
  for (const ir::Value* in : n.inputs) ctx.inputs.push_back(in ? &*in->constant : nullptr);
  // The interpreter widens half inputs for such ops; folding leaves them to it.
  for (const Tensor* t : ctx.inputs)
    if (def->promote_half && IsHalf(t)) return std::nullopt;
  ctx.outputs.resize(n.outputs.size());
  try {
    if (!def->run(ctx).ok()) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    if (n.outputs[i] == nullptr) continue;
    if (!ctx.outputs[i].defined() || ctx.outputs[i].numel() > kMaxFoldedElements)
      return std::nullopt;
    // A sequence/optional is no constant a graph (or a .kiln file) can hold: it stays computed.
    if (IsContainer(ctx.outputs[i].dtype())) return std::nullopt;
  }
  return std::move(ctx.outputs);
}

Expected<bool> Fold(ir::Graph& g) {
  std::unordered_set<const ir::Node*> dead;
  for (auto& up : g.mutable_nodes()) {
    ir::Node& n = *up;
    if (HasSubgraph(n) || IsRandomOp(n) || n.outputs.empty()) continue;
    bool all_constant = true;
    for (const ir::Value* in : n.inputs) all_constant = all_constant && (!in || in->constant);
    if (!all_constant) continue;
    bool too_large = false;
    for (const ir::Value* out : n.outputs) too_large = too_large || TooLarge(out);
    if (too_large) continue;
    std::optional<std::vector<Tensor>> results = Evaluate(n);
    if (!results) continue;
    // Topological order: later nodes of a constant chain see these outputs as constants.
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i]) MakeConstant(n.outputs[i], (*results)[i]);
    dead.insert(&n);
  }
  EraseNodes(g, dead);
  return !dead.empty();
}

class FoldConstants : public Pass {
 public:
  const char* name() const override { return "fold_constants"; }
  // Subgraphs fold too, from their own constants (outer-scope values are not constant there).
  Expected<bool> Run(ir::Graph& graph) const override { return ForEachGraph(graph, Fold); }
};

}  // namespace

std::unique_ptr<Pass> CreateFoldConstantsPass() { return std::make_unique<FoldConstants>(); }

}  // namespace kiln::passes
