// Runs every node's shape and type inference in order, merging with types the model declared.
#pragma once

#include "ir/graph.h"
#include "support/status.h"

namespace kiln::ops {

// Unsupported ops are skipped (their outputs stay as declared); CheckSupported reports them.
Status InferShapes(ir::Graph& graph);

}  // namespace kiln::ops
