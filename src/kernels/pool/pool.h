// fp32 pooling over NCHW: 2-D max and average pooling (kernel, stride, pads, ceil_mode through
// the output size, count_include_pad; dilation 1) and global average and max.
//
// The driver is portable C++: it walks (plane, output row) pairs split over a ThreadPool, finds
// the input rows inside each window, and hands them to a row microkernel that reduces them into
// a padded scratch row and pools that row horizontally (vectorized for stride 1 and 2; see
// ukernels/f32_pool_impl.h).
#pragma once

#include <cstddef>
#include <optional>

#include "support/cpu.h"
#include "support/status.h"
#include "support/thread_pool.h"

namespace kiln::pool {

struct Pool2dParams {
  size_t batch = 1, channels = 1;
  size_t in_h = 1, in_w = 1;
  size_t out_h = 1, out_w = 1;  // see PoolOutputSize
  size_t kernel_h = 1, kernel_w = 1;
  size_t stride_h = 1, stride_w = 1;
  size_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  // Average pooling: count positions in the explicit padding (never those that ceil_mode adds
  // past it); otherwise only positions inside the input count. An empty window gives NaN.
  bool count_include_pad = false;
};

struct Options {
  ThreadPool* pool = nullptr;   // null: run on the caller only
  std::optional<IsaLevel> isa;  // caps the ISA below ActiveIsa() (tests, benchmarks)
};

// ONNX's output size along one dim; with ceil_mode a window must still start inside the input
// or its leading padding. Errors when the window is larger than the padded input.
Expected<size_t> PoolOutputSize(size_t in, size_t kernel, size_t stride, size_t pad_begin,
                                size_t pad_end, bool ceil_mode);

// x [batch, channels, in_h, in_w] -> y [batch, channels, out_h, out_w]. Padding never wins a max.
Status MaxPool2d(const Pool2dParams& p, const float* x, float* y, const Options& options = {});
Status AveragePool2d(const Pool2dParams& p, const float* x, float* y, const Options& options = {});

// One value per plane of plane_size >= 1 elements: y[planes].
Status GlobalAveragePool(size_t planes, size_t plane_size, const float* x, float* y,
                         const Options& options = {});
Status GlobalMaxPool(size_t planes, size_t plane_size, const float* x, float* y,
                     const Options& options = {});

// The average over a channel-blocked (NCHWc) input: x [batch, blocks, hw, c] with c in 1..64 ->
// y [batch, channels], channels in ((blocks - 1) * c, blocks * c]: the lanes past `channels`
// are padding and not written. hw = 0 gives NaN.
Status GlobalAveragePoolNchwc(size_t batch, size_t blocks, size_t hw, size_t c, size_t channels,
                              const float* x, float* y, const Options& options = {});

}  // namespace kiln::pool
