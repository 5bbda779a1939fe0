// Scalar multiply-add throughput: 8 independent chains of one float, unfused (no -mfma at this
// level). 16 flops per round.
#include "kernels/ukernels/f32_peak.h"

namespace kiln::ukernels {

void f32_fma_peak__scalar(size_t iters, float* sink) {
  float acc[8];
  for (int i = 0; i < 8; ++i) acc[i] = static_cast<float>(i);
  // volatile reads keep the compiler from folding the loop into a closed form.
  volatile float xv = 0.999999f, yv = 1e-7f;
  const float x = xv, y = yv;
  for (size_t r = 0; r < iters; ++r) {
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) acc[i] = acc[i] * x + y;
  }
  float s = 0;
  for (int i = 0; i < 8; ++i) s += acc[i];
  sink[0] = s;
}

}  // namespace kiln::ukernels
