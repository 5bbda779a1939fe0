#include "kernels/ref/random.h"

#include <cmath>

namespace kiln::ref {
namespace {

Status Store(Tensor* t, int64_t i, double v) {
  switch (t->dtype()) {
    case DType::kFloat32: t->data<float>()[i] = static_cast<float>(v); break;
    case DType::kFloat64: t->data<double>()[i] = v; break;
    case DType::kFloat16: t->data<uint16_t>()[i] = FloatToHalf(static_cast<float>(v)); break;
    case DType::kBFloat16:
      t->data<uint16_t>()[i] = FloatToBFloat16(static_cast<float>(v));
      break;
    case DType::kInt8: t->data<int8_t>()[i] = static_cast<int8_t>(v); break;
    case DType::kUInt8: t->data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
    case DType::kInt16: t->data<int16_t>()[i] = static_cast<int16_t>(v); break;
    case DType::kInt32: t->data<int32_t>()[i] = static_cast<int32_t>(v); break;
    case DType::kInt64: t->data<int64_t>()[i] = static_cast<int64_t>(v); break;
    case DType::kBool: t->data<bool>()[i] = v != 0; break;
    default: return Status::Error("random output type ", DTypeName(t->dtype()), " is unsupported");
  }
  return Status::Ok();
}

bool IsFloatType(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 ||
         t == DType::kBFloat16;
}

}  // namespace

double NumpyRandom::NextDouble() {
  const uint32_t a = gen_() >> 5, b = gen_() >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

double NumpyRandom::Gauss() {
  if (has_gauss_) {
    has_gauss_ = false;
    return gauss_;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * NextDouble() - 1.0;
    x2 = 2.0 * NextDouble() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  const double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  has_gauss_ = true;
  return f * x2;
}

// numpy's inversion algorithm for n = 1: it draws against the smaller of p and 1 - p, so the
// comparison is against exp(log(q)), not q itself, to land on the same side as numpy does. The
// legacy stream draws even for p == 0.
int64_t NumpyRandom::Bernoulli(double p) {
  const bool flip = p > 0.5;
  const double pp = flip ? 1.0 - p : p;
  const double q = 1.0 - pp;
  const double qn = std::exp(std::log(q));
  const double u = NextDouble();
  const int64_t x = u > qn ? 1 : 0;
  return flip ? 1 - x : x;
}

Status FillUniform(NumpyRandom& rng, double low, double high, Tensor* out) {
  if (!IsFloatType(out->dtype()))
    return Status::Error("random uniform output must be a float type, got ",
                         DTypeName(out->dtype()));
  for (int64_t i = 0; i < out->numel(); ++i)
    KILN_RETURN_IF_ERROR(Store(out, i, low + (high - low) * rng.NextDouble()));
  return Status::Ok();
}

Status FillNormal(NumpyRandom& rng, double mean, double scale, Tensor* out) {
  if (!IsFloatType(out->dtype()))
    return Status::Error("random normal output must be a float type, got ",
                         DTypeName(out->dtype()));
  for (int64_t i = 0; i < out->numel(); ++i)
    KILN_RETURN_IF_ERROR(Store(out, i, mean + scale * rng.Gauss()));
  return Status::Ok();
}

Status Bernoulli(NumpyRandom& rng, const Tensor& p, DType out, Tensor* y) {
  if (!IsFloatType(p.dtype()))
    return Status::Error("Bernoulli probabilities must be a float type, got ", DescribeTensor(p));
  *y = Tensor(out, p.dims());
  for (int64_t i = 0; i < p.numel(); ++i) {
    const double v = p.AsDouble(i);
    if (!(v >= 0.0 && v <= 1.0))
      return Status::Error("Bernoulli probability ", v, " at ", i, " is outside [0, 1]");
    KILN_RETURN_IF_ERROR(Store(y, i, static_cast<double>(rng.Bernoulli(v))));
  }
  return Status::Ok();
}

}  // namespace kiln::ref
