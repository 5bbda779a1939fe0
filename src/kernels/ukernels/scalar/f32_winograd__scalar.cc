// Winograd F(4x4, 3x3) transforms (f32_winograd_impl.h) compiled for scalar.
#include "kernels/ukernels/f32_winograd_impl.h"

namespace kiln::ukernels {

void f32_wino_input_rows__scalar(size_t n, const float* in, size_t in_stride, float* out,
                                 size_t out_stride) {
  WinoInputRows(n, in, in_stride, out, out_stride);
}

void f32_wino_output_rows__scalar(size_t n, const float* in, size_t in_stride, float* out,
                                  size_t out_stride) {
  WinoOutputRows(n, in, in_stride, out, out_stride);
}

void f32_wino_gather__scalar(size_t n, const float* src, float* d, size_t d_stride) {
  WinoGather(n, src, d, d_stride);
}

void f32_wino_scatter__scalar(size_t n, const float* r, size_t r_stride, float bias, float lo,
                              float hi, float* y) {
  WinoScatter(n, r, r_stride, bias, lo, hi, y);
}

void f32_wino_input_c8__scalar(const float* d, size_t row_stride, float* v, size_t v_stride) {
  WinoInputC<8>(d, row_stride, v, v_stride);
}

void f32_wino_output_c8__scalar(const float* o, size_t o_stride, const float* bias, float lo,
                                float hi, float* y, size_t row_stride) {
  WinoOutputC<8>(o, o_stride, bias, lo, hi, y, row_stride);
}

}  // namespace kiln::ukernels
