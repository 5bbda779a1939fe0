#include "passes/graph_edit.h"

#include <algorithm>

namespace kiln::passes {
namespace {

void CollectOuterReads(const ir::Graph& g, std::set<std::string>* names) {
  for (const auto& n : g.nodes()) {
    for (const ir::Value* in : n->inputs)
      if (in && in->is_outer) names->insert(in->name);
    for (const auto& [name, a] : n->attrs) {
      if (a.g) CollectOuterReads(*a.g, names);
      for (const auto& sub : a.graphs)
        if (sub) CollectOuterReads(*sub, names);
    }
  }
  for (const ir::Value* out : g.outputs)
    if (out->is_outer) names->insert(out->name);
}

}  // namespace

bool IsGraphOutput(const ir::Graph& g, const ir::Value* v) {
  return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
}

bool HasSubgraph(const ir::Node& n) {
  for (const auto& [name, a] : n.attrs)
    if (a.kind == ir::Attribute::Kind::kGraph || a.kind == ir::Attribute::Kind::kGraphs)
      return true;
  return false;
}

bool IsRandomOp(const ir::Node& n) {
  static const std::set<std::string> kRandom = {"RandomNormal",  "RandomNormalLike",
                                                "RandomUniform", "RandomUniformLike",
                                                "Multinomial",   "Bernoulli"};
  if (!n.domain.empty()) return false;
  if (kRandom.count(n.op_type)) return true;
  // Dropout draws a mask when training_mode is on; unseeded, every run differs. Only a constant
  // false (or absent) training_mode makes it a pure function.
  if (n.op_type == "Dropout" && n.has_input(2)) {
    const ir::Value* t = n.inputs[2];
    return !(t->constant && t->constant->numel() == 1 && t->constant->AsInt64(0) == 0);
  }
  return false;
}

std::set<std::string> NamesReadBySubgraphs(const ir::Node& n) {
  std::set<std::string> names;
  for (const auto& [name, a] : n.attrs) {
    if (a.g) CollectOuterReads(*a.g, &names);
    for (const auto& sub : a.graphs)
      if (sub) CollectOuterReads(*sub, &names);
  }
  return names;
}

std::set<std::string> NamesReadBySubgraphs(const ir::Graph& g) {
  std::set<std::string> names;
  for (const auto& n : g.nodes()) names.merge(NamesReadBySubgraphs(*n));
  return names;
}

std::unordered_map<const ir::Value*, std::vector<ir::Node*>> Users(const ir::Graph& g) {
  std::unordered_map<const ir::Value*, std::vector<ir::Node*>> users;
  for (const auto& n : g.nodes())
    for (const ir::Value* in : n->inputs)
      if (in) users[in].push_back(n.get());
  return users;
}

bool IsUsed(const ir::Graph& g, const ir::Value* v) {
  if (IsGraphOutput(g, v)) return true;
  for (const auto& n : g.nodes())
    if (std::find(n->inputs.begin(), n->inputs.end(), v) != n->inputs.end()) return true;
  return NamesReadBySubgraphs(g).count(v->name) > 0;
}

bool ReplaceAllUses(ir::Graph& g, ir::Value* from, ir::Value* to) {
  if (from == to || from == nullptr || to == nullptr) return false;
  const std::set<std::string> outer = NamesReadBySubgraphs(g);
  if (outer.count(from->name)) return false;
  auto rewire = [&g](ir::Value* a, ir::Value* b) {
    for (auto& n : g.mutable_nodes())
      for (ir::Value*& in : n->inputs)
        if (in == a) in = b;
  };
  if (!IsGraphOutput(g, from)) {
    rewire(from, to);
    return true;
  }
  ir::Node* p = to->producer;
  if (p == nullptr || IsGraphOutput(g, to) || outer.count(to->name)) return false;
  for (ir::Value*& out : p->outputs)
    if (out == to) out = from;
  from->producer = p;
  to->producer = nullptr;
  rewire(to, from);
  return true;
}

void EraseNodes(ir::Graph& g, const std::unordered_set<const ir::Node*>& dead) {
  if (dead.empty()) return;
  auto& nodes = g.mutable_nodes();
  for (const auto& n : nodes) {
    if (!dead.count(n.get())) continue;
    for (ir::Value* out : n->outputs)
      if (out && out->producer == n.get()) out->producer = nullptr;
  }
  nodes.erase(std::remove_if(
                  nodes.begin(), nodes.end(),
                  [&dead](const std::unique_ptr<ir::Node>& n) { return dead.count(n.get()) > 0; }),
              nodes.end());
}

std::string FreshName(const ir::Graph& g, const std::string& base) {
  if (!g.FindValue(base)) return base;
  for (int k = 1;; ++k) {
    std::string name = StrCat(base, '_', k);
    if (!g.FindValue(name)) return name;
  }
}

ir::Value* AddConstant(ir::Graph& g, const std::string& base, Tensor t) {
  ir::Value* v = g.AddValue(FreshName(g, base), ir::ValueType::Of(t.dtype(), t.dims())).value();
  v->constant = std::move(t);
  return v;
}

void MakeConstant(ir::Value* v, Tensor t) {
  v->type = ir::ValueType::Of(t.dtype(), t.dims());
  v->constant = std::move(t);
  v->producer = nullptr;
}

Expected<bool> ForEachGraph(ir::Graph& g, const std::function<Expected<bool>(ir::Graph&)>& fn) {
  bool changed = false;
  for (auto& n : g.mutable_nodes())
    for (auto& [name, a] : n->attrs) {
      std::vector<ir::Graph*> subs;
      if (a.g) subs.push_back(a.g.get());
      for (auto& sub : a.graphs)
        if (sub) subs.push_back(sub.get());
      for (ir::Graph* sub : subs) {
        KILN_ASSIGN_OR_RETURN(bool c, ForEachGraph(*sub, fn));
        changed = changed || c;
      }
    }
  KILN_ASSIGN_OR_RETURN(bool c, fn(g));
  return changed || c;
}

}  // namespace kiln::passes
