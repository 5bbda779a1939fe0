// Fuses an activation into the Conv (2-D, float32) or Gemm before it (kiln.FusedConv/FusedGemm),
// and MatMul(X, constant W) + Add(constant bias) into one Gemm first.
#pragma once
#include "passes/pass.h"
namespace kiln::passes { std::unique_ptr<Pass> CreateFuseConvActivationPass(); }
