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
};

// Rows from the oldest ISA to the newest.
std::span<const PoolUkernel> PoolUkernels();

// The newest row whose ISA is at most `cap` (and at most ActiveIsa()).
const PoolUkernel& SelectPoolUkernel(IsaLevel cap);

}  // namespace kiln::pool
