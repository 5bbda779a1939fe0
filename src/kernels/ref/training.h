// Optimizer update kernels of the ai.onnx.preview.training domain: Adagrad, Momentum, Adam.
// Each updates one tensor; the op runs it once per (X, G, state...) group. x, g and the states
// are float32 or float64 of one shape; the math is done in double and stored in x's type.
#pragma once

#include <cstdint>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ref {

struct AdagradParams {
  double decay_factor = 0, epsilon = 1e-6, norm_coefficient = 0;
};
// r = rate / (1 + step * decay); g' = norm * x + g; h_new = h + g'^2;
// x_new = x - r * g' / (sqrt(h_new) + epsilon).
Status AdagradStep(double rate, int64_t step, const AdagradParams& p, const Tensor& x,
                   const Tensor& g, const Tensor& h, Tensor* x_new, Tensor* h_new);

struct MomentumParams {
  double alpha = 0, beta = 0, norm_coefficient = 0;
  bool nesterov = false;
};
// g' = norm * x + g; v_new = alpha * v + (step > 0 ? beta : 1) * g';
// x_new = x - rate * v_new (standard) or x - rate * (g' + alpha * v_new) (nesterov).
Status MomentumStep(double rate, int64_t step, const MomentumParams& p, const Tensor& x,
                    const Tensor& g, const Tensor& v, Tensor* x_new, Tensor* v_new);

struct AdamParams {
  double alpha = 0.9, beta = 0.999, epsilon = 1e-6, norm_coefficient = 0,
         norm_coefficient_post = 0;
};
// g' = norm * x + g; v_new = alpha * v + (1 - alpha) * g'; h_new = beta * h + (1 - beta) * g'^2;
// r = step > 0 ? rate * sqrt(1 - beta^step) / (1 - alpha^step) : rate;
// x_new = (1 - norm_post) * (x - r * v_new / (sqrt(h_new) + epsilon)).
Status AdamStep(double rate, int64_t step, const AdamParams& p, const Tensor& x, const Tensor& g,
                const Tensor& v, const Tensor& h, Tensor* x_new, Tensor* v_new, Tensor* h_new);

}  // namespace kiln::ref
