// Winograd F(4x4, 3x3) transform microkernels (kernels/winograd), for every ISA level: one pass
// of a transform over n tiles whose values lie side by side (vectorized across the tiles).
//   f32_wino_input_rows__S   out[k][t] = sum_i B^T[k][i] in[i][t], t < n: one pass of the input
//                            transform over six rows (in + i * in_stride), six out.
//   f32_wino_output_rows__S  the same with A^T: four rows out of six.
// The transforms use the points 0, +-1, +-2 (kernels/winograd/winograd.h has the matrices and
// the error bound). Contract as for every microkernel: no allocation, no globals; they read and
// write only the n tiles given.
#pragma once

#include <cstddef>

namespace kiln::ukernels {

using F32WinoRowsFn = void (*)(size_t n, const float* in, size_t in_stride, float* out,
                               size_t out_stride);

void f32_wino_input_rows__scalar(size_t n, const float* in, size_t in_stride, float* out,
                                 size_t out_stride);
void f32_wino_input_rows__avx2(size_t n, const float* in, size_t in_stride, float* out,
                               size_t out_stride);
void f32_wino_input_rows__avx512f(size_t n, const float* in, size_t in_stride, float* out,
                                  size_t out_stride);
void f32_wino_output_rows__scalar(size_t n, const float* in, size_t in_stride, float* out,
                                  size_t out_stride);
void f32_wino_output_rows__avx2(size_t n, const float* in, size_t in_stride, float* out,
                                size_t out_stride);
void f32_wino_output_rows__avx512f(size_t n, const float* in, size_t in_stride, float* out,
                                   size_t out_stride);

}  // namespace kiln::ukernels
