// Merges nodes with the same op, inputs and attributes; never nodes with subgraphs or random ops.
#pragma once
#include "passes/pass.h"
namespace kiln::passes { std::unique_ptr<Pass> CreateCommonSubexpressionEliminationPass(); }
