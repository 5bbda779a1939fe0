// AVX2 FMA throughput: 12 independent 8-lane chains (two pipes of latency 4 need 8; 12 leave
// slack). Registers: 12 accumulators + 2 constants of 16 ymm. 192 flops per round. On the 2-core
// development VM (KILN_ISA=avx2) it read between 58 and 105 GFLOP/s within one minute: the clock,
// not the code, moves; hence the best-window rule in the driver.
#include <immintrin.h>

#include "kernels/ukernels/f32_peak.h"

namespace kiln::ukernels {

void f32_fma_peak__avx2_fma(size_t iters, float* sink) {
  __m256 acc[12];
#pragma GCC unroll 12
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  for (size_t r = 0; r < iters; ++r) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
  }
  __m256 s = acc[0];
#pragma GCC unroll 11
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_movehdup_ps(h));
  sink[0] = _mm_cvtss_f32(h);
}

}  // namespace kiln::ukernels
