// Portable matrix-vector product: four partial sums per row so the compiler can keep them in
// flight (the scalar level is about correctness first).
#include <algorithm>

#include "kernels/ukernels/f32_gemm.h"

namespace kiln::ukernels {

void f32_gemv__scalar(size_t m, size_t k, const float* a, size_t lda, const float* x, float* y,
                      size_t ldy, const F32GemmTileParams* params) {
  for (size_t i = 0; i < m; ++i, a += lda) {
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    size_t p = 0;
    for (; p + 4 <= k; p += 4) {
      for (size_t u = 0; u < 4; ++u) s[u] += a[p + u] * x[p + u];
    }
    for (; p < k; ++p) s[0] += a[p] * x[p];
    float v = (s[0] + s[1]) + (s[2] + s[3]);
    if (params->load_c) v += y[i * ldy];
    if (params->bias_m) v += params->bias_m[i];
    if (params->bias_n) v += params->bias_n[0];
    y[i * ldy] = std::min(std::max(v, params->min), params->max);
  }
}

}  // namespace kiln::ukernels
