// 6x16 f32 GEMM microkernel for AVX2 + FMA, with every smaller tile (1..6 rows, 1..16 columns)
// handled by its own instance so that edge tiles cost only their own work.
// Register budget of the full tile: 12 ymm accumulators (6 rows x 2 vectors) + 2 for the B row
// + 1 broadcast of A = 15 of 16. Per k step: 2 aligned B loads, 6 broadcasts, 12 FMAs (96 flops
// in 6 cycles at two FMA pipes). Reached, 1 thread, 1024^3, KILN_ISA=avx2 on a Zen 4 EPYC:
// ~102 GFLOP/s = 0.88 of the measured FMA peak (116), with KC = 1024. Edge tiles use vmaskmovps,
// which AMD microcodes for stores: fine for edges, never for full tiles.
#include <immintrin.h>

#include <algorithm>

#include "kernels/ukernels/f32_gemm.h"

namespace kiln::ukernels {
namespace {

constexpr int kMr = 6;

// kRows rows; kVecs = 1 or 2 vectors of 8 columns, the last one masked by `last` (all-ones
// lanes are stored). kMaskB: the last B vector is loaded through the mask too (a partial panel
// of unpacked B, whose row may end there); full tiles keep plain loads.
// The tile stored transposed (params->trans_c): C[j * ldc + i]. Through a stack copy and scalar
// stores; the driver only transposes when K is long enough to hide this (ukernel_table.cc).
template <int kRows, int kVecs>
void StoreTransposed(const __m256 (&acc)[kRows][kVecs], size_t nr, float* c, size_t ldc,
                     const F32GemmTileParams* params) {
  alignas(32) float t[kRows][16];
#pragma GCC unroll 6
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) _mm256_store_ps(&t[i][8 * v], acc[i][v]);
  }
  for (size_t j = 0; j < nr; ++j) {
    float* cj = c + j * ldc;
    const float bn = params->bias_n ? params->bias_n[j] : 0.0f;
    for (int i = 0; i < kRows; ++i) {
      float x = t[i][j] + bn;
      if (params->bias_m) x += params->bias_m[i];
      if (params->load_c) x += cj[i];
      cj[i] = std::min(std::max(x, params->min), params->max);
    }
  }
}

template <int kRows, int kVecs, bool kMaskB>
void Tile(size_t nr, size_t kc, const float* a, const float* b, size_t ldb, float* c, size_t ldc,
          const F32GemmTileParams* params, __m256i last) {
  const __m256i masks[2] = {kVecs == 1 ? last : _mm256_set1_epi32(-1), last};
  __m256 acc[kRows][kVecs];
#pragma GCC unroll 6
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[i][v] = _mm256_setzero_ps();
  }
  const size_t as = params->a_stride ? params->a_stride : kMr;
  for (size_t k = 0; k < kc; ++k) {
    __m256 bv[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      bv[v] = kMaskB && v == kVecs - 1 ? _mm256_maskload_ps(b + 8 * v, masks[v])
                                       : _mm256_loadu_ps(b + 8 * v);
    }
#pragma GCC unroll 6
    for (int i = 0; i < kRows; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[i][v] = _mm256_fmadd_ps(ai, bv[v], acc[i][v]);
    }
    a += as;
    b += ldb;
  }

  if (params->trans_c) return StoreTransposed<kRows, kVecs>(acc, nr, c, ldc, params);
  const __m256 vmin = _mm256_set1_ps(params->min);
  const __m256 vmax = _mm256_set1_ps(params->max);
  __m256 bn[kVecs];
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) {
    bn[v] = params->bias_n ? _mm256_maskload_ps(params->bias_n + 8 * v, masks[v])
                           : _mm256_setzero_ps();
  }
#pragma GCC unroll 6
  for (int i = 0; i < kRows; ++i) {
    float* ci = c + i * ldc;
    const __m256 bm =
        params->bias_m ? _mm256_broadcast_ss(params->bias_m + i) : _mm256_setzero_ps();
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      __m256 x = _mm256_add_ps(_mm256_add_ps(acc[i][v], bn[v]), bm);
      if (params->load_c) x = _mm256_add_ps(x, _mm256_maskload_ps(ci + 8 * v, masks[v]));
      // The bound first: vmaxps/vminps return the second operand where either is NaN, and a
      // NaN stays NaN, as in the reference.
      x = _mm256_min_ps(vmax, _mm256_max_ps(vmin, x));
      _mm256_maskstore_ps(ci + 8 * v, masks[v], x);
    }
  }
}

template <int kVecs, bool kMaskB>
void Rows(size_t mr, size_t nr, size_t kc, const float* a, const float* b, size_t ldb, float* c,
          size_t ldc, const F32GemmTileParams* p, __m256i last) {
  switch (mr) {
    case 1: return Tile<1, kVecs, kMaskB>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 2: return Tile<2, kVecs, kMaskB>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 3: return Tile<3, kVecs, kMaskB>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 4: return Tile<4, kVecs, kMaskB>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 5: return Tile<5, kVecs, kMaskB>(nr, kc, a, b, ldb, c, ldc, p, last);
    default: return Tile<6, kVecs, kMaskB>(nr, kc, a, b, ldb, c, ldc, p, last);
  }
}

}  // namespace

void f32_gemm_6x16__avx2_fma(size_t mr, size_t nr, size_t kc, const float* a, const float* b,
                             size_t ldb, float* c, size_t ldc, const F32GemmTileParams* params) {
  const int tail = static_cast<int>(nr > 8 ? nr - 8 : nr);  // 1..8 columns in the last vector
  const __m256i last =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(tail), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  if (nr == 16) {
    Rows<2, false>(mr, nr, kc, a, b, ldb, c, ldc, params, last);
  } else if (nr > 8) {
    Rows<2, true>(mr, nr, kc, a, b, ldb, c, ldc, params, last);
  } else if (nr == 8) {
    Rows<1, false>(mr, nr, kc, a, b, ldb, c, ldc, params, last);
  } else {
    Rows<1, true>(mr, nr, kc, a, b, ldb, c, ldc, params, last);
  }
}

}  // namespace kiln::ukernels
