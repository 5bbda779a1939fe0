// The microkernel of grouped convolution with few channels per group (RegNet, ResNeXt: 8 to 32
// per group), where a GEMM per group is too small to fill a register tile.
//
// The caller (kernels/conv/grouped.cc) copies the group's input once into zero-padded polyphase
// planes (one per input channel and stride phase), all with the same row pitch. In those planes
// every output pixel at flat index f = oy * pitch + ox reads its tap k at x[offsets[k] + f], so
// the whole output of a group is one run of flat indices, filled with full vectors even when
// rows are short (7x7, 14x14). One call computes `mb` (1..8) output channels over flat indices
// [0, count), count = (rows - 1) * pitch + width, and stores each pixel straight into its place
// in the channel's rows x width output, dropping the columns ox >= width:
//   y[j * y_stride + oy * width + ox] =
//       min(max(sum_k w[k * mb + j] * x[offsets[k] + oy * pitch + ox] + bias[j], lo), hi)
// reading x up to offsets[k] + count rounded up to a whole number of the microkernel's vectors
// (`slack` in the table of conv_ukernels.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::ukernels {

struct F32GConvParams {
  const uint32_t* offsets;  // nk offsets into x, one per (input channel, tap)
  size_t nk;
  size_t count;     // flat output indices: (rows - 1) * pitch + width
  size_t rows;      // output rows
  size_t width;     // output columns (floats between rows of y)
  size_t pitch;     // flat indices per output row, at least width
  size_t mb;        // output channels in this call, 1..8
  size_t y_stride;  // floats between the outputs of consecutive channels
  float clamp_min, clamp_max;
};

// w: [nk][mb]; bias: mb values or null.
using F32GConvFn = void (*)(const float* x, const float* w, const float* bias, float* y,
                            const F32GConvParams* p);

// Splits the w floats of src into its even positions (even[0, (w + 1) / 2)) and its odd ones
// (odd[0, w / 2)): one input row into the two column phases of a stride-2 layer's planes. In the
// ISA files so that the split runs on vector permutes (the driver is compiled for the baseline
// ISA, where the copy took 7-9% of a 3x3 stem).
using F32Deinterleave2Fn = void (*)(size_t w, const float* src, float* even, float* odd);

void f32_gconv__scalar(const float* x, const float* w, const float* bias, float* y,
                       const F32GConvParams* p);
void f32_gconv__avx2_fma(const float* x, const float* w, const float* bias, float* y,
                         const F32GConvParams* p);
void f32_gconv__avx512f(const float* x, const float* w, const float* bias, float* y,
                        const F32GConvParams* p);

void f32_deinterleave2__scalar(size_t w, const float* src, float* even, float* odd);
void f32_deinterleave2__avx2_fma(size_t w, const float* src, float* even, float* odd);
void f32_deinterleave2__avx512f(size_t w, const float* src, float* even, float* odd);

}  // namespace kiln::ukernels
