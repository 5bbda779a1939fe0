// A pass: a named graph rewrite. One pass per file with one factory; a pass keeps no state
// between runs, touches only the graph it is given, and running it twice changes nothing the
// second time. The order of passes lives in one pipeline file.
#pragma once

#include <memory>
#include <string>

#include "ir/graph.h"
#include "support/status.h"

namespace kiln::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual const char* name() const = 0;
  // Returns whether the graph changed.
  virtual Expected<bool> Run(ir::Graph& graph) const = 0;
};

}  // namespace kiln::passes
