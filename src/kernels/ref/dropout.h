// Training-mode Dropout: y = x * mask / (1 - ratio), mask = u >= ratio with u uniform in [0, 1).
#pragma once

#include <cstdint>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ref {

// The uniform draws are MT19937 seeded with `seed`, two 32-bit outputs per double (53 bits), in
// row-major order: the generator numpy's legacy RandomState uses, so a seeded model gives the
// same mask as ONNX's reference implementation. x is float32, float64 or float16; 0 <= ratio < 1.
Status DropoutTrain(const Tensor& x, double ratio, uint32_t seed, Tensor* y, Tensor* mask);

}  // namespace kiln::ref
