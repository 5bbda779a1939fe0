#include "passes/common_subexpression_elimination.h"

#include <cstring>

#include "passes/graph_edit.h"

namespace kiln::passes {
namespace {

bool SameTensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.dims() != b.dims()) return false;
  if (a.dtype() == DType::kString) return a.strings() == b.strings();
  return std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// Equal constants count as the same input, so duplicated initializers do not hide a match.
bool SameInput(const ir::Value* a, const ir::Value* b) {
  if (a == b) return true;
  return a && b && a->constant && b->constant && SameTensor(*a->constant, *b->constant);
}

bool SameAttribute(const ir::Attribute& a, const ir::Attribute& b) {
  using K = ir::Attribute::Kind;
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case K::kFloat:
      return a.f == b.f;
    case K::kInt:
      return a.i == b.i;
    case K::kString:
      return a.s == b.s;
    case K::kTensor:
      return SameTensor(a.t, b.t);
    case K::kFloats:
      return a.floats == b.floats;
    case K::kInts:
      return a.ints == b.ints;
    case K::kStrings:
      return a.strings == b.strings;
    case K::kTensors:
      if (a.tensors.size() != b.tensors.size()) return false;
      for (size_t i = 0; i < a.tensors.size(); ++i)
        if (!SameTensor(a.tensors[i], b.tensors[i])) return false;
      return true;
    case K::kGraph:
    case K::kGraphs:
      return false;
  }
  return false;
}

bool SameComputation(const ir::Node& a, const ir::Node& b) {
  if (a.op_type != b.op_type || a.domain != b.domain || a.opset != b.opset) return false;
  if (a.inputs.size() != b.inputs.size() || a.outputs.size() != b.outputs.size()) return false;
  if (a.attrs.size() != b.attrs.size()) return false;
  for (size_t i = 0; i < a.inputs.size(); ++i)
    if (!SameInput(a.inputs[i], b.inputs[i])) return false;
  for (size_t i = 0; i < a.outputs.size(); ++i)
    if ((a.outputs[i] == nullptr) != (b.outputs[i] == nullptr)) return false;
  for (const auto& [name, attr] : a.attrs) {
    const ir::Attribute* other = b.attr(name);
    if (!other || !SameAttribute(attr, *other)) return false;
  }
  return true;
}

// Buckets candidates by op and input identity (constants by type only: contents compare later).
std::string Key(const ir::Node& n) {
  std::string k = StrCat(n.op_type, '@', n.domain, '/', n.inputs.size());
  for (const ir::Value* in : n.inputs)
    k += in && in->constant ? StrCat('|', DescribeTensor(*in->constant))
                            : StrCat('|', static_cast<const void*>(in));
  return k;
}

// Every output of `dup` can be replaced by the same output of `kept` (see ReplaceAllUses).
bool CanMerge(const ir::Graph& g, const ir::Node& dup, const ir::Node& kept,
              const std::set<std::string>& outer) {
  for (size_t i = 0; i < dup.outputs.size(); ++i) {
    const ir::Value* from = dup.outputs[i];
    const ir::Value* to = kept.outputs[i];
    if (from == nullptr) continue;
    if (outer.count(from->name)) return false;
    if (IsGraphOutput(g, from) && (IsGraphOutput(g, to) || outer.count(to->name))) return false;
  }
  return true;
}

Expected<bool> Eliminate(ir::Graph& g) {
  const std::set<std::string> outer = NamesReadBySubgraphs(g);
  std::unordered_map<std::string, std::vector<ir::Node*>> seen;
  std::unordered_set<const ir::Node*> dead;
  for (auto& up : g.mutable_nodes()) {
    ir::Node& n = *up;
    if (HasSubgraph(n) || IsRandomOp(n) || n.outputs.empty()) continue;
    std::vector<ir::Node*>& bucket = seen[Key(n)];
    ir::Node* kept = nullptr;
    for (ir::Node* c : bucket)
      if (SameComputation(*c, n)) kept = c;
    if (kept == nullptr || !CanMerge(g, n, *kept, outer)) {
      bucket.push_back(&n);
      continue;
    }
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i]) ReplaceAllUses(g, n.outputs[i], kept->outputs[i]);
    dead.insert(&n);
  }
  EraseNodes(g, dead);
  return !dead.empty();
}

class CommonSubexpressionElimination : public Pass {
 public:
  const char* name() const override { return "common_subexpression_elimination"; }
  // Each graph on its own: a subgraph's nodes never merge with its parent's.
  Expected<bool> Run(ir::Graph& graph) const override { return ForEachGraph(graph, Eliminate); }
};

}  // namespace

std::unique_ptr<Pass> CreateCommonSubexpressionEliminationPass() {
  return std::make_unique<CommonSubexpressionElimination>();
}

}  // namespace kiln::passes
