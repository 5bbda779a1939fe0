// Winograd F(4x4, 3x3) transforms (f32_winograd_impl.h) compiled for avx2.
#include "kernels/ukernels/f32_winograd_impl.h"

namespace kiln::ukernels {

void f32_wino_input__avx2(size_t n, const float* x, size_t x_stride, float* v, size_t v_stride) {
  WinoInput(n, x, x_stride, v, v_stride);
}

void f32_wino_output__avx2(size_t n, const float* o, size_t o_stride, float bias, float lo,
                         float hi, float* y, size_t y_stride) {
  WinoOutput(n, o, o_stride, bias, lo, hi, y, y_stride);
}

}  // namespace kiln::ukernels
