#include "kernels/ref/quant.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace kiln::ref {
namespace {

// Where each element finds its scale and zero point: one value for the whole tensor, or one
// per index along `axis` (element e uses (e / inner) % channels).
struct ParamIndex {
  int64_t inner = 1;
  int64_t channels = 1;
  int64_t operator()(int64_t e) const { return channels == 1 ? 0 : (e / inner) % channels; }
};

Expected<ParamIndex> MakeParamIndex(const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                                    int64_t axis) {
  if (zero_point != nullptr && zero_point->dims() != scale.dims())
    return Status::Error("zero point ", DescribeTensor(*zero_point), " and scale ",
                         DescribeTensor(scale), " must have the same shape");
  ParamIndex ix;
  if (scale.numel() == 1 && scale.rank() <= 1) return ix;  // per tensor
  if (scale.rank() != 1)
    return Status::Error("scale must be a scalar or 1-D, got ", DescribeTensor(scale));
  const int64_t rank = x.rank();
  if (axis < -rank || axis >= rank)
    return Status::Error("axis ", axis, " is out of range for input ", DescribeTensor(x));
  if (axis < 0) axis += rank;
  if (scale.dim(0) != x.dim(axis))
    return Status::Error("per-axis scale ", DescribeTensor(scale), " must have ", x.dim(axis),
                         " values, the size of axis ", axis, " of ", DescribeTensor(x));
  ix.channels = x.dim(axis);
  if (x.numel() > 0)
    for (int64_t i = axis + 1; i < rank; ++i) ix.inner *= x.dim(i);
  return ix;
}

bool IsQuantType(DType t) {
  return t == DType::kUInt8 || t == DType::kInt8 || t == DType::kUInt16 || t == DType::kInt16;
}

template <class Q>
Q Saturate(double v) {
  v = std::clamp(v, static_cast<double>(std::numeric_limits<Q>::lowest()),
                 static_cast<double>(std::numeric_limits<Q>::max()));
  return static_cast<Q>(v);
}

template <class X, class Q>
void QuantizeTyped(const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                   const ParamIndex& ix, Tensor* y) {
  const X* in = x.data<X>();
  const float* s = scale.data<float>();
  const Q* zp = zero_point ? zero_point->data<Q>() : nullptr;
  Q* out = y->data<Q>();
  for (int64_t e = 0; e < x.numel(); ++e) {
    const int64_t c = ix(e);
    // float32 division, as the ONNX reference does; rounding happens on that float.
    double r = RoundHalfToEven(static_cast<float>(in[e]) / s[c]);
    if (std::isnan(r)) r = 0;
    out[e] = Saturate<Q>(r + (zp ? static_cast<double>(zp[c]) : 0.0));
  }
}

template <class X, class S>
void DequantizeTyped(const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                     const ParamIndex& ix, Tensor* y) {
  const X* in = x.data<X>();
  const S* s = scale.data<S>();
  const X* zp = zero_point ? zero_point->data<X>() : nullptr;
  S* out = y->data<S>();
  for (int64_t e = 0; e < x.numel(); ++e) {
    const int64_t c = ix(e);
    const int64_t q = static_cast<int64_t>(in[e]) - (zp ? static_cast<int64_t>(zp[c]) : 0);
    out[e] = static_cast<S>(static_cast<S>(q) * s[c]);
  }
}

template <class X>
void DequantizeInto(const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                    const ParamIndex& ix, Tensor* y) {
  if (scale.dtype() == DType::kFloat32) {
    DequantizeTyped<X, float>(x, scale, zero_point, ix, y);
  } else {
    DequantizeTyped<X, double>(x, scale, zero_point, ix, y);
  }
}

}  // namespace

double RoundHalfToEven(double v) {
  const double r = std::round(v);  // halves away from zero
  if (std::fabs(v - std::trunc(v)) == 0.5) return 2.0 * std::round(v / 2.0);
  return r;
}

Expected<Tensor> QuantizeLinear(const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                                DType out_type, int64_t axis) {
  if (zero_point != nullptr) out_type = zero_point->dtype();
  if (!IsQuantType(out_type))
    return Status::Error("cannot quantize to ", DTypeName(out_type),
                         " (uint8, int8, uint16 and int16 are supported)");
  if (scale.dtype() != DType::kFloat32)
    return Status::Error("scale must be float32, got ", DescribeTensor(scale));
  KILN_ASSIGN_OR_RETURN(ParamIndex ix, MakeParamIndex(x, scale, zero_point, axis));
  Tensor y(out_type, x.dims());
  Status st;
  auto by_input = [&]<class Q>() {
    switch (x.dtype()) {
      case DType::kFloat32: QuantizeTyped<float, Q>(x, scale, zero_point, ix, &y); break;
      case DType::kFloat64: QuantizeTyped<double, Q>(x, scale, zero_point, ix, &y); break;
      case DType::kInt32: QuantizeTyped<int32_t, Q>(x, scale, zero_point, ix, &y); break;
      default:
        st = Status::Error("input must be float32, float64 or int32, got ", DescribeTensor(x));
    }
  };
  switch (out_type) {
    case DType::kUInt8: by_input.template operator()<uint8_t>(); break;
    case DType::kInt8: by_input.template operator()<int8_t>(); break;
    case DType::kUInt16: by_input.template operator()<uint16_t>(); break;
    default: by_input.template operator()<int16_t>(); break;
  }
  KILN_RETURN_IF_ERROR(st);
  return y;
}

Expected<Tensor> DequantizeLinear(const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                                  int64_t axis) {
  if (!IsQuantType(x.dtype()) && x.dtype() != DType::kInt32)
    return Status::Error("input must be int8, uint8, int16, uint16 or int32, got ",
                         DescribeTensor(x));
  if (zero_point != nullptr && zero_point->dtype() != x.dtype())
    return Status::Error("zero point ", DescribeTensor(*zero_point), " must have the type of x, ",
                         DTypeName(x.dtype()));
  if (scale.dtype() != DType::kFloat32 && scale.dtype() != DType::kFloat64)
    return Status::Error("scale must be float32 or float64, got ", DescribeTensor(scale));
  KILN_ASSIGN_OR_RETURN(ParamIndex ix, MakeParamIndex(x, scale, zero_point, axis));
  Tensor y(scale.dtype(), x.dims());
  KILN_DISPATCH_INTEGER(x.dtype(), X, return Status::Error("unreachable"),
                        DequantizeInto<X>(x, scale, zero_point, ix, &y));
  return y;
}

Expected<DynamicQuantized> DynamicQuantizeLinear(const Tensor& x) {
  if (x.dtype() != DType::kFloat32)
    return Status::Error("input must be float32, got ", DescribeTensor(x));
  const float* in = x.data<float>();
  // The range always includes 0 so that 0 is exactly representable. float32 throughout, as the
  // ONNX reference computes it.
  float lo = 0, hi = 0;
  for (int64_t e = 0; e < x.numel(); ++e) {
    lo = std::min(lo, in[e]);
    hi = std::max(hi, in[e]);
  }
  const float scale = (hi - lo) / 255.0f;
  uint8_t zp = 0;
  if (scale > 0) {
    double z = RoundHalfToEven(0.0f - lo / scale);
    zp = Saturate<uint8_t>(std::isnan(z) ? 0 : z);
  }
  DynamicQuantized r;
  r.y = Tensor(DType::kUInt8, x.dims());
  uint8_t* out = r.y.data<uint8_t>();
  for (int64_t e = 0; e < x.numel(); ++e) {
    double q = scale > 0 ? RoundHalfToEven(in[e] / scale) : 0.0;
    if (std::isnan(q)) q = 0;
    out[e] = Saturate<uint8_t>(q + zp);
  }
  r.scale = Tensor::Scalar<float>(scale);
  r.zero_point = Tensor::Scalar<uint8_t>(zp);
  return r;
}

}  // namespace kiln::ref
