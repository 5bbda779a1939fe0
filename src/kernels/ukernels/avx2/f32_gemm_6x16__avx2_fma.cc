// 6x16 f32 GEMM microkernel for AVX2 + FMA.
// Register budget: 12 ymm accumulators (6 rows x 2 vectors) + 2 for the B row + 1 broadcast of A
// = 15 of 16. Per k step: 2 aligned B loads, 6 broadcasts, 12 FMAs (96 flops / 6 cycles at two
// FMA pipes). See bench/bench_gemm.cc for the measured fraction of peak.
#include <immintrin.h>

#include "kernels/ukernels/f32_gemm.h"

namespace kiln::ukernels {

void f32_gemm_6x16__avx2_fma(size_t kc, const float* a, const float* b, float* c, size_t ldc,
                             const F32GemmTileParams* params) {
  constexpr int kMr = 6;
  // Named accumulators rather than an array: GCC 12 spills one of an array's elements.
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
  __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
  __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
  __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  for (size_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(b);
    const __m256 b1 = _mm256_load_ps(b + 8);
    __m256 ai = _mm256_broadcast_ss(a + 0);
    c00 = _mm256_fmadd_ps(ai, b0, c00);
    c01 = _mm256_fmadd_ps(ai, b1, c01);
    ai = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(ai, b0, c10);
    c11 = _mm256_fmadd_ps(ai, b1, c11);
    ai = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(ai, b0, c20);
    c21 = _mm256_fmadd_ps(ai, b1, c21);
    ai = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(ai, b0, c30);
    c31 = _mm256_fmadd_ps(ai, b1, c31);
    ai = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(ai, b0, c40);
    c41 = _mm256_fmadd_ps(ai, b1, c41);
    ai = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(ai, b0, c50);
    c51 = _mm256_fmadd_ps(ai, b1, c51);
    a += kMr;
    b += 16;
  }
  const __m256 acc[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                              {c30, c31}, {c40, c41}, {c50, c51}};

  const __m256 vmin = _mm256_set1_ps(params->min);
  const __m256 vmax = _mm256_set1_ps(params->max);
  __m256 bn0 = _mm256_setzero_ps(), bn1 = _mm256_setzero_ps();
  if (params->bias_n) {
    bn0 = _mm256_loadu_ps(params->bias_n);
    bn1 = _mm256_loadu_ps(params->bias_n + 8);
  }
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) {
    float* ci = c + i * ldc;
    __m256 v0 = _mm256_add_ps(acc[i][0], bn0);
    __m256 v1 = _mm256_add_ps(acc[i][1], bn1);
    if (params->bias_m) {
      const __m256 bm = _mm256_broadcast_ss(params->bias_m + i);
      v0 = _mm256_add_ps(v0, bm);
      v1 = _mm256_add_ps(v1, bm);
    }
    if (params->load_c) {
      v0 = _mm256_add_ps(v0, _mm256_loadu_ps(ci));
      v1 = _mm256_add_ps(v1, _mm256_loadu_ps(ci + 8));
    }
    _mm256_storeu_ps(ci, _mm256_min_ps(_mm256_max_ps(v0, vmin), vmax));
    _mm256_storeu_ps(ci + 8, _mm256_min_ps(_mm256_max_ps(v1, vmin), vmax));
  }
}

}  // namespace kiln::ukernels
