// Winograd F(4x4, 3x3) transform microkernels (kernels/winograd), for every ISA level: one pass
// of a transform over n tiles whose values lie side by side (vectorized across the tiles).
//   f32_wino_input_rows__S   out[k][t] = sum_i B^T[k][i] in[i][t], t < n: one pass of the input
//                            transform over six rows (in + i * in_stride), six out.
//   f32_wino_output_rows__S  the same with A^T: four rows out of six.
//   f32_wino_gather__S       d[j * d_stride + q] = src[4 q + j], j < 6, q < n: one input row of
//                            n side-by-side tiles (windows 4 apart), read from src[0, 4 n + 2).
//   f32_wino_scatter__S      y[4 q + j] = min(max(r[j * r_stride + q] + bias, lo), hi), j < 4,
//                            q < n: one output row of n side-by-side 4x4 tiles.
// The channel-blocked forms (NCHWc, kernels/winograd/winograd_nchwc.cc) take one tile of cb
// channels at a time, vectorized across the channels (cb = 16 on AVX-512, 8 otherwise):
//   f32_wino_input_cC__S     V = B^T d B: pixel (i, j) of the 6x6 tile is cb floats at
//                            d + i * row_stride + j * cb; point p = 6 i + j goes to
//                            v + p * v_stride (cb floats).
//   f32_wino_output_cC__S    Y = A^T O A + bias, clamped to [lo, hi] (a NaN stays NaN): point p
//                            is cb floats at o + p * o_stride; pixel (i, j) of the 4x4 tile goes
//                            to y + i * row_stride + j * cb.
// The transforms use the points 0, +-1, +-2 (kernels/winograd/winograd.h has the matrices and
// the error bound). Contract as for every microkernel: no allocation, no globals; they read and
// write only the n tiles given.
#pragma once

#include <cstddef>

namespace kiln::ukernels {

using F32WinoRowsFn = void (*)(size_t n, const float* in, size_t in_stride, float* out,
                               size_t out_stride);

using F32WinoGatherFn = void (*)(size_t n, const float* src, float* d, size_t d_stride);

using F32WinoScatterFn = void (*)(size_t n, const float* r, size_t r_stride, float bias, float lo,
                                  float hi, float* y);

using F32WinoInputCFn = void (*)(const float* d, size_t row_stride, float* v, size_t v_stride);
using F32WinoOutputCFn = void (*)(const float* o, size_t o_stride, const float* bias, float lo,
                                  float hi, float* y, size_t row_stride);

void f32_wino_input_c8__scalar(const float* d, size_t row_stride, float* v, size_t v_stride);
void f32_wino_input_c8__avx2(const float* d, size_t row_stride, float* v, size_t v_stride);
void f32_wino_input_c16__avx512f(const float* d, size_t row_stride, float* v, size_t v_stride);
void f32_wino_output_c8__scalar(const float* o, size_t o_stride, const float* bias, float lo,
                                float hi, float* y, size_t row_stride);
void f32_wino_output_c8__avx2(const float* o, size_t o_stride, const float* bias, float lo,
                              float hi, float* y, size_t row_stride);
void f32_wino_output_c16__avx512f(const float* o, size_t o_stride, const float* bias, float lo,
                                  float hi, float* y, size_t row_stride);

void f32_wino_scatter__scalar(size_t n, const float* r, size_t r_stride, float bias, float lo,
                              float hi, float* y);
void f32_wino_scatter__avx2(size_t n, const float* r, size_t r_stride, float bias, float lo,
                            float hi, float* y);
void f32_wino_scatter__avx512f(size_t n, const float* r, size_t r_stride, float bias, float lo,
                               float hi, float* y);
void f32_wino_gather__scalar(size_t n, const float* src, float* d, size_t d_stride);
void f32_wino_gather__avx2(size_t n, const float* src, float* d, size_t d_stride);
void f32_wino_gather__avx512f(size_t n, const float* src, float* d, size_t d_stride);
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
