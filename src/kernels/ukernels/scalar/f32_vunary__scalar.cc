// Scalar activations applied to GEMM tiles by the driver (and the oracle for the vector ones).
#include <algorithm>
#include <cmath>

#include "kernels/ukernels/f32_gemm.h"

namespace kiln::ukernels {

void f32_vsilu__scalar(size_t n, const float* x, float* y) {
  for (size_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}

// ONNX HardSwish: x * max(0, min(1, x / 6 + 0.5)).
void f32_vhswish__scalar(size_t n, const float* x, float* y) {
  for (size_t i = 0; i < n; ++i) {
    y[i] = x[i] * std::min(std::max(x[i] * (1.0f / 6.0f) + 0.5f, 0.0f), 1.0f);
  }
}

// ONNX Gelu (approximate = "none"): 0.5 x (1 + erf(x / sqrt 2)).
void f32_vgelu__scalar(size_t n, const float* x, float* y) {
  for (size_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678f));
}

}  // namespace kiln::ukernels
