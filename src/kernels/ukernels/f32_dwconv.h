// Declarations of the f32 depthwise-convolution row microkernels of every ISA level. The table in
// kernels/dwconv/dwconv.cc lists them; nothing else should call them by name.
//
// The microkernel contract (DESIGN.md): no allocation, no OS calls, no globals, no CPU queries.
#pragma once

#include <cstddef>

namespace kiln::ukernels {

// `count` output rows of one channel; row i reads rows[i * row_step + ky] (row_step is the
// vertical stride) and writes out + i * out_w. For each such row:
//   out[ox] = clamp(bias + sum_{ky < kh, kx < kw} w[ky * kw + kx] * in(ky, ox * stride + kx -
//             pad_left), min, max)   for ox < out_w,
// where in(ky, col) is rows[ky][col] for 0 <= col < in_w and zero otherwise, or when rows[ky] is
// null (a padding row). Only rows[ky][0, in_w) and out[0, out_w) are touched, so a row kernel
// needs no padded copy of its input. A specialized kernel (3x3 s1, ...) assumes its own kh, kw
// and stride and ignores those fields; the generic one reads them.
struct F32DwConvRow {
  size_t kh, kw, stride;
  size_t in_w, out_w, pad_left;
  size_t count, row_step;  // several rows per call: weights are set up once, not per row
  const float* const* rows;
  const float* w;
  float bias, min, max;
  float* out;
};
using F32DwConvRowFn = void (*)(const F32DwConvRow* args);

// The channel-blocked (NCHWc) form: `count` output rows of one block of cb channels; row i reads
// rows[i * row_step + ky] and writes out + i * out_w * cb. For each such row:
//   out[ox * cb + l] = clamp(bias[l] + sum_{ky, kx} w[(ky * kw + kx) * cb + l] *
//                      in(ky, ox * stride + kx - pad_left)[l], min, max),
// where in(ky, col) is rows[ky] + col * cb (cb floats) for 0 <= col < in_w, else zeros.
// cb is 8 or 16 (the AVX2 kernel takes multiples of 8, the AVX-512 one multiples of 16).
struct F32DwConvRowC {
  size_t kh, kw, stride, cb;
  size_t in_w, out_w, pad_left;
  size_t count, row_step;  // >= 1 rows per call: the weights stay in registers across them
  const float* const* rows;
  const float* w;     // kh * kw * cb
  const float* bias;  // cb
  float min, max;
  float* out;
};
using F32DwConvRowCFn = void (*)(const F32DwConvRowC* args);

// scalar (any window and stride; and the specialized shapes, so every level has them)
void f32_dwconv__scalar(const F32DwConvRow* args);
void f32_dwconv3x3_s1__scalar(const F32DwConvRow* args);
void f32_dwconv3x3_s2__scalar(const F32DwConvRow* args);
void f32_dwconv5x5_s1__scalar(const F32DwConvRow* args);
void f32_dwconv5x5_s2__scalar(const F32DwConvRow* args);
void f32_dwconv_nchwc__scalar(const F32DwConvRowC* args);

// avx2 + fma
void f32_dwconv3x3_s1__avx2_fma(const F32DwConvRow* args);
void f32_dwconv3x3_s2__avx2_fma(const F32DwConvRow* args);
void f32_dwconv5x5_s1__avx2_fma(const F32DwConvRow* args);
void f32_dwconv5x5_s2__avx2_fma(const F32DwConvRow* args);
void f32_dwconv_nchwc8__avx2_fma(const F32DwConvRowC* args);

// avx512 f
void f32_dwconv3x3_s1__avx512f(const F32DwConvRow* args);
void f32_dwconv3x3_s2__avx512f(const F32DwConvRow* args);
void f32_dwconv5x5_s1__avx512f(const F32DwConvRow* args);
void f32_dwconv5x5_s2__avx512f(const F32DwConvRow* args);
void f32_dwconv_nchwc16__avx512f(const F32DwConvRowC* args);

}  // namespace kiln::ukernels
