// Packs plain A into a k-major microkernel panel with 16x16 register transposes: up to sixteen
// rows x sixteen k in, sixteen k x the panel's rows out, each k one masked store (a 14-row panel
// is one group; the 32-row panels of the transposed product's B are two). The AVX2 packer it
// replaces on AVX-512 machines works in 8x8 blocks, storing a 14-row k as 8 + 4 + 2 floats.
// Measured (bench_gemm, 1 thread): 768x128x768 and 3072x128x768, where each A value serves
// only 128 columns, ran 3% and 7% faster (105 -> 108, 94 -> 101 GFLOP/s). Software prefetches
// of the rows 64, 128 or 256 floats ahead were no faster than none.
#include <immintrin.h>

#include "kernels/ukernels/avx512/f32_transpose16x16.h"
#include "kernels/ukernels/f32_gemm.h"

// GCC 12's AVX-512 shuffle and masked-load intrinsics pass an _mm512_undefined_ps() source that
// -O3 reports as uninitialized; the value is never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kiln::ukernels {
namespace {

// One group of up to 16 rows: `live` rows read from A (the rest are zero), `lanes` values per k
// stored (the group's share of the panel's rows).
inline void PackGroup(size_t live, __mmask16 lanes, size_t kc, const float* a, size_t lda,
                      size_t mr, float* dst) {
  size_t k = 0;
  for (; k + 16 <= kc; k += 16) {
    __m512 r[16];
#pragma GCC unroll 16
    for (size_t i = 0; i < 16; ++i) {
      r[i] = i < live ? _mm512_loadu_ps(a + i * lda + k) : _mm512_setzero_ps();
    }
    avx512::Transpose16x16(r);
#pragma GCC unroll 16
    for (size_t j = 0; j < 16; ++j) _mm512_mask_storeu_ps(dst + (k + j) * mr, lanes, r[j]);
  }
  if (k == kc) return;
  // The last 1..15 k: masked loads, so nothing past the end of a row is read.
  const size_t rem = kc - k;
  const __mmask16 kmask = static_cast<__mmask16>((1u << rem) - 1);
  __m512 r[16];
#pragma GCC unroll 16
  for (size_t i = 0; i < 16; ++i) {
    r[i] = i < live ? _mm512_maskz_loadu_ps(kmask, a + i * lda + k) : _mm512_setzero_ps();
  }
  avx512::Transpose16x16(r);
  for (size_t j = 0; j < rem; ++j) _mm512_mask_storeu_ps(dst + (k + j) * mr, lanes, r[j]);
}

}  // namespace

void f32_packa__avx512f(size_t rows, size_t kc, const float* a, size_t lda, size_t mr,
                        float* dst) {
  for (size_t g = 0; g < mr; g += 16) {
    const size_t lanes = mr - g < 16 ? mr - g : 16;
    const size_t live = rows > g ? (rows - g < 16 ? rows - g : 16) : 0;
    const __mmask16 mask = static_cast<__mmask16>((1u << lanes) - 1);
    PackGroup(live, mask, kc, a + g * lda, lda, mr, dst + g);
  }
}

}  // namespace kiln::ukernels
