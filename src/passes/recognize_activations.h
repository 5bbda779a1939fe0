// Rewrites the decomposed activations exporters emit into one kiln op each: Sigmoid+Mul into
// kiln.Silu, HardSigmoid(1/6, 1/2)+Mul into kiln.HardSwish, and torch's erf GELU into kiln.Gelu.
#pragma once
#include "passes/pass.h"
namespace kiln::passes { std::unique_ptr<Pass> CreateRecognizeActivationsPass(); }
