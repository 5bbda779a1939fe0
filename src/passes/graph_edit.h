// Graph edits the passes share: who reads a value, rewiring uses so that graph outputs keep their
// names, erasing nodes, fresh names, new constants, and visiting subgraphs.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "support/status.h"
#include "support/tensor.h"

namespace kiln::passes {

bool IsGraphOutput(const ir::Graph& g, const ir::Value* v);
bool HasSubgraph(const ir::Node& n);
// Ops whose result differs run to run: never merged, never folded.
bool IsRandomOp(const ir::Node& n);
// Names that the subgraphs of n (or of every node of g), at any depth, read from an enclosing
// scope. Outer-scope values resolve by name, so rewrites must leave these names alone.
std::set<std::string> NamesReadBySubgraphs(const ir::Node& n);
std::set<std::string> NamesReadBySubgraphs(const ir::Graph& g);
// The nodes of g reading each value (a node reading a value twice appears twice).
std::unordered_map<const ir::Value*, std::vector<ir::Node*>> Users(const ir::Graph& g);
// Whether anything reads v: a node of g, a graph output of g, or a subgraph by name.
bool IsUsed(const ir::Graph& g, const ir::Value* v);

// Makes every reader of `from` in g read `to`. A graph output keeps its name: when `from` is
// one, the node producing `to` produces `from` instead (so `to` must be a node output of g that is
// neither a graph output nor read by a subgraph). Returns false, changing nothing, when that is
// impossible or when a subgraph reads `from` by name; the caller then leaves its rewrite undone.
bool ReplaceAllUses(ir::Graph& g, ir::Value* from, ir::Value* to);

// Removes nodes from g; their outputs that are still theirs lose their producer.
void EraseNodes(ir::Graph& g, const std::unordered_set<const ir::Node*>& dead);

// Rewrites g one match at a time until nothing matches, and returns whether anything did. Each
// scan builds a fresh matcher M{g, Users(g), names read by subgraphs} and calls
// try_at(matcher, node, &dead) on the nodes in order; the first that returns true ends the scan,
// the nodes it put in `dead` are erased, and the next scan sees exact reader counts on the
// edited graph.
template <class M, class TryAt>
bool RewriteOneAtATime(ir::Graph& g, TryAt&& try_at) {
  const std::set<std::string> outer = NamesReadBySubgraphs(g);
  bool changed = false;
  for (bool hit = true; hit;) {
    hit = false;
    M m{g, Users(g), outer};
    std::unordered_set<const ir::Node*> dead;
    for (auto& n : g.mutable_nodes()) {
      if (try_at(m, *n, &dead)) {
        hit = changed = true;
        break;
      }
    }
    EraseNodes(g, dead);
  }
  return changed;
}

// `base`, or `base_1`, `base_2`... whichever no value of g has.
std::string FreshName(const ir::Graph& g, const std::string& base);
ir::Value* AddConstant(ir::Graph& g, const std::string& base, Tensor t);
// Turns the output of a folded node into a constant; the caller erases the node.
void MakeConstant(ir::Value* v, Tensor t);

// Runs `fn` on g and on every subgraph below it (subgraphs first); true if any run changed.
Expected<bool> ForEachGraph(ir::Graph& g, const std::function<Expected<bool>(ir::Graph&)>& fn);

}  // namespace kiln::passes
