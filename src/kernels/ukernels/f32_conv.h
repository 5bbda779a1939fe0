// Declarations of the f32 direct-convolution microkernels on the channel-blocked layout (NCHWc)
// of every ISA level. The table in kernels/conv/conv_ukernels.h lists them; nothing else should
// call them by name.
//
// The microkernel contract (DESIGN.md): no allocation, no OS calls, no globals, no CPU queries.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::ukernels {

// One output row segment of a direct convolution in NCHWc (c = the kernel's block):
//   out[ob][j][co] = clamp(op(out) + bias[ob * c + co]
//                          + sum_{cb, kh, kw, ci} in(cb, kh, kw, j)[ci] * w(ob, cb, kh,
//                          kw)[ci][co])
// for ob < oc_blocks, j < ow, co < c, ci < cin, where cin = in_c, or c when in_c is 0, and
//   in(cb, kh, kw, j) = input + cb * in_cb_stride + kh * in_kh_stride + kw * in_kw_stride
//                       + j * in_ow_stride         (cin channels: [ci] at ci * in_ci_stride)
//   w(ob, cb, kh, kw) = weights + ob * w_ob_stride + cb * w_cb_stride + kh * w_kh_stride
//                       + kw * cin * c                              ([ci][co], cin * c floats)
//   out[ob][j]        = output + ob * out_ob_stride + j * c.
// in_c = 0 is the NCHWc case: input blocks of c contiguous channels (in_ci_stride is ignored,
// taken as 1). in_c in 1..4 is an image stem read from NCHW: its few input channels are planes
// in_ci_stride apart, one input block (ic_blocks = 1).
// The kernel reads no padding: the driver points input and weights at the first tap that lies
// inside the input (kh, kw: the taps that remain), or pads a copy of the input itself.
// ic_last and oc_last name the channels of a partial last block (24 = 16 + 8 at c = 16): the
// weights of the missing ones are zero, so a kernel may skip those input channels and compute
// those outputs as if every product were zero (bias, accumulate and clamp still apply to all c
// lanes); ignoring them is just slower.
struct F32ConvNchwcParams {
  const float* input;
  const float* weights;
  float* output;
  const float* bias;  // null, or oc_blocks * c values
  size_t ow;          // >= 1, any count: the kernel tiles it
  size_t oc_blocks;   // 1 or 2; 1..4 at AVX-512 with in_c = 0; 3 at AVX2
  size_t ic_blocks;   // >= 1
  size_t kh, kw;      // >= 1
  size_t in_c;        // 0 (c), or 1..4: channels of one input pixel (a stem's NCHW input)
  size_t ic_last;     // in_c = 0: channels of the last input block, 1..c (0: c)
  size_t oc_last;     // channels of the last of the oc_blocks, 1..c (0: c)
  size_t in_cb_stride, in_kh_stride, in_kw_stride, in_ow_stride;
  size_t in_ci_stride;  // in_c > 0 only
  size_t w_ob_stride, w_cb_stride, w_kh_stride;
  size_t out_ob_stride;
  // Null, or weights laid out like `weights` (the next call's: the next pair of output blocks)
  // that the kernel may pull into cache while it runs, prefetch_blocks blocks of them.
  const float* prefetch;
  size_t prefetch_blocks;
  uint32_t accumulate;  // nonzero: add to the output's contents
  float min, max;       // clamp applied last
  // Nonzero (kernels whose table row has even_cut set; others may ignore it, as the cut changes
  // no result): the ow columns go in ceil(ow / T) tiles of near-equal width, tile i ending at
  // ow * (i + 1) / tiles, where T is the tile width for oc_blocks, rather than whole tiles and
  // then the remainder.
  uint32_t even_cut;
};

using F32ConvNchwcFn = void (*)(const F32ConvNchwcParams* params);

void f32_conv_nchwc8__scalar(const F32ConvNchwcParams* params);
void f32_conv_nchwc8__avx2_fma(const F32ConvNchwcParams* params);
void f32_conv_nchwc16__avx512f(const F32ConvNchwcParams* params);

}  // namespace kiln::ukernels
