// The table of f32 softmax row microkernels: dispatch, tests and benchmarks all read it.
#pragma once

#include <span>

#include "kernels/ukernels/f32_hot.h"
#include "support/cpu.h"

namespace kiln::softmax {

struct SoftmaxUkernel {
  const char* name;  // the ISA's suffix, as in f32_rmax__<name>
  IsaLevel isa;
  ukernels::F32ReduceFn rmax;
  ukernels::F32RAddExpMinusMaxFn raddexpminusmax;
  ukernels::F32RAddStoreExpMinusMaxFn raddstoreexpminusmax;
  ukernels::F32VScaleFn vscale;
  ukernels::F32VBinaryCFn vaddc;
};

// Rows from the oldest ISA to the newest.
std::span<const SoftmaxUkernel> SoftmaxUkernels();

// The newest row whose ISA is at most `cap` (and at most ActiveIsa()).
const SoftmaxUkernel& SelectSoftmaxUkernel(IsaLevel cap);

}  // namespace kiln::softmax
