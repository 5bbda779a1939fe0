// Merges chains of two or more float unary elementwise ops into one kiln.FusedElementwise.
#pragma once
#include "passes/pass.h"
namespace kiln::passes { std::unique_ptr<Pass> CreateFuseElementwisePass(); }
