// Structural checks of a graph: every input defined before use, producers consistent, names
// unique, outputs produced. Passes run it after every rewrite in debug builds.
#pragma once

#include "ir/graph.h"
#include "support/status.h"

namespace kiln::ir {

Status Verify(const Graph& graph);

}  // namespace kiln::ir
