// The one table of f32 GEMM microkernels: dispatch, tests and benchmarks all read it.
#pragma once

#include <cstddef>
#include <span>

#include "kernels/ukernels/f32_gemm.h"
#include "support/cpu.h"

namespace kiln::gemm {

struct GemmUkernel {
  const char* name;
  IsaLevel isa;
  size_t mr;
  size_t nr;
  ukernels::F32GemmFn gemm;
  ukernels::F32GemvFn gemv;  // N == 1
  ukernels::F32PackAFn pack_a;  // plain A into a panel; null: the portable packing
  // Activations applied to finished tiles (may be of a lower ISA than the GEMM kernel).
  ukernels::F32VUnaryFn silu;
  ukernels::F32VUnaryFn hswish;
  ukernels::F32VUnaryFn gelu;
};

// Rows from the oldest ISA to the newest.
std::span<const GemmUkernel> GemmUkernels();

// The newest row whose ISA is at most `cap` (and at most ActiveIsa()).
const GemmUkernel& SelectGemmUkernel(IsaLevel cap);
inline const GemmUkernel& SelectGemmUkernel() { return SelectGemmUkernel(ActiveIsa()); }

}  // namespace kiln::gemm
