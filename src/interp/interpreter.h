// The reference interpreter: runs any ir::Graph node by node with the reference kernels. It is the
// oracle that optimized kernels and passes are tested against, so it favours clarity over speed.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "support/status.h"
#include "support/tensor.h"

namespace kiln::interp {

// Named inputs for Run; every graph input without an initializer must be present.
using NamedTensors = std::map<std::string, Tensor>;

struct RunOptions {
  // Off only for test data known to contradict its own model's declared shapes (some ONNX
  // backend cases); element types are always checked.
  bool check_input_shapes = true;
  // Called after each top-level node with its wall time in ms (the profiler's hook); subgraph
  // nodes are counted inside their If/Loop/Scan.
  std::function<void(const ir::Node& node, double ms)> on_node;
};

// Checks every node's op is supported (all missing ops reported at once), then runs the graph.
// Inputs are checked against the graph's declared types: a missing input, a wrong dtype, a wrong
// rank or a static dim that differs, or a symbolic dim bound to two sizes, is an error.
Status Run(const ir::Graph& graph, const NamedTensors& inputs, std::vector<Tensor>* outputs,
           const RunOptions& options = {});

}  // namespace kiln::interp
