#include "passes/pass_manager.h"

#include <chrono>
#include <cstdio>

#include "ir/printer.h"
#include "ir/verifier.h"

namespace kiln::passes {

size_t CountNodes(const ir::Graph& graph) {
  size_t n = graph.nodes().size();
  for (const auto& node : graph.nodes())
    for (const auto& [name, a] : node->attrs) {
      if (a.g) n += CountNodes(*a.g);
      for (const auto& sub : a.graphs)
        if (sub) n += CountNodes(*sub);
    }
  return n;
}

Status PassManager::Run(ir::Graph& graph) {
  records_.clear();
  if (options_.verify)
    KILN_RETURN_IF_ERROR(ir::Verify(graph).WithContext("before the first pass: "));
  for (const auto& pass : passes_) {
    const std::string name = pass->name();
    if (options_.disabled.count(name)) continue;
    const auto start = std::chrono::steady_clock::now();
    Expected<bool> changed = pass->Run(graph);
    const auto stop = std::chrono::steady_clock::now();
    if (!changed.ok()) return changed.status().WithContext(StrCat("pass '", name, "': "));
    records_.push_back({name, *changed,
                        std::chrono::duration<double, std::milli>(stop - start).count(),
                        CountNodes(graph)});
    if (options_.verify)
      KILN_RETURN_IF_ERROR(
          ir::Verify(graph).WithContext(StrCat("the graph after pass '", name, "' is broken: ")));
    if (options_.ir_out && (options_.print_ir_after == "all" || options_.print_ir_after == name))
      *options_.ir_out << "// ----- IR after " << name << (*changed ? "" : " (unchanged)")
                       << " -----\n"
                       << ir::PrintGraph(graph);
  }
  return Status::Ok();
}

std::string PassManager::TimingReport() const {
  std::string out = "pass                                  time (ms)  changed  nodes\n";
  double total = 0;
  char line[160];
  for (const PassRecord& r : records_) {
    std::snprintf(line, sizeof(line), "%-36s %10.3f  %-7s  %5zu\n", r.name.c_str(), r.ms,
                  r.changed ? "yes" : "no", r.nodes_after);
    out += line;
    total += r.ms;
  }
  std::snprintf(line, sizeof(line), "%-36s %10.3f\n", "total", total);
  return out + line;
}

}  // namespace kiln::passes
