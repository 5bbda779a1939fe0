// The tables of f32 elementwise microkernels: dispatch, tests and benchmarks all read them.
#pragma once

#include <cstddef>
#include <span>

#include "kernels/eltwise/eltwise.h"
#include "kernels/ukernels/f32_hot.h"
#include "support/cpu.h"

namespace kiln::eltwise {

struct BinaryUkernel {
  const char* name;
  IsaLevel isa;
  BinaryOp op;
  ukernels::F32VBinaryFn vv;    // a op b, both full runs
  ukernels::F32VBinaryCFn vc;   // a op c, c one value
  ukernels::F32VBinaryCFn rvc;  // c op a (the vc kernel itself for commutative ops)
};

struct UnaryUkernel {
  const char* name;
  IsaLevel isa;
  UnaryOp op;
  ukernels::F32VUnaryParamFn fn;
};

// The squeeze-and-excitation scale of one channel block held NCHWc.
struct ChannelScaleUkernel {
  const char* name;
  IsaLevel isa;
  ukernels::F32ChannelScaleNchwcFn fn;
};

// Rows from the oldest ISA to the newest (per op).
std::span<const BinaryUkernel> BinaryUkernels();
std::span<const UnaryUkernel> UnaryUkernels();

// The newest row for `op` whose ISA is at most `cap` (and at most ActiveIsa()).
const BinaryUkernel& SelectBinaryUkernel(BinaryOp op, IsaLevel cap);
const UnaryUkernel& SelectUnaryUkernel(UnaryOp op, IsaLevel cap);
const ChannelScaleUkernel& SelectChannelScaleUkernel(IsaLevel cap);

}  // namespace kiln::eltwise
