// Removes nodes nothing reads and constants nothing reads; recurses into subgraphs.
#pragma once
#include "passes/pass.h"
namespace kiln::passes { std::unique_ptr<Pass> CreateDeadCodeEliminationPass(); }
