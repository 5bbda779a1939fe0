#include "ir/verifier.h"

#include <unordered_set>

namespace kiln::ir {

Status Verify(const Graph& g) {
  std::unordered_set<const Value*> defined;
  std::unordered_set<std::string> names;
  for (const auto& v : g.values()) {
    if (!names.insert(v->name).second)
      return Status::Error("graph '", g.name, "': two values are named '", v->name, "'");
    if (v->constant || v->is_graph_input || v->is_outer) defined.insert(v.get());
  }
  for (const auto& n : g.nodes()) {
    for (const Value* in : n->inputs)
      if (in != nullptr && !defined.count(in))
        return Status::Error(n->Where(), "input '", in->name, "' is used before it is defined");
    for (const Value* out : n->outputs) {
      if (out == nullptr) continue;
      if (out->producer != n.get())
        return Status::Error(n->Where(), "output '", out->name, "' names another producer");
      if (!defined.insert(out).second)
        return Status::Error(n->Where(), "output '", out->name, "' is defined twice");
    }
    for (const auto& [name, a] : n->attrs) {
      if (a.g) KILN_RETURN_IF_ERROR(Verify(*a.g));
      for (const auto& sub : a.graphs)
        if (sub) KILN_RETURN_IF_ERROR(Verify(*sub));
    }
  }
  for (const Value* out : g.outputs)
    if (!defined.count(out))
      return Status::Error("graph '", g.name, "': output '", out->name, "' is never produced");
  return Status::Ok();
}

}  // namespace kiln::ir
