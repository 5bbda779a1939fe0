// Reference convolutions (Conv, ConvTranspose, ConvInteger) and the sliding-window geometry that
// convolution and pooling share. Spatial ranks 1-3 are handled as 3-D with leading extents of 1,
// so one loop nest serves every rank.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ref {

inline constexpr int kMaxSpatialRank = 3;

// ONNX's window attributes for one node, before and after auto_pad is resolved.
struct WindowSpec {
  std::vector<int64_t> kernel;     // one per spatial dim
  std::vector<int64_t> strides;    // empty: all 1
  std::vector<int64_t> dilations;  // empty: all 1
  std::vector<int64_t> pads;       // begins then ends; empty: all 0
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;
};

// Validates `spec` against the input's spatial dims (kernel sizes, strides and dilations >= 1,
// pads >= 0, all bounded so the arithmetic cannot overflow), fills defaults, resolves auto_pad
// into explicit pads and returns the output's spatial dims. A window larger than the padded input
// is an error; the caller adds the node's name to messages.
Expected<std::vector<int64_t>> ResolveWindow(const std::vector<int64_t>& in_spatial,
                                             WindowSpec* spec);

// A convolution's shape, with spatial dims padded to 3-D (leading 1s, pads 0).
struct ConvGeometry {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, dilation{1, 1, 1}, pad_begin{0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
};

// Packs a resolved WindowSpec into a ConvGeometry (spatial rank 1-3).
ConvGeometry MakeGeometry(int64_t batch, int64_t in_channels, int64_t out_channels, int64_t group,
                          const std::vector<int64_t>& in_spatial,
                          const std::vector<int64_t>& out_spatial, const WindowSpec& spec);

// y[N, M, out...] = conv(x[N, C, in...], w[M, C/group, k...]) + bias[M]; bias may be null.
// float and double; sums are accumulated in double.
template <class T>
void Conv(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y);

// ConvInteger: y = sum((x - x_zero) * (w - w_zero[m])), exact in int64, stored as int32.
// TX and TW are int8_t or uint8_t; w_zero has one entry per output channel.
template <class TX, class TW>
void ConvInteger(const ConvGeometry& g, const TX* x, int32_t x_zero, const TW* w,
                 const std::vector<int32_t>& w_zero, int32_t* y);

// ConvTranspose. Here `g.in` is the transposed conv's input (x's spatial dims), `g.out` the
// output's, and w is [C, M/group, k...]. Each input element scatters into the output.
template <class T>
void ConvTranspose(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y);

}  // namespace kiln::ref
