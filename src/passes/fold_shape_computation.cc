#include "passes/fold_shape_computation.h"

#include <algorithm>

#include "passes/graph_edit.h"

namespace kiln::passes {
namespace {

// Shape(x) (with opset 15's start/end) when the dims it returns are static, Size(x) when all are.
std::optional<Tensor> StaticShapeOf(const ir::Node& n) {
  if (!n.domain.empty() || !n.has_input(0) || !n.has_output(0)) return std::nullopt;
  const ir::ValueType& t = n.inputs[0]->type;
  if (!t.shape) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(t.shape->size());
  if (n.op_type == "Size") {
    if (!t.has_static_shape()) return std::nullopt;
    int64_t numel = 1;
    for (int64_t d : t.static_dims()) numel *= d;
    return Tensor::Scalar<int64_t>(numel);
  }
  if (n.op_type != "Shape") return std::nullopt;
  ir::AttrReader attrs(n);
  auto clamp = [rank](int64_t i) { return std::clamp(i < 0 ? i + rank : i, int64_t{0}, rank); };
  const int64_t start = clamp(attrs.Int("start", 0)), end = clamp(attrs.Int("end", rank));
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) {
    const ir::Dim& d = (*t.shape)[i];
    if (!d.is_static()) return std::nullopt;
    dims.push_back(d.value);
  }
  return Tensor::FromVector(dims, {static_cast<int64_t>(dims.size())});
}

Expected<bool> Fold(ir::Graph& g) {
  std::unordered_set<const ir::Node*> dead;
  for (auto& up : g.mutable_nodes()) {
    std::optional<Tensor> shape = StaticShapeOf(*up);
    if (!shape) continue;
    MakeConstant(up->outputs[0], std::move(*shape));
    dead.insert(up.get());
  }
  EraseNodes(g, dead);
  return !dead.empty();
}

class FoldShapeComputation : public Pass {
 public:
  const char* name() const override { return "fold_shape_computation"; }
  // Recurses into subgraphs: a subgraph value with static dims folds the same way.
  Expected<bool> Run(ir::Graph& graph) const override { return ForEachGraph(graph, Fold); }
};

}  // namespace

std::unique_ptr<Pass> CreateFoldShapeComputationPass() {
  return std::make_unique<FoldShapeComputation>();
}

}  // namespace kiln::passes
