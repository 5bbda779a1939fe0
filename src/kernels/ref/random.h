// Random generators: Bernoulli, uniform and normal draws, reproducing numpy's legacy RandomState
// (the generator the ONNX reference implementation uses) so a seeded model gives its numbers.
#pragma once

#include <cstdint>
#include <random>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ref {

// numpy's legacy stream: MT19937 seeded like RandomState(seed), 53-bit doubles from two outputs,
// and gauss() as the polar Box-Muller method that caches its second value.
class NumpyRandom {
 public:
  explicit NumpyRandom(uint32_t seed) : gen_(seed) {}
  double NextDouble();  // uniform in [0, 1)
  double Gauss();       // standard normal
  // numpy's legacy binomial(1, p): one draw per call; p must be in [0, 1].
  int64_t Bernoulli(double p);

 private:
  std::mt19937 gen_;
  bool has_gauss_ = false;
  double gauss_ = 0;
};

// Each fills `out` (already shaped; float16, float32 or float64) in row-major order.
Status FillUniform(NumpyRandom& rng, double low, double high, Tensor* out);
Status FillNormal(NumpyRandom& rng, double mean, double scale, Tensor* out);

// y[i] = binomial(1, p[i]); p is float16/32/64 in [0, 1]; y has p's shape and type `out`
// (a float or integer type, or bool).
Status Bernoulli(NumpyRandom& rng, const Tensor& p, DType out, Tensor* y);

}  // namespace kiln::ref
