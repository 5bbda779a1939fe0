// Packs plain A into a k-major microkernel panel with 8x8 register transposes: eight rows x eight
// k in, eight k x eight rows out. The scalar gather this replaces took about 2 cycles a float,
// a sixth of the time at 3072x128x768, where each A value serves only 128 columns.
#include <immintrin.h>

#include "kernels/ukernels/f32_gemm.h"

namespace kiln::ukernels {
namespace {

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
// and made this kernel slower than the scalar packing it replaces.
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

}  // namespace

void f32_packa__avx2(size_t rows, size_t kc, const float* a, size_t lda, size_t mr, float* dst) {
  // Row groups of eight; the last group of the panel stores only its mr % 8 lanes, so
  // nothing past the panel is written. Rows past `rows` read as zero.
  for (size_t g = 0; g < mr; g += 8) {
    const int lanes = static_cast<int>(mr - g < 8 ? mr - g : 8);
    const size_t live = rows > g ? (rows - g < 8 ? rows - g : 8) : 0;
    size_t k = 0;
    for (; k + 8 <= kc; k += 8) {
      __m256 r[8];
      for (size_t i = 0; i < 8; ++i) {
        r[i] = i < live ? _mm256_loadu_ps(a + (g + i) * lda + k) : _mm256_setzero_ps();
      }
      Transpose8x8(r);
      for (size_t j = 0; j < 8; ++j) StoreFirst(dst + (k + j) * mr + g, r[j], lanes);
    }
    for (; k < kc; ++k) {
      for (size_t i = 0; i < static_cast<size_t>(lanes); ++i) {
        dst[k * mr + g + i] = i < live ? a[(g + i) * lda + k] : 0.0f;
      }
    }
  }
}

}  // namespace kiln::ukernels
