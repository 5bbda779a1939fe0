// Winograd F(4x4, 3x3) transform microkernels (kernels/winograd), for every ISA level. Each works
// on a run of n tiles that lie side by side in one tile row, vectorized across the tiles:
//   f32_wino_input__S   V[p][q] = (B^T d_q B)[p], p = 6 i + j, where d_q is the 6x6 window at
//                       x + 4 q (rows x, x + x_stride, ...); V[p] starts at v + p * v_stride.
//   f32_wino_output__S  the 4x4 tile q = min(max(A^T O_q A + bias, lo), hi) at y + 4 q (rows y,
//                       y + y_stride, ...), from O[p][q] at o + p * o_stride + q.
// The transforms use the points 0, +-1, +-2 (kernels/winograd/winograd.h has the matrices and
// the error bound). Contract as for every microkernel: no allocation, no globals; they read and
// write only the n tiles given.
#pragma once

#include <cstddef>

namespace kiln::ukernels {

using F32WinoInputFn = void (*)(size_t n, const float* x, size_t x_stride, float* v,
                                size_t v_stride);
using F32WinoOutputFn = void (*)(size_t n, const float* o, size_t o_stride, float bias, float lo,
                                 float hi, float* y, size_t y_stride);

void f32_wino_input__scalar(size_t n, const float* x, size_t x_stride, float* v, size_t v_stride);
void f32_wino_input__avx2(size_t n, const float* x, size_t x_stride, float* v, size_t v_stride);
void f32_wino_input__avx512f(size_t n, const float* x, size_t x_stride, float* v,
                             size_t v_stride);
void f32_wino_output__scalar(size_t n, const float* o, size_t o_stride, float bias, float lo,
                             float hi, float* y, size_t y_stride);
void f32_wino_output__avx2(size_t n, const float* o, size_t o_stride, float bias, float lo,
                           float hi, float* y, size_t y_stride);
void f32_wino_output__avx512f(size_t n, const float* o, size_t o_stride, float bias, float lo,
                              float hi, float* y, size_t y_stride);

}  // namespace kiln::ukernels
