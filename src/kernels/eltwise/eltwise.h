// fp32 elementwise kernels: binary arithmetic with numpy broadcasting and the activations.
//
// The driver is portable C++: it collapses the broadcast into an outer loop over runs of the
// innermost contiguous dimension, where each operand either advances with the output or repeats
// one value, and calls a vector microkernel (a op b, a op c, c op a) per run. Same shapes, a
// scalar operand, a per-channel [C, 1, 1] operand and a row [W] operand all reduce to a few
// long runs this way. Large outputs are split into chunks over a ThreadPool.
//
// Outputs may alias an input of the same shape (in place); other overlaps are not allowed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "support/cpu.h"
#include "support/status.h"
#include "support/thread_pool.h"

namespace kiln::eltwise {

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kMax, kMin };  // Max/Min propagate NaN
inline constexpr size_t kBinaryOpCount = 6;
const char* BinaryOpName(BinaryOp op);

enum class UnaryOp {
  kRelu,
  kClip,  // min(max(x, alpha), beta)
  kSigmoid,
  kTanh,
  kSilu,         // x * sigmoid(x)
  kHardSwish,    // x * max(0, min(1, x / 6 + 1/2))
  kHardSigmoid,  // max(0, min(1, alpha * x + beta))  (ONNX defaults 0.2, 0.5)
  kGelu,         // 0.5 x (1 + erf(x / sqrt 2))
  kExp,
  kLeakyRelu,  // x < 0 ? alpha * x : x
};
inline constexpr size_t kUnaryOpCount = 10;
const char* UnaryOpName(UnaryOp op);

struct UnaryParams {
  float alpha = 0.0f;
  float beta = 0.0f;
};

struct Options {
  ThreadPool* pool = nullptr;   // null: run on the caller only
  std::optional<IsaLevel> isa;  // caps the ISA below ActiveIsa() (tests, benchmarks)
};

// The numpy broadcast of two shapes, or an error naming both.
Expected<std::vector<int64_t>> BroadcastDims(std::span<const int64_t> a,
                                             std::span<const int64_t> b);

// y = a op b; y holds the broadcast shape, row-major and contiguous like a and b.
Status Binary(BinaryOp op, std::span<const int64_t> a_dims, const float* a,
              std::span<const int64_t> b_dims, const float* b, float* y,
              const Options& options = {});

// y[i] = f(x[i]) for i < n.
Status Unary(UnaryOp op, size_t n, const float* x, float* y, const UnaryParams& params = {},
             const Options& options = {});

// The squeeze-and-excitation scale over a channel-blocked (NCHWc) map: x and y [batch, blocks,
// hw, c] (c in 1..64), s [batch or 1, channels] with channels in ((blocks - 1) * c, blocks * c];
// y = x * s[channel], with the padding lanes past `channels` scaled by 0. y may be x.
Status ChannelScaleNchwc(size_t batch, size_t blocks, size_t hw, size_t c, size_t channels,
                         bool per_image_scale, const float* x, const float* s, float* y,
                         const Options& options = {});

}  // namespace kiln::eltwise
