// Removes ops that compute their input (Identity, x*1, same-type Cast...); merges Reshapes.
#pragma once
#include "passes/pass.h"
namespace kiln::passes { std::unique_ptr<Pass> CreateSimplifyAlgebraPass(); }
