// Fuses an activation into the Conv (2-D, float32), Gemm or inference BatchNormalization before
// it (kiln.FusedConv/FusedGemm/FusedBatchNorm), and MatMul(X, constant W) + Add(constant bias)
// into one Gemm first.
#pragma once
#include "passes/pass.h"
namespace kiln::passes { std::unique_ptr<Pass> CreateFuseConvActivationPass(); }
