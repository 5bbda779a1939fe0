// Declarations of the panel matrix-vector microkernels (f32_gemv_panel__S): one output per lane
// of a GEMM operand packed into panels (kernels/gemm/pack.h), times a vector. The table in
// kernels/gemm/panel_gemv.cc lists them; nothing else should call them by name.
//
// The microkernel contract (DESIGN.md): no allocation, no OS calls, no globals, no CPU queries.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::ukernels {

struct F32GemvPanelParams {
  uint32_t load_y;      // nonzero: y's old values are added
  const float* bias;    // null, or `cols` values added to y
  float bias0;          // added to every output
  float min, max;       // clamp applied last
};

// y[j] = clamp(op(y[j]) + sum over kk < k of x[kk] * P(kk, j) + bias[j] + bias0), j < cols,
// where P is ceil(cols / panel) panels of `panel` lanes (1..32) back to back, panel q holding
// P(kk, q * panel + i) at a[(q * k + kk) * panel + i] (lanes past cols are read, as zeros).
using F32GemvPanelFn = void (*)(size_t cols, size_t k, size_t panel, const float* a,
                                const float* x, float* y, const F32GemvPanelParams* p);

void f32_gemv_panel__scalar(size_t cols, size_t k, size_t panel, const float* a, const float* x,
                            float* y, const F32GemvPanelParams* p);
void f32_gemv_panel__avx2(size_t cols, size_t k, size_t panel, const float* a, const float* x,
                          float* y, const F32GemvPanelParams* p);
void f32_gemv_panel__avx512(size_t cols, size_t k, size_t panel, const float* a, const float* x,
                            float* y, const F32GemvPanelParams* p);

}  // namespace kiln::ukernels
