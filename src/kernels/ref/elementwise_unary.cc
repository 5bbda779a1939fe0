// Unary elementwise reference kernels: math, activations, float predicates, Not, Clip.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <type_traits>

#include "kernels/ref/elementwise.h"

namespace kiln::ref {
namespace {

// y[i] = f(x[i]) with y of dtype Out and x's dims (already validated by x's construction).
template <class In, class Out, class F>
Tensor Map(const Tensor& x, DType out_dtype, F f) {
  Tensor y(out_dtype, x.dims());
  const In* in = x.data<In>();
  Out* out = y.data<Out>();
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = f(in[i]);
  return y;
}

template <class T, class F>
Tensor MapSame(const Tensor& x, F f) {
  return Map<T, T>(x, x.dtype(), f);
}

template <class T>
T Sigmoid(T v) {
  // Split by sign so exp never overflows to inf/inf.
  if (v >= 0) return T(1) / (T(1) + std::exp(-v));
  const T e = std::exp(v);
  return e / (T(1) + e);
}

template <class T>
T Softplus(T v) {
  // log(1 + e^v) without overflow for large v.
  return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
}

template <class T>
Tensor FloatUnary(UnaryKind kind, const UnaryParams& p, const Tensor& x) {
  const T alpha = static_cast<T>(p.alpha);
  const T beta = static_cast<T>(p.beta);
  const T gamma = static_cast<T>(p.gamma);
  switch (kind) {
    case UnaryKind::kAbs:
      return MapSame<T>(x, [](T v) { return std::abs(v); });
    case UnaryKind::kNeg:
      return MapSame<T>(x, [](T v) { return -v; });
    case UnaryKind::kSign:
      // NaN stays NaN, as numpy.sign does.
      return MapSame<T>(x, [](T v) { return v > 0 ? T(1) : v < 0 ? T(-1) : v == 0 ? T(0) : v; });
    case UnaryKind::kRelu:
      return MapSame<T>(x, [](T v) { return v < 0 ? T(0) : v; });
    case UnaryKind::kFloor:
      return MapSame<T>(x, [](T v) { return std::floor(v); });
    case UnaryKind::kCeil:
      return MapSame<T>(x, [](T v) { return std::ceil(v); });
    // nearbyint in the default rounding mode rounds halves to even, as ONNX Round requires.
    case UnaryKind::kRound:
      return MapSame<T>(x, [](T v) { return std::nearbyint(v); });
    case UnaryKind::kSqrt:
      return MapSame<T>(x, [](T v) { return std::sqrt(v); });
    case UnaryKind::kReciprocal:
      return MapSame<T>(x, [](T v) { return T(1) / v; });
    case UnaryKind::kExp:
      return MapSame<T>(x, [](T v) { return std::exp(v); });
    case UnaryKind::kLog:
      return MapSame<T>(x, [](T v) { return std::log(v); });
    case UnaryKind::kErf:
      return MapSame<T>(x, [](T v) { return std::erf(v); });
    case UnaryKind::kSin:
      return MapSame<T>(x, [](T v) { return std::sin(v); });
    case UnaryKind::kCos:
      return MapSame<T>(x, [](T v) { return std::cos(v); });
    case UnaryKind::kTan:
      return MapSame<T>(x, [](T v) { return std::tan(v); });
    case UnaryKind::kAsin:
      return MapSame<T>(x, [](T v) { return std::asin(v); });
    case UnaryKind::kAcos:
      return MapSame<T>(x, [](T v) { return std::acos(v); });
    case UnaryKind::kAtan:
      return MapSame<T>(x, [](T v) { return std::atan(v); });
    case UnaryKind::kSinh:
      return MapSame<T>(x, [](T v) { return std::sinh(v); });
    case UnaryKind::kCosh:
      return MapSame<T>(x, [](T v) { return std::cosh(v); });
    case UnaryKind::kAsinh:
      return MapSame<T>(x, [](T v) { return std::asinh(v); });
    case UnaryKind::kAcosh:
      return MapSame<T>(x, [](T v) { return std::acosh(v); });
    case UnaryKind::kAtanh:
      return MapSame<T>(x, [](T v) { return std::atanh(v); });
    case UnaryKind::kLeakyRelu:
      return MapSame<T>(x, [=](T v) { return v < 0 ? alpha * v : v; });
    case UnaryKind::kElu:
      return MapSame<T>(x, [=](T v) { return v < 0 ? alpha * std::expm1(v) : v; });
    case UnaryKind::kSelu:
      return MapSame<T>(x, [=](T v) { return v > 0 ? gamma * v : gamma * alpha * std::expm1(v); });
    case UnaryKind::kCelu:
      return MapSame<T>(x, [=](T v) {
        return std::max(T(0), v) + std::min(T(0), alpha * std::expm1(v / alpha));
      });
    case UnaryKind::kSigmoid:
      return MapSame<T>(x, [](T v) { return Sigmoid(v); });
    case UnaryKind::kHardSigmoid:
      return MapSame<T>(x, [=](T v) { return std::max(T(0), std::min(T(1), alpha * v + beta)); });
    case UnaryKind::kHardSwish:
      return MapSame<T>(x,
                        [](T v) { return v * std::max(T(0), std::min(T(1), v / T(6) + T(0.5))); });
    case UnaryKind::kTanh:
      return MapSame<T>(x, [](T v) { return std::tanh(v); });
    case UnaryKind::kSoftplus:
      return MapSame<T>(x, [](T v) { return Softplus(v); });
    case UnaryKind::kSoftsign:
      return MapSame<T>(x, [](T v) { return v / (T(1) + std::abs(v)); });
    case UnaryKind::kThresholdedRelu:
      return MapSame<T>(x, [=](T v) { return v > alpha ? v : T(0); });
    case UnaryKind::kShrink:
      return MapSame<T>(x, [=](T v) {
        return v < -alpha ? v + beta : v > alpha ? v - beta : T(0);
      });
    case UnaryKind::kGelu:
      return MapSame<T>(
          x, [](T v) { return static_cast<T>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)))); });
    case UnaryKind::kGeluTanh:
      return MapSame<T>(x, [](T v) {
        const double d = v;
        const double inner = std::sqrt(2.0 / std::numbers::pi) * (d + 0.044715 * d * d * d);
        return static_cast<T>(0.5 * d * (1.0 + std::tanh(inner)));
      });
    case UnaryKind::kMish:
      return MapSame<T>(x, [](T v) { return v * std::tanh(Softplus(v)); });
  }
  return Tensor();
}

// Negation modulo 2^bits: -INT_MIN is INT_MIN, as in two's-complement hardware, without UB.
template <class T>
T WrapNeg(T v) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U(0) - static_cast<U>(v));
}

template <class T>
Tensor IntUnary(UnaryKind kind, const Tensor& x) {
  switch (kind) {
    case UnaryKind::kAbs:
      return MapSame<T>(x, [](T v) { return v < 0 ? WrapNeg(v) : v; });
    case UnaryKind::kNeg:
      return MapSame<T>(x, [](T v) { return WrapNeg(v); });
    case UnaryKind::kSign:
      return MapSame<T>(x, [](T v) { return static_cast<T>(v > 0 ? 1 : v < 0 ? -1 : 0); });
    case UnaryKind::kRelu:
      return MapSame<T>(x, [](T v) { return v < 0 ? T(0) : v; });
    default:
      return Tensor();
  }
}

}  // namespace

bool UnaryAcceptsIntegers(UnaryKind kind) {
  return kind == UnaryKind::kAbs || kind == UnaryKind::kNeg || kind == UnaryKind::kSign ||
         kind == UnaryKind::kRelu;
}

Expected<Tensor> Unary(UnaryKind kind, const UnaryParams& params, const Tensor& x) {
  if (x.dtype() == DType::kFloat32) return FloatUnary<float>(kind, params, x);
  if (x.dtype() == DType::kFloat64) return FloatUnary<double>(kind, params, x);
  if (UnaryAcceptsIntegers(kind)) {
    KILN_DISPATCH_INTEGER(x.dtype(), T, break, return IntUnary<T>(kind, x));
  }
  return Status::Error("input of type ", DTypeName(x.dtype()), " is not supported (expected ",
                       UnaryAcceptsIntegers(kind) ? "a float or integer type" : "float or double",
                       ")");
}

Expected<Tensor> IsNaN(const Tensor& x) {
  KILN_DISPATCH_FLOAT(
      x.dtype(), T,
      return Status::Error("IsNaN input must be a float type, got ", DTypeName(x.dtype())),
      return (Map<T, bool>(x, DType::kBool, [](T v) { return std::isnan(v); })));
  return Tensor();
}

Expected<Tensor> IsInf(const Tensor& x, bool detect_positive, bool detect_negative) {
  KILN_DISPATCH_FLOAT(
      x.dtype(), T,
      return Status::Error("IsInf input must be a float type, got ", DTypeName(x.dtype())),
      return (Map<T, bool>(x, DType::kBool, [=](T v) {
        return std::isinf(v) && (v > 0 ? detect_positive : detect_negative);
      })));
  return Tensor();
}

Expected<Tensor> Not(const Tensor& x) {
  if (x.dtype() != DType::kBool)
    return Status::Error("Not input must be bool, got ", DTypeName(x.dtype()));
  // Read bytes, not bools: a byte other than 0/1 from a file must not be undefined behaviour.
  return Map<uint8_t, bool>(x, DType::kBool, [](uint8_t v) { return v == 0; });
}

Expected<Tensor> BitwiseNot(const Tensor& x) {
  KILN_DISPATCH_INTEGER(
      x.dtype(), T,
      return Status::Error("BitwiseNot input must be an integer type, got ", DTypeName(x.dtype())),
      return MapSame<T>(x, [](T v) { return static_cast<T>(~v); }));
  return Tensor();
}

namespace {

// The single value of a Clip bound, which must have x's dtype and one element.
template <class T>
Expected<T> ClipBound(const Tensor* t, DType want, const char* what, T fallback) {
  if (t == nullptr) return fallback;
  if (t->dtype() != want)
    return Status::Error("Clip ", what, " must have the input's type ", DTypeName(want), ", got ",
                         DTypeName(t->dtype()));
  if (t->numel() != 1)
    return Status::Error("Clip ", what, " must be a scalar, got ", DescribeTensor(*t));
  return t->data<T>()[0];
}

template <class T>
Expected<Tensor> ClipTyped(const Tensor& x, const Tensor* min, const Tensor* max) {
  // An absent bound is the type's extreme (infinity for floats), which clamps nothing.
  const T lowest = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                        : std::numeric_limits<T>::lowest();
  const T highest = std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                         : std::numeric_limits<T>::max();
  KILN_ASSIGN_OR_RETURN(T lo, ClipBound<T>(min, x.dtype(), "min", lowest));
  KILN_ASSIGN_OR_RETURN(T hi, ClipBound<T>(max, x.dtype(), "max", highest));
  // Clamp to lo first, then hi: min > max gives max everywhere; NaN passes through.
  return MapSame<T>(x, [=](T v) {
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return v;
  });
}

}  // namespace

Expected<Tensor> Clip(const Tensor& x, const Tensor* min, const Tensor* max) {
  KILN_DISPATCH_NUMERIC(
      x.dtype(), T,
      return Status::Error("Clip input of type ", DTypeName(x.dtype()), " is not supported"),
      return ClipTyped<T>(x, min, max));
  return Tensor();
}

}  // namespace kiln::ref
