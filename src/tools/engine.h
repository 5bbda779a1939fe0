// The one place `kiln bench` and `kiln profile` run a model. Today that is the reference
// interpreter on one thread; when the compiled runtime arrives (issue 4) it replaces the body of
// engine.cc and the instruments stay as they are.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "interp/interpreter.h"
#include "ir/graph.h"
#include "support/status.h"
#include "support/tensor.h"

namespace kiln::tools {

// Called after each top-level node with its wall time in ms.
using NodeTimeFn = std::function<void(const ir::Node& node, double ms)>;

class Engine {
 public:
  // `graph` must outlive the engine. `threads` is what the user asked for; threads() says what
  // the engine really uses.
  Engine(const ir::Graph& graph, int threads);

  Status Run(const interp::NamedTensors& inputs, std::vector<Tensor>* outputs,
             const NodeTimeFn& on_node = {}) const;

  const char* name() const { return "reference interpreter"; }
  int threads() const { return 1; }
  // The kernel that runs `node` ("reference" until kernel selection exists).
  std::string KernelFor(const ir::Node& node) const;
  // One line for the user when the thread count asked for is not the one used; "" otherwise.
  std::string ThreadsNote() const;

 private:
  const ir::Graph& graph_;
  int requested_threads_;
};

}  // namespace kiln::tools
