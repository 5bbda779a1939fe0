// AVX-512 matrix-vector product: the AVX2 loop eight rows at a time, in the 32 vector registers
// of AVX-512VL (f32_gemv_rows_impl.h has the measurements).
#include "kernels/ukernels/f32_gemv_rows_impl.h"

namespace kiln::ukernels {

void f32_gemv__avx512f(size_t m, size_t k, const float* a, size_t lda, const float* x, float* y,
                       size_t ldy, const F32GemmTileParams* params) {
  GemvRun<8>(m, k, a, lda, x, y, ldy, params);
}

}  // namespace kiln::ukernels
