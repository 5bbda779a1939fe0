// The body of the row-major matrix-vector microkernel (f32_gemv__avx2_fma, f32_gemv__avx512f):
// y = A x over rows of plain A, kBlock rows at a time, two 8-lane accumulators each (enough FMA
// chains for two pipes of latency 4), x loaded once per block. The loop is bound by reading A
// (each value is used once), so the block is as tall as the registers allow: AVX2's 16 ymm take
// 4 rows, AVX-512's 32 (ymm16-31 under AVX-512VL) take 8. Included only by those two files;
// internal linkage, one copy per ISA.
//
// Measured, 1 thread, median of 40 interleaved batches: 4 -> 8 rows on AVX-512, in GFLOP/s,
// 2048 x 2048 (A of 16 MiB, partly from memory) 22.8-24.4 -> 25.9-27.6, 4096 x 1024 19.6-26.0
// -> 23.7-27.4, 4096 x 4096 10.1-10.7 -> 12.3-13.1, 1000 x 2048 (in L3) 36.6-37.1 -> 40.2-40.5,
// 1000 x 1024 and 512 x 512 level. 16-lane zmm rows (8 x 2 zmm) were slower from L3 (1000 x
// 1024: 36.8), and software prefetches 256-1024 bytes ahead won 2048 x 2048 (28.5) but lost
// 3-10% wherever A sat in L3.
#pragma once

#include <immintrin.h>

#include <cstddef>

#include "kernels/ukernels/f32_gemm.h"

namespace kiln::ukernels {
namespace {  // NOLINT(build/namespaces): one private copy per ISA file, on purpose

inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <int kRows>
void GemvRows(size_t k, const float* a, size_t lda, const float* x, float* y, size_t ldy,
              const F32GemmTileParams* params, const float* bias_m) {
  __m256 acc[kRows][2];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  size_t p = 0;
  for (; p + 16 <= k; p += 16) {
    const __m256 x0 = _mm256_loadu_ps(x + p), x1 = _mm256_loadu_ps(x + p + 8);
#pragma GCC unroll 8
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
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      acc[r][0] = _mm256_fmadd_ps(_mm256_maskload_ps(a + r * lda + p, mask), x0, acc[r][0]);
    }
  }
#pragma GCC unroll 8
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

// Blocks of kBlock rows, then one block of 4 (when kBlock is 8), then single rows.
template <int kBlock>
void GemvRun(size_t m, size_t k, const float* a, size_t lda, const float* x, float* y,
             size_t ldy, const F32GemmTileParams* params) {
  auto bias = [&](size_t i) { return params->bias_m ? params->bias_m + i : nullptr; };
  size_t i = 0;
  for (; i + kBlock <= m; i += kBlock) {
    GemvRows<kBlock>(k, a + i * lda, lda, x, y + i * ldy, ldy, params, bias(i));
  }
  if constexpr (kBlock > 4) {
    if (i + 4 <= m) {
      GemvRows<4>(k, a + i * lda, lda, x, y + i * ldy, ldy, params, bias(i));
      i += 4;
    }
  }
  for (; i < m; ++i) GemvRows<1>(k, a + i * lda, lda, x, y + i * ldy, ldy, params, bias(i));
}

}  // namespace
}  // namespace kiln::ukernels
