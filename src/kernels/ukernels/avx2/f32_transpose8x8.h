// An 8x8 f32 transpose in ymm registers and a store of a vector's first lanes without
// vmaskmovps, shared by the AVX2 GEMM microkernel (its transposed tile store) and the AVX2 A
// packer. Include only from files compiled with -mavx2.
#pragma once

#include <immintrin.h>

namespace kiln::ukernels::avx2 {

// r[j] lane i = old r[i] lane j.
inline void Transpose8x8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// Stores the first n (1..8) lanes with plain narrow stores: AMD's vmaskmovps store is microcoded
// (tens of cycles), and made the A packer slower than the scalar copy it replaced.
inline void StoreFirst(float* d, __m256 v, int n) {
  if (n == 8) {
    _mm256_storeu_ps(d, v);
    return;
  }
  __m128 lo = _mm256_castps256_ps128(v);
  if (n >= 4) {
    _mm_storeu_ps(d, lo);
    d += 4;
    n -= 4;
    lo = _mm256_extractf128_ps(v, 1);
  }
  if (n >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(d), lo);
    d += 2;
    n -= 2;
    lo = _mm_movehl_ps(lo, lo);
  }
  if (n == 1) _mm_store_ss(d, lo);
}

}  // namespace kiln::ukernels::avx2
