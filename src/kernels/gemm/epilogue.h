// An Epilogue (gemm.h) in the two parts the kernels apply: a clamp while a tile or row is in
// registers (ReLU, Clip) and a vector activation after it (SiLU, HardSwish, GELU), taken from the
// GEMM microkernel row of the ISA that runs. Shared by the GEMM driver and the convolution
// kernels that have their own loops (depthwise, Winograd).
#pragma once

#include <limits>

#include "kernels/gemm/gemm.h"
#include "kernels/gemm/ukernel_table.h"
#include "support/status.h"

namespace kiln::gemm {

struct EpilogueOps {
  float min = -std::numeric_limits<float>::infinity();
  float max = std::numeric_limits<float>::infinity();
  ukernels::F32VUnaryParamFn act = nullptr;  // null: none
};

// Errors, naming `who`, on Clip bounds with min > max (or NaN).
Expected<EpilogueOps> ResolveEpilogue(const Epilogue& ep, const GemmUkernel& uk, const char* who);

}  // namespace kiln::gemm
