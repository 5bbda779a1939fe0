// AVX2 matrix-vector product: four rows at a time (f32_gemv_rows_impl.h).
#include "kernels/ukernels/f32_gemv_rows_impl.h"

namespace kiln::ukernels {

void f32_gemv__avx2_fma(size_t m, size_t k, const float* a, size_t lda, const float* x, float* y,
                        size_t ldy, const F32GemmTileParams* params) {
  GemvRun<4>(m, k, a, lda, x, y, ldy, params);
}

}  // namespace kiln::ukernels
