#include "passes/dead_code_elimination.h"

#include "passes/graph_edit.h"

namespace kiln::passes {
namespace {

// Walks backwards from the graph outputs; a node lives if a live node, a graph output, or a live
// node's subgraph (by name) reads one of its outputs. Every ONNX op is free of side effects.
Expected<bool> Eliminate(ir::Graph& g) {
  std::unordered_set<const ir::Value*> live(g.outputs.begin(), g.outputs.end());
  std::set<std::string> live_names;
  std::unordered_set<const ir::Node*> dead;
  for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {
    const ir::Node& n = **it;
    bool needed = false;
    for (const ir::Value* out : n.outputs)
      needed = needed || (out && (live.count(out) || live_names.count(out->name)));
    if (!needed) {
      dead.insert(&n);
      continue;
    }
    for (const ir::Value* in : n.inputs)
      if (in) live.insert(in);
    live_names.merge(NamesReadBySubgraphs(n));
  }
  EraseNodes(g, dead);
  bool dropped = false;
  for (const auto& v : g.values()) {
    if (!v->constant || v->is_graph_input || live.count(v.get()) || live_names.count(v->name))
      continue;
    v->constant.reset();  // the graph cannot remove a value; one without data or producer is gone
    dropped = true;
  }
  return !dead.empty() || dropped;
}

class DeadCodeElimination : public Pass {
 public:
  const char* name() const override { return "dead_code_elimination"; }
  // Subgraphs first (their outputs are their roots), so their outer reads shrink before the
  // parent decides what they keep alive.
  Expected<bool> Run(ir::Graph& graph) const override { return ForEachGraph(graph, Eliminate); }
};

}  // namespace

std::unique_ptr<Pass> CreateDeadCodeEliminationPass() {
  return std::make_unique<DeadCodeElimination>();
}

}  // namespace kiln::passes
