// AVX-512 FMA throughput: 12 independent 16-lane chains (two pipes of latency 4 need 8; 12 leave
// slack). Registers: 12 accumulators + 2 constants of 32 zmm. 384 flops per round; 117.5 GFLOP/s
// on one free core of the 2-core development VM. Parts with one 512-bit FMA pipe reach only half
// of that per cycle, which is then their true AVX-512 limit.
#include <immintrin.h>

#include "kernels/ukernels/f32_peak.h"

namespace kiln::ukernels {

void f32_fma_peak__avx512f(size_t iters, float* sink) {
  __m512 acc[12];
#pragma GCC unroll 12
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (size_t r = 0; r < iters; ++r) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
  }
  __m512 s = acc[0];
#pragma GCC unroll 11
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  // Not _mm512_reduce_add_ps: GCC 12 warns inside it (an uninitialized __Y, a false positive).
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  float total = 0;
  for (int i = 0; i < 16; ++i) total += lanes[i];
  sink[0] = total;
}

}  // namespace kiln::ukernels
