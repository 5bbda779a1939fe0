// Packs plain A into a k-major microkernel panel with 8x8 register transposes: eight rows x eight
// k in, eight k x eight rows out. The scalar gather this replaces took about 2 cycles a float,
// a sixth of the time at 3072x128x768, where each A value serves only 128 columns.
#include <immintrin.h>

#include "kernels/ukernels/avx2/f32_transpose8x8.h"
#include "kernels/ukernels/f32_gemm.h"

namespace kiln::ukernels {

using avx2::StoreFirst;
using avx2::Transpose8x8;

namespace {

// A full panel of the 6x16 tile, everything known at compile time: six loads, one transpose and
// eight 6-float stores per 8 k, where the general loop tests its row and lane counts at run
// time. Toggled in one binary, KILN_ISA=avx2, bench_gemm (1 thread, three alternating runs,
// kiln/oneDNN at AVX2): 256^3 0.77-0.89 -> 0.90-0.91, 256x196x2304 0.89-0.91 -> 0.92-0.94,
// 1024^3 level. Fetching the rows 64 floats ahead gained nothing more.
void PackFull6(size_t kc, const float* a, size_t lda, float* dst) {
  size_t k = 0;
  for (; k + 8 <= kc; k += 8) {
    __m256 r[8];
#pragma GCC unroll 6
    for (size_t i = 0; i < 6; ++i) r[i] = _mm256_loadu_ps(a + i * lda + k);
    r[6] = r[7] = _mm256_setzero_ps();
    Transpose8x8(r);
#pragma GCC unroll 8
    for (size_t j = 0; j < 8; ++j) {
      float* d = dst + (k + j) * 6;
      _mm_storeu_ps(d, _mm256_castps256_ps128(r[j]));
      _mm_storel_pi(reinterpret_cast<__m64*>(d + 4), _mm256_extractf128_ps(r[j], 1));
    }
  }
  for (; k < kc; ++k) {
    for (size_t i = 0; i < 6; ++i) dst[k * 6 + i] = a[i * lda + k];
  }
}

}  // namespace

void f32_packa__avx2(size_t rows, size_t kc, const float* a, size_t lda, size_t mr, float* dst) {
  if (mr == 6 && rows == 6) return PackFull6(kc, a, lda, dst);
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
