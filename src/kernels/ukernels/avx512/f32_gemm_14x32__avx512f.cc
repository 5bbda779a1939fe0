// 14x32 f32 GEMM microkernel for AVX-512F.
// Register budget: 28 zmm accumulators (14 rows x 2 vectors) + 2 for the B row; A is broadcast
// straight from memory into the FMA ({1to16}), so 30 of 32 registers. Per k step: 2 aligned B
// loads, 28 FMAs (896 flops). See bench/bench_gemm.cc for the measured fraction of peak.
#include <immintrin.h>

// GCC 12's _mm512_max_ps/_mm512_min_ps pass an _mm512_undefined_ps() source that -O3 reports as
// uninitialized; the value is never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/ukernels/f32_gemm.h"

namespace kiln::ukernels {

void f32_gemm_14x32__avx512f(size_t kc, const float* a, const float* b, float* c, size_t ldc,
                             const F32GemmTileParams* params) {
  constexpr int kMr = 14;
  __m512 acc[kMr][2];
#pragma GCC unroll 14
  for (int i = 0; i < kMr; ++i) {
    acc[i][0] = _mm512_setzero_ps();
    acc[i][1] = _mm512_setzero_ps();
  }
#pragma GCC unroll 2
  for (size_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b);
    const __m512 b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 14
    for (int i = 0; i < kMr; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += kMr;
    b += 32;
  }

  const __m512 vmin = _mm512_set1_ps(params->min);
  const __m512 vmax = _mm512_set1_ps(params->max);
  __m512 bn0 = _mm512_setzero_ps(), bn1 = _mm512_setzero_ps();
  if (params->bias_n) {
    bn0 = _mm512_loadu_ps(params->bias_n);
    bn1 = _mm512_loadu_ps(params->bias_n + 16);
  }
#pragma GCC unroll 14
  for (int i = 0; i < kMr; ++i) {
    float* ci = c + i * ldc;
    __m512 v0 = _mm512_add_ps(acc[i][0], bn0);
    __m512 v1 = _mm512_add_ps(acc[i][1], bn1);
    if (params->bias_m) {
      const __m512 bm = _mm512_set1_ps(params->bias_m[i]);
      v0 = _mm512_add_ps(v0, bm);
      v1 = _mm512_add_ps(v1, bm);
    }
    if (params->load_c) {
      v0 = _mm512_add_ps(v0, _mm512_loadu_ps(ci));
      v1 = _mm512_add_ps(v1, _mm512_loadu_ps(ci + 16));
    }
    _mm512_storeu_ps(ci, _mm512_min_ps(_mm512_max_ps(v0, vmin), vmax));
    _mm512_storeu_ps(ci + 16, _mm512_min_ps(_mm512_max_ps(v1, vmin), vmax));
  }
}

}  // namespace kiln::ukernels
