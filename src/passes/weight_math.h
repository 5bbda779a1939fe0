// Weight arithmetic for folding a per-channel affine map (inference BatchNormalization, a
// per-channel Mul or Add) into the Conv or Gemm before it. Float32 tensors; math in double.
#pragma once

#include <optional>
#include <vector>

#include "support/tensor.h"

namespace kiln::passes {

// y = x * scale[c] + shift[c] along the channel axis.
struct ChannelAffine {
  std::vector<float> scale;
  std::vector<float> shift;
};

// Inference BatchNormalization: scale = gamma / sqrt(var + epsilon), shift = beta - mean * scale.
ChannelAffine BatchNormAffine(const std::vector<float>& gamma, const std::vector<float>& beta,
                              const std::vector<float>& mean, const std::vector<float>& var,
                              float epsilon);

// w with every slice along `axis` multiplied by scale[c]; requires scale.size() == w.dim(axis).
Tensor ScaleSlices(const Tensor& w, int64_t axis, const std::vector<float>& scale);

// bias[c] * scale[c] + shift[c]; an empty bias reads as zeros.
std::vector<float> AffineBias(const std::vector<float>& bias, const ChannelAffine& affine);

// The `channels` values of constant c broadcast against a rank-`rank` tensor whose axis 1 has
// `channels` entries, when c varies along that axis only (or not at all) and broadcasting leaves
// the other operand's shape alone; nullopt otherwise.
std::optional<std::vector<float>> PerChannelValues(const Tensor& c, int64_t rank, int64_t channels);

}  // namespace kiln::passes
