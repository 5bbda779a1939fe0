// ShuffleNet's channel shuffle after a Concat, Concat(x_1..x_g, axis=1) -> Reshape [N, g, C, H, W]
// -> Transpose [0,2,1,3,4], becomes Concat(Unsqueeze(x_1, 2) .. Unsqueeze(x_g, 2), axis=2): the
// same [N, C, g, H, W] tensor in one copy instead of two (the Unsqueezes are free in place).
#pragma once
#include "passes/pass.h"
namespace kiln::passes { std::unique_ptr<Pass> CreateSimplifyChannelShufflePass(); }
