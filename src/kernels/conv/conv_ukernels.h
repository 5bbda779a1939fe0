// The one table of direct NCHWc convolution microkernels; dispatch and tests read it.
#pragma once

#include <span>

#include "kernels/ukernels/f32_conv.h"
#include "support/cpu.h"

namespace kiln::conv {

struct ConvNchwcUkernel {
  const char* name;
  IsaLevel isa;
  size_t block;  // c of NCHWc
  size_t max_oc_blocks;
  ukernels::F32ConvNchwcFn fn;
};

// Rows from the oldest ISA to the newest.
std::span<const ConvNchwcUkernel> ConvNchwcUkernels();

// The newest row whose ISA is at most `cap` (and at most ActiveIsa()).
const ConvNchwcUkernel& SelectConvNchwcUkernel(IsaLevel cap);

}  // namespace kiln::conv
