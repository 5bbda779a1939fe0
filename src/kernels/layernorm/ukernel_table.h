// The table of f32 layer-normalization row microkernels: dispatch, tests and benchmarks read it.
#pragma once

#include <span>

#include "kernels/ukernels/f32_hot.h"
#include "support/cpu.h"

namespace kiln::layernorm {

struct LayerNormUkernel {
  const char* name;  // the ISA's suffix, as in f32_vlayernorm__<name>
  IsaLevel isa;
  ukernels::F32ReduceFn rsum;
  ukernels::F32RSumSqDiffFn rsumsqdiff;
  ukernels::F32VLayerNormFn vlayernorm;
};

// Rows from the oldest ISA to the newest.
std::span<const LayerNormUkernel> LayerNormUkernels();

// The newest row whose ISA is at most `cap` (and at most ActiveIsa()).
const LayerNormUkernel& SelectLayerNormUkernel(IsaLevel cap);

}  // namespace kiln::layernorm
