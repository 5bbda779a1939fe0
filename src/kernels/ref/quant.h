// Reference linear quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear.
#pragma once

#include <cstdint>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ref {

// Rounds to the nearest integer, halves to even, whatever the FPU rounding mode is.
double RoundHalfToEven(double v);

// y = saturate(round_half_even(x / scale) + zero_point), the division done in float32 as ONNX's
// reference does. scale (float32) and zero_point (the output type: uint8, int8, uint16, int16)
// are either one value (per tensor) or 1-D with dim(axis) values (per axis); zero_point may be
// null (0). out_type is used when zero_point is null. x is float32, float64 or int32. NaN
// quantizes to the zero point.
Expected<Tensor> QuantizeLinear(const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                                DType out_type, int64_t axis);

// y = (x - zero_point) * scale, in scale's type (float32 or float64). x is int8, uint8, int16,
// uint16 or int32; zero_point has x's type, scale and zero_point are per tensor or per axis as
// above.
Expected<Tensor> DequantizeLinear(const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                                  int64_t axis);

struct DynamicQuantized {
  Tensor y;           // uint8, x's shape
  Tensor scale;       // float32 scalar
  Tensor zero_point;  // uint8 scalar
};
// Quantizes float32 x to uint8 over the range [min(0, min x), max(0, max x)]. An all-zero x has
// scale 0 and quantizes to zero point 0.
Expected<DynamicQuantized> DynamicQuantizeLinear(const Tensor& x);

}  // namespace kiln::ref
