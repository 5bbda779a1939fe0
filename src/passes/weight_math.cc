#include "passes/weight_math.h"

#include <cmath>

namespace kiln::passes {

ChannelAffine BatchNormAffine(const std::vector<float>& gamma, const std::vector<float>& beta,
                              const std::vector<float>& mean, const std::vector<float>& var,
                              float epsilon) {
  ChannelAffine a;
  for (size_t c = 0; c < gamma.size(); ++c) {
    const double s = gamma[c] / std::sqrt(static_cast<double>(var[c]) + epsilon);
    a.scale.push_back(static_cast<float>(s));
    a.shift.push_back(static_cast<float>(beta[c] - mean[c] * s));
  }
  return a;
}

Tensor ScaleSlices(const Tensor& w, int64_t axis, const std::vector<float>& scale) {
  Tensor out = w.Clone();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= w.dim(d);
  for (int64_t d = axis + 1; d < w.rank(); ++d) inner *= w.dim(d);
  const int64_t channels = w.dim(axis);
  float* p = out.data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < inner; ++i, ++p)
        *p = static_cast<float>(static_cast<double>(*p) * scale[c]);
  return out;
}

std::vector<float> AffineBias(const std::vector<float>& bias, const ChannelAffine& affine) {
  std::vector<float> out(affine.scale.size());
  for (size_t c = 0; c < out.size(); ++c) {
    const double b = bias.empty() ? 0.0 : bias[c];
    out[c] = static_cast<float>(b * affine.scale[c] + affine.shift[c]);
  }
  return out;
}

std::optional<std::vector<float>> PerChannelValues(const Tensor& c, int64_t rank,
                                                   int64_t channels) {
  if (!IsFloat(c.dtype()) || c.rank() > rank || rank < 2) return std::nullopt;
  int64_t along = 1;  // c's extent on the channel axis
  for (int64_t k = 0; k < c.rank(); ++k) {
    const int64_t axis = rank - c.rank() + k;  // right-aligned, as broadcasting does
    const int64_t d = c.dim(k);
    if (axis == 1 && (d == channels || d == 1))
      along = d;
    else if (d != 1)
      return std::nullopt;
  }
  const std::vector<float> v = c.ToFloatVector();
  std::vector<float> out(channels);
  for (int64_t ch = 0; ch < channels; ++ch) out[ch] = v[along == 1 ? 0 : ch];
  return out;
}

}  // namespace kiln::passes
