// Runs nodes whose inputs are all constant through the reference kernels; outputs become constants.
#pragma once
#include "passes/pass.h"
namespace kiln::passes { std::unique_ptr<Pass> CreateFoldConstantsPass(); }
