// Re-runs shape and type inference over the graph. Rewrites build new nodes whose outputs carry
// what the rewrite knew, and folding turns shape inputs into constants; inference after them
// makes those dims static again, which is what lowering needs to pick native kernels.
#pragma once
#include "passes/pass.h"
namespace kiln::passes { std::unique_ptr<Pass> CreateInferShapesPass(); }
