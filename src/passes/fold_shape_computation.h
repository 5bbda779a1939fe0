// Shape and Size of values whose dims are static become constants (fold_constants folds the rest).
#pragma once
#include "passes/pass.h"
namespace kiln::passes { std::unique_ptr<Pass> CreateFoldShapeComputationPass(); }
