// AVX2 matrix-vector product. Four rows at a time, two 8-lane accumulators each (8 FMA chains:
// enough for two pipes of latency 4); x is loaded once per four rows. The loop is bound by
// reading A, so the AVX-512 level uses this kernel too.
#include <immintrin.h>

#include "kernels/ukernels/f32_gemm.h"

namespace kiln::ukernels {
namespace {

inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <int kRows>
void Rows(size_t k, const float* a, size_t lda, const float* x, float* y, size_t ldy,
          const F32GemmTileParams* params, const float* bias_m) {
  __m256 acc[kRows][2];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  size_t p = 0;
  for (; p + 16 <= k; p += 16) {
    const __m256 x0 = _mm256_loadu_ps(x + p), x1 = _mm256_loadu_ps(x + p + 8);
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      acc[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(a + r * lda + p), x0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(_mm256_loadu_ps(a + r * lda + p + 8), x1, acc[r][1]);
    }
  }
  for (; p < k; p += 8) {
    // Masked: lanes past k are neither read nor added.
    const int left = static_cast<int>(k - p < 8 ? k - p : 8);
    const __m256i mask =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 x0 = _mm256_maskload_ps(x + p, mask);
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      acc[r][0] = _mm256_fmadd_ps(_mm256_maskload_ps(a + r * lda + p, mask), x0, acc[r][0]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    float v = HorizontalSum(_mm256_add_ps(acc[r][0], acc[r][1]));
    if (params->load_c) v += y[r * ldy];
    if (bias_m) v += bias_m[r];
    if (params->bias_n) v += params->bias_n[0];
    v = _mm_cvtss_f32(_mm_min_ss(_mm_max_ss(_mm_set_ss(v), _mm_set_ss(params->min)),
                                 _mm_set_ss(params->max)));
    y[r * ldy] = v;
  }
}

}  // namespace

void f32_gemv__avx2_fma(size_t m, size_t k, const float* a, size_t lda, const float* x, float* y,
                        size_t ldy, const F32GemmTileParams* params) {
  size_t i = 0;
  for (; i + 4 <= m; i += 4) {
    Rows<4>(k, a + i * lda, lda, x, y + i * ldy, ldy, params,
            params->bias_m ? params->bias_m + i : nullptr);
  }
  for (; i < m; ++i) {
    Rows<1>(k, a + i * lda, lda, x, y + i * ldy, ldy, params,
            params->bias_m ? params->bias_m + i : nullptr);
  }
}

}  // namespace kiln::ukernels
