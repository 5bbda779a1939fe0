#include "tools/engine.h"

namespace kiln::tools {

Engine::Engine(const ir::Graph& graph, int threads) : graph_(graph), requested_threads_(threads) {}

Status Engine::Run(const interp::NamedTensors& inputs, std::vector<Tensor>* outputs,
                   const NodeTimeFn& on_node) const {
  interp::RunOptions options;
  options.on_node = on_node;
  return interp::Run(graph_, inputs, outputs, options);
}

std::string Engine::KernelFor(const ir::Node&) const { return "reference"; }

std::string Engine::ThreadsNote() const {
  if (requested_threads_ == threads()) return "";
  return StrCat("--threads ", requested_threads_, " asked, but the ", name(), " uses ", threads(),
                " thread");
}

}  // namespace kiln::tools
