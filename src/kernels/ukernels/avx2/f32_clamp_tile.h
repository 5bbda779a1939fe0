// The clamp of a register tile's accumulators, shared by the AVX2 GEMM and direct-convolution
// microkernels. Include only from files compiled with -mavx2.
#pragma once

#include <immintrin.h>

#include <cstddef>

namespace kiln::ukernels::avx2 {

// acc = min(max(acc, lo), hi), each step over the whole tile behind one test, a bound at
// infinity skipped. The bounds are broadcast from memory here, after the k loop: as registers
// loaded up front, GCC keeps them live through it (the 12-accumulator tiles then spill). The
// bound is the first operand: vmaxps/vminps return the second where either is NaN, so a NaN
// stays NaN, as in the reference.
template <size_t R, size_t C>
[[gnu::always_inline]] inline void ClampTile(__m256 (&acc)[R][C], const float* lo,
                                             const float* hi) {
  if (*lo > -__builtin_inff()) {
    const __m256 v = _mm256_broadcast_ss(lo);
#pragma GCC unroll 6
    for (size_t i = 0; i < R; ++i) {
#pragma GCC unroll 12
      for (size_t j = 0; j < C; ++j) acc[i][j] = _mm256_max_ps(v, acc[i][j]);
    }
  }
  if (*hi < __builtin_inff()) {
    const __m256 v = _mm256_broadcast_ss(hi);
#pragma GCC unroll 6
    for (size_t i = 0; i < R; ++i) {
#pragma GCC unroll 12
      for (size_t j = 0; j < C; ++j) acc[i][j] = _mm256_min_ps(v, acc[i][j]);
    }
  }
}

}  // namespace kiln::ukernels::avx2
