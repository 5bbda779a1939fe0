// A batchnorm step (with ReLU or no activation) and the 2x2 stride-2 average pool that alone
// reads it, as one step, on the lowered module.
//
// DenseNet's transitions run BN -> ReLU -> 2x2 average pool (the 1x1 conv between them moved
// after the pool: passes/pool_before_conv1x1.h), so the BN+ReLU result, four times the pool's
// output, was written out whole and read back by the pool. The fused "batchnorm" step has ints
// "avgpool2x2" = 1 and writes the pooled output directly (runtime/kernels/batchnorm.cc).
// Matched, after layout planning:
//   batchnorm step B (activation absent, none or relu), 4-D float input of static dims, output V
//   read by one step only and not a module output;
//   avgpool2d step P reading V: kernel [2, 2], strides [2, 2], dilations [1, 1], pads 0,
//   ceil_mode 0.
// B takes P's output; P and V disappear.
#pragma once

#include <cstddef>

#include "runtime/module.h"
#include "support/status.h"

namespace kiln::lower {

// False when the environment sets KILN_FUSE_BN_POOL=0 (to compare with and without it).
bool BnPoolFusionEnabled();

// Rewrites `module` in place; returns how many pools were folded.
Expected<size_t> FuseBatchNormPool(runtime::Module& module);

}  // namespace kiln::lower
