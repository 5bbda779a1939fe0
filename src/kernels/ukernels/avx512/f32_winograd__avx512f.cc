// Winograd F(4x4, 3x3) transforms (f32_winograd_impl.h) compiled for avx512.
#include <immintrin.h>

#include "kernels/ukernels/f32_winograd_impl.h"

namespace kiln::ukernels {

void f32_wino_input_rows__avx512f(size_t n, const float* in, size_t in_stride, float* out,
                                  size_t out_stride) {
  WinoInputRows(n, in, in_stride, out, out_stride);
}

void f32_wino_output_rows__avx512f(size_t n, const float* in, size_t in_stride, float* out,
                                   size_t out_stride) {
  WinoOutputRows(n, in, in_stride, out, out_stride);
}

// 16 tiles at a time: four (masked) loads of 64 floats at src and at src + 4, two permutes per
// pair of vectors and one 256-bit merge per output row, instead of 96 scalar loads and stores.
void f32_wino_gather__avx512f(size_t n, const float* src, float* d, size_t d_stride) {
  // Lanes 0-7 of permutex2var(a, kIdx[j], b) = (a:b)[4 k + j], k < 8.
  const __m512i idx[4] = {_mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0),
                          _mm512_setr_epi32(1, 5, 9, 13, 17, 21, 25, 29, 0, 0, 0, 0, 0, 0, 0, 0),
                          _mm512_setr_epi32(2, 6, 10, 14, 18, 22, 26, 30, 0, 0, 0, 0, 0, 0, 0, 0),
                          _mm512_setr_epi32(3, 7, 11, 15, 19, 23, 27, 31, 0, 0, 0, 0, 0, 0, 0, 0)};
  const size_t avail = 4 * n + 2;  // floats readable at src
  for (size_t q0 = 0; q0 < n; q0 += 16) {
    const size_t nq = n - q0 < 16 ? n - q0 : 16;
    const float* p = src + 4 * q0;
    const size_t left = avail - 4 * q0;  // >= 6
    __m512 v[4], s[4];                   // src[16 k + l], src[16 k + 4 + l]
    for (size_t k = 0; k < 4; ++k) {
      const size_t at = 16 * k;
      const size_t a = left > at ? left - at : 0, b = left > at + 4 ? left - at - 4 : 0;
      const __mmask16 ma = a >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << a) - 1u);
      const __mmask16 mb = b >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << b) - 1u);
      v[k] = _mm512_maskz_loadu_ps(ma, p + at);
      s[k] = _mm512_maskz_loadu_ps(mb, p + at + 4);
    }
    const __mmask16 mq = nq >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << nq) - 1u);
    for (size_t j = 0; j < 6; ++j) {
      const __m512* in = j < 4 ? v : s;
      const __m512i ix = idx[j < 4 ? j : j - 4];
      const __m512 lo = _mm512_permutex2var_ps(in[0], ix, in[1]);  // tiles 0-7 in lanes 0-7
      const __m512 hi = _mm512_permutex2var_ps(in[2], ix, in[3]);  // tiles 8-15 in lanes 0-7
      const __m512 row = _mm512_maskz_shuffle_f32x4(0xFFFF, lo, hi, 0x44);  // lo[0:8], hi[0:8]
      _mm512_mask_storeu_ps(d + j * d_stride + q0, mq, row);
    }
  }
}

// 16 tiles at a time: the four rows biased and clamped, transposed in 4x4 blocks within each
// 128-bit lane, then the lanes reordered, so that each store writes 4 whole tile rows.
void f32_wino_scatter__avx512f(size_t n, const float* r, size_t r_stride, float bias, float lo,
                               float hi, float* y) {
  const __m512 vb = _mm512_set1_ps(bias), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  for (size_t q0 = 0; q0 < n; q0 += 16) {
    const size_t nq = n - q0 < 16 ? n - q0 : 16;
    const __mmask16 mq = nq >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << nq) - 1u);
    __m512 v[4];
    for (size_t j = 0; j < 4; ++j) {
      const __m512 x = _mm512_add_ps(_mm512_maskz_loadu_ps(mq, r + j * r_stride + q0), vb);
      v[j] = _mm512_maskz_min_ps(0xFFFF, vhi, _mm512_maskz_max_ps(0xFFFF, vlo, x));  // NaN stays
    }
    const __m512 a = _mm512_maskz_unpacklo_ps(0xFFFF, v[0], v[1]),
                 b = _mm512_maskz_unpackhi_ps(0xFFFF, v[0], v[1]);
    const __m512 c = _mm512_maskz_unpacklo_ps(0xFFFF, v[2], v[3]),
                 e = _mm512_maskz_unpackhi_ps(0xFFFF, v[2], v[3]);
    // t[k], lane l: tile 4 l + k, its four values.
    const __m512 t0 =
        _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xFF, _mm512_castps_pd(a), _mm512_castps_pd(c)));
    const __m512 t1 =
        _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xFF, _mm512_castps_pd(a), _mm512_castps_pd(c)));
    const __m512 t2 =
        _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xFF, _mm512_castps_pd(b), _mm512_castps_pd(e)));
    const __m512 t3 =
        _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xFF, _mm512_castps_pd(b), _mm512_castps_pd(e)));
    const __m512 u0 = _mm512_maskz_shuffle_f32x4(0xFFFF, t0, t1, 0x44);  // tiles 0 4 1 5
    const __m512 u1 = _mm512_maskz_shuffle_f32x4(0xFFFF, t2, t3, 0x44);  // tiles 2 6 3 7
    const __m512 u2 = _mm512_maskz_shuffle_f32x4(0xFFFF, t0, t1, 0xEE);  // tiles 8 12 9 13
    const __m512 u3 = _mm512_maskz_shuffle_f32x4(0xFFFF, t2, t3, 0xEE);  // tiles 10 14 11 15
    const __m512 out[4] = {_mm512_maskz_shuffle_f32x4(0xFFFF, u0, u1, 0x88),
                           _mm512_maskz_shuffle_f32x4(0xFFFF, u0, u1, 0xDD),
                           _mm512_maskz_shuffle_f32x4(0xFFFF, u2, u3, 0x88),
                           _mm512_maskz_shuffle_f32x4(0xFFFF, u2, u3, 0xDD)};
    for (size_t k = 0; k < 4; ++k) {
      const size_t tiles = nq > 4 * k ? nq - 4 * k : 0;  // tiles of this store
      if (tiles == 0) break;
      const __mmask16 m = tiles >= 4 ? 0xFFFF : static_cast<__mmask16>((1u << (4 * tiles)) - 1u);
      _mm512_mask_storeu_ps(y + 4 * q0 + 16 * k, m, out[k]);
    }
  }
}

void f32_wino_input_c16__avx512f(const float* d, size_t row_stride, float* v, size_t v_stride) {
  WinoInputC<16>(d, row_stride, v, v_stride);
}

void f32_wino_output_c16__avx512f(const float* o, size_t o_stride, const float* bias, float lo,
                                  float hi, float* y, size_t row_stride) {
  WinoOutputC<16>(o, o_stride, bias, lo, hi, y, row_stride);
}

}  // namespace kiln::ukernels
