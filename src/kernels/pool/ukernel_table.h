// The table of f32 pooling microkernels: dispatch, tests and benchmarks all read it.
#pragma once

#include <span>

#include "kernels/ukernels/f32_hot.h"
#include "support/cpu.h"

namespace kiln::pool {

struct PoolUkernel {
  const char* name;  // the ISA's suffix, as in f32_maxpool2d__<name>
  IsaLevel isa;
  ukernels::F32Pool2dFn maxpool;
  ukernels::F32Pool2dFn avgpool;
  ukernels::F32ReduceFn gmaxpool;
  ukernels::F32ReduceFn gavgpool;
  ukernels::F32GAvgPoolNchwcFn gavgpool_nchwc;
};

// Rows from the oldest ISA to the newest.
std::span<const PoolUkernel> PoolUkernels();

// The newest row whose ISA is at most `cap` (and at most ActiveIsa()).
const PoolUkernel& SelectPoolUkernel(IsaLevel cap);

// The 2-D pooling kernel for output rows of out_w: SelectPoolUkernel's, except that rows of at
// most 8 outputs take AVX2's 8 lanes over AVX-512's 16 (half of each 16-lane vector would be
// idle, and on Zen 4 a 16-lane access costs two 8-lane ones: 832x7x7 3x3 pools ran 25% faster).
const PoolUkernel& SelectPool2dUkernel(IsaLevel cap, size_t out_w);

}  // namespace kiln::pool
