// Portable 4x8 f32 GEMM microkernel: the fallback level. The full tile keeps 32 accumulators in
// a local array (the compiler holds them in SSE registers); edge tiles use the same loops with
// bounds, since the scalar level is about correctness first.
#include <algorithm>

#include "kernels/ukernels/f32_gemm.h"

namespace kiln::ukernels {
namespace {

constexpr size_t kMr = 4, kNr = 8;

void Store(size_t mr, size_t nr, const float (*acc)[kNr], float* c, size_t ldc,
           const F32GemmTileParams* params) {
  // Element (i, j) of the tile lives at c[i * rs + j * cs]: row-major, or transposed.
  const size_t rs = params->trans_c ? 1 : ldc, cs = params->trans_c ? ldc : 1;
  for (size_t i = 0; i < mr; ++i) {
    float* ci = c + i * rs;
    const float bm = params->bias_m ? params->bias_m[i] : 0.0f;
    for (size_t j = 0; j < nr; ++j) {
      float v = acc[i][j] + bm;
      if (params->load_c) v += ci[j * cs];
      if (params->bias_n) v += params->bias_n[j];
      ci[j * cs] = std::min(std::max(v, params->min), params->max);
    }
  }
}

}  // namespace

void f32_gemm_4x8__scalar(size_t mr, size_t nr, size_t kc, const float* a, const float* b,
                          size_t ldb, float* c, size_t ldc, const F32GemmTileParams* params) {
  float acc[kMr][kNr] = {};
  const size_t as = params->a_stride ? params->a_stride : kMr;
  if (nr == kNr && (mr == kMr || !params->a_stride)) {
    for (size_t k = 0; k < kc; ++k) {
      for (size_t i = 0; i < kMr; ++i) {
        const float ai = a[i];
        for (size_t j = 0; j < kNr; ++j) acc[i][j] += ai * b[j];
      }
      a += as;
      b += ldb;
    }
  } else {
    for (size_t k = 0; k < kc; ++k) {
      for (size_t i = 0; i < mr; ++i) {
        for (size_t j = 0; j < nr; ++j) acc[i][j] += a[i] * b[j];
      }
      a += as;
      b += ldb;
    }
  }
  Store(mr, nr, acc, c, ldc, params);
}

}  // namespace kiln::ukernels
