// Winograd F(4x4, 3x3) transforms (f32_winograd_impl.h) compiled for avx512.
#include "kernels/ukernels/f32_winograd_impl.h"

namespace kiln::ukernels {

void f32_wino_input_rows__avx512f(size_t n, const float* in, size_t in_stride, float* out,
                                  size_t out_stride) {
  WinoInputRows(n, in, in_stride, out, out_stride);
}

void f32_wino_output_rows__avx512f(size_t n, const float* in, size_t in_stride, float* out,
                                   size_t out_stride) {
  WinoOutputRows(n, in, in_stride, out, out_stride);
}

}  // namespace kiln::ukernels
