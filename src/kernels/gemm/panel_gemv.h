// Internal to kernels/gemm: matrix-vector products over an operand packed into panels (a packed
// A times one column, N = 1; one row times a packed B, M = 1). The GEMM microkernel would run
// them as MR x NR tiles with one real row or column; see ukernels/f32_gemv_panel_impl.h.
#pragma once

#include <cstddef>

#include "kernels/ukernels/f32_hot.h"
#include "support/cpu.h"
#include "support/thread_pool.h"

namespace kiln::gemm {

struct PanelGemvArgs {
  size_t cols = 0, k = 0, panel = 0;  // outputs, K >= 1, panel width (1..32)
  const float* panels = nullptr;      // ceil(cols / panel) panels of k * panel floats
  const float* x = nullptr;           // x[kk * x_stride], kk < k
  size_t x_stride = 1;
  float* y = nullptr;                 // y[j * y_stride], j < cols
  size_t y_stride = 1;
  bool accumulate = false;            // y's old values are added
  const float* bias = nullptr;        // null, or `cols` values
  float bias0 = 0.0f;                 // added to every output
  float min = -__builtin_inff(), max = __builtin_inff();
  ukernels::F32VUnaryParamFn act = nullptr;  // applied after the clamp
  IsaLevel isa = IsaLevel::kScalar;   // the ISA the panels were packed for (or a lower one)
};

void RunPanelGemv(const PanelGemvArgs& g, ThreadPool* pool);

}  // namespace kiln::gemm
