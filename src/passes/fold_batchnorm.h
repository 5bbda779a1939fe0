// Folds BatchNormalization and per-channel constant Mul/Add after a Conv or Gemm into its weights.
#pragma once
#include "passes/pass.h"
namespace kiln::passes { std::unique_ptr<Pass> CreateFoldBatchNormPass(); }
