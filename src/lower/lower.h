// Lowering: an optimized ir::Graph becomes a runtime::Module. Each node, in topological order,
// is offered to the native lowerings (lower/native.h), which pick a runtime kernel, prepack its
// weights into blobs and emit a step. Nodes none of them claims are gathered, a contiguous run
// at a time (which keeps each group convex), into reference partitions: steps that run the
// nodes' text IR on the reference interpreter (runtime_ref/).
#pragma once

#include <cstddef>
#include <string>

#include "ir/graph.h"
#include "runtime/module.h"
#include "support/cpu.h"
#include "support/status.h"

namespace kiln::lower {

struct LowerOptions {
  // The ISA whose kernels and packed layouts the module uses; the module records it.
  IsaLevel isa = ActiveIsa();
  // false (-O0): every node goes to reference partitions.
  bool native = true;
  // -O3: convolution algorithms are measured on this machine (one thread) rather than picked by
  // the cost model. Slower to compile; the module still runs anywhere its ISA does.
  bool measure_algorithms = false;
  std::string producer;
};

struct LowerReport {
  size_t native_steps = 0;
  size_t reference_steps = 0;  // partitions
  size_t reference_nodes = 0;  // nodes inside them
};

Expected<runtime::Module> Lower(const ir::Graph& graph, const LowerOptions& options,
                                LowerReport* report = nullptr);

}  // namespace kiln::lower
