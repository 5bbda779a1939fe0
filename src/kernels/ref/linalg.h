// Linear-algebra kernels: determinant.
#pragma once

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ref {

// x: float32 or float64 [..., M, M]; y: same type, [...]. LU with partial pivoting, in double
// whatever the input type, so float32 matrices do not lose the small pivots' precision.
Status Det(const Tensor& x, Tensor* y);

}  // namespace kiln::ref
