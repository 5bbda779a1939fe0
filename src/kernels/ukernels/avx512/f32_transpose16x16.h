// A 16x16 f32 transpose in zmm registers, shared by the AVX-512 GEMM microkernel (its transposed
// tile store) and the AVX-512 A packer. Include only from files compiled with -mavx512f.
#pragma once

#include <immintrin.h>

namespace kiln::ukernels::avx512 {

// r[j] lane i = old r[i] lane j: 16 unpacks within 128-bit lanes, 16 across pairs of floats,
// then two rounds of 16 128-bit lane shuffles.
inline void Transpose16x16(__m512 r[16]) {
  __m512 t[16], u[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // u[4g + c], lane l: rows 4g..4g+3 of column 4l + c.
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    const __m512d t0 = _mm512_castps_pd(t[4 * g]), t1 = _mm512_castps_pd(t[4 * g + 1]);
    const __m512d t2 = _mm512_castps_pd(t[4 * g + 2]), t3 = _mm512_castps_pd(t[4 * g + 3]);
    u[4 * g] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m512 e01 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
    const __m512 o01 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
    const __m512 e23 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
    const __m512 o23 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
    r[c] = _mm512_shuffle_f32x4(e01, e23, 0x88);
    r[8 + c] = _mm512_shuffle_f32x4(e01, e23, 0xDD);
    r[4 + c] = _mm512_shuffle_f32x4(o01, o23, 0x88);
    r[12 + c] = _mm512_shuffle_f32x4(o01, o23, 0xDD);
  }
}

}  // namespace kiln::ukernels::avx512
