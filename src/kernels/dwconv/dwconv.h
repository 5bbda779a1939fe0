// Depthwise 2-D convolution (group == C == M, one filter per channel), fp32, NCHW or NCHWc8/16
// (each pixel a vector of channels: the faster form, as oneDNN's), with the bias
// and activation fused into the pass that writes each output row.
//
// The driver (portable C++) splits the N x C planes, and the rows inside them when there are few
// planes, over a ThreadPool, and calls a row microkernel from the table in dwconv.cc: specialized
// 3x3 and 5x5 kernels for strides 1 and 2 per ISA level, and a portable one for other windows.
// Padding is any amount on each side; the microkernels read only the real input (padding is
// zeros that are never stored anywhere), so no padded copy of the input is made.
// On NCHW, a layer whose window rows fit a slot of the workspace (windows up to 7x7; 3x3 rows up
// to 341 wide on AVX-512) runs through blocks of 8 or 16 channels instead: each band of rows is
// transposed into the blocked form, convolved by the NCHWc kernel and transposed back, since the
// NCHW row kernels leave most lanes idle on the short rows of late layers.
#pragma once

#include <cstddef>
#include <optional>

#include "kernels/gemm/gemm.h"
#include "support/cpu.h"
#include "support/status.h"
#include "support/thread_pool.h"

namespace kiln::dwconv {

struct DwConvParams {
  size_t n = 1, c = 0, h = 0, w = 0;  // input x[N, C, H, W]
  size_t kh = 3, kw = 3;               // window; weights w[C, 1, kh, kw]
  size_t stride_h = 1, stride_w = 1;
  size_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  size_t dilation_h = 1, dilation_w = 1;  // only 1 is handled (DwConvSupported says so)
  // 1: NCHW. 8 or 16: NCHWc, x[N, ceil(C / cb), H, W, cb] and y likewise; the padding lanes of
  // the last block are read from x and written in y as act(0) (weights and bias zero there).
  size_t channel_block = 1;

  // Output y[N, C, out_h, out_w]; 0 when the window does not fit the padded input.
  size_t out_h() const {
    const size_t span = h + pad_top + pad_bottom;
    return span < kh || stride_h == 0 ? 0 : (span - kh) / stride_h + 1;
  }
  size_t out_w() const {
    const size_t span = w + pad_left + pad_right;
    return span < kw || stride_w == 0 ? 0 : (span - kw) / stride_w + 1;
  }
};

// True when DwConv computes this shape: dilation 1, strides >= 1, a window of 1x1 up to 64x64
// that fits the padded input (any pads; outputs that see only padding are the bias). 3x3 and 5x5
// at horizontal strides 1 and 2 get the specialized microkernels; other windows and strides a
// portable row kernel. NCHWc takes windows up to 7x7. Otherwise the caller falls back.
bool DwConvSupported(const DwConvParams& p);

// The weights of a channel-blocked DwConv: w [C, 1, kh, kw] as [ceil(C / cb)][kh * kw][cb], each
// tap's cb channels side by side (one vector load), zero past C. dst holds
// BlockedWeightFloats(c, taps, cb) floats.
inline size_t BlockedWeightFloats(size_t c, size_t taps, size_t cb) {
  return (c + cb - 1) / cb * cb * taps;
}
void PackBlockedWeights(size_t c, size_t taps, size_t cb, const float* w, float* dst);

// Floats of scratch DwConv needs for this shape on `threads` threads (0 for most: NCHW layers
// whose rows are short run through blocks of channels, in the workspace).
size_t DwConvWorkspaceFloats(const DwConvParams& p, size_t threads,
                             std::optional<IsaLevel> isa = std::nullopt);

// y = act(dwconv(x, w) + bias), NCHW or NCHWc (p.channel_block).
//   w: [C, 1, kh, kw], or PackBlockedWeights' layout when p.channel_block > 1; bias: null or C
//      values.
//   ep: the activation (none, ReLU, Clip/ReLU6, SiLU, HardSwish, GELU) and its clip bounds.
//       A bias may come either as `bias` or as ep.bias with ep.bias_kind == kPerRow (one value
//       per channel), not both; kPerColumn is an error.
//   pool: null or a pool whose thread count is used exactly; isa: caps the ISA below ActiveIsa().
//   workspace: null, or DwConvWorkspaceFloats(p, ThreadCount(pool), isa) floats; null where
//       that is non-zero allocates it for the call. Nothing else is allocated.
// x and y must not overlap.
Status DwConv(const DwConvParams& p, const float* x, const float* w, const float* bias,
              const gemm::Epilogue& ep, float* y, ThreadPool* pool = nullptr,
              std::optional<IsaLevel> isa = std::nullopt, float* workspace = nullptr);

}  // namespace kiln::dwconv
