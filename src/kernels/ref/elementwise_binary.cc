// Binary, comparison, logic, Pow, Where and variadic reference kernels, all with numpy
// broadcasting.
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "kernels/ref/broadcast.h"
#include "kernels/ref/elementwise.h"

namespace kiln::ref {
namespace {

// out[i] = f(a[ia], b[ib]) over the broadcast of a and b. The output size comes from data, so it
// goes through Tensor::Make (two [N,1] x [1,N] inputs can ask for N^2 elements).
template <class A, class B, class R, class F>
Expected<Tensor> Broadcast2(DType out_dtype, const Tensor& a, const Tensor& b, F f) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, BroadcastDims({a.dims(), b.dims()}));
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Make(out_dtype, dims, "broadcast result"));
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  R* po = out.data<R>();
  for (BroadcastIter it(dims, {BroadcastStrides(a.dims(), dims), BroadcastStrides(b.dims(), dims)});
       !it.done(); it.next()) {
    po[it.index()] = f(pa[it.offset(0)], pb[it.offset(1)]);
  }
  return out;
}

Status SameDType(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() == b.dtype()) return Status::Ok();
  return Status::Error(op, " inputs must have one type, got ", DTypeName(a.dtype()), " and ",
                       DTypeName(b.dtype()));
}

// Unsigned arithmetic wide enough that integer promotion cannot overflow a signed int
// (uint16 * uint16 promotes to int and can overflow): results wrap modulo 2^bits.
template <class T>
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(uint32_t)), uint32_t, std::make_unsigned_t<T>>;

template <class T>
T WrapAdd(T a, T b) {
  return static_cast<T>(WrapType<T>(a) + WrapType<T>(b));
}
template <class T>
T WrapSub(T a, T b) {
  return static_cast<T>(WrapType<T>(a) - WrapType<T>(b));
}
template <class T>
T WrapMul(T a, T b) {
  return static_cast<T>(WrapType<T>(a) * WrapType<T>(b));
}

const char* kDivByZero = "integer division by zero";

template <class T>
Expected<Tensor> IntBinary(BinaryKind kind, const Tensor& a, const Tensor& b) {
  const DType dt = a.dtype();
  constexpr T kMin = std::numeric_limits<T>::min();
  constexpr int kBits = static_cast<int>(sizeof(T) * 8);
  bool div_by_zero = false;
  Expected<Tensor> r = Status::Error("unsupported");
  switch (kind) {
    case BinaryKind::kAdd:
      return Broadcast2<T, T, T>(dt, a, b, WrapAdd<T>);
    case BinaryKind::kSub:
      return Broadcast2<T, T, T>(dt, a, b, WrapSub<T>);
    case BinaryKind::kMul:
      return Broadcast2<T, T, T>(dt, a, b, WrapMul<T>);
    case BinaryKind::kPRelu:
      return Broadcast2<T, T, T>(dt, a, b, [](T x, T s) { return x < 0 ? WrapMul(x, s) : x; });
    case BinaryKind::kMax:
      return Broadcast2<T, T, T>(dt, a, b, [](T x, T y) { return x < y ? y : x; });
    case BinaryKind::kMin:
      return Broadcast2<T, T, T>(dt, a, b, [](T x, T y) { return y < x ? y : x; });
    case BinaryKind::kBitwiseAnd:
      return Broadcast2<T, T, T>(dt, a, b, [](T x, T y) { return static_cast<T>(x & y); });
    case BinaryKind::kBitwiseOr:
      return Broadcast2<T, T, T>(dt, a, b, [](T x, T y) { return static_cast<T>(x | y); });
    case BinaryKind::kBitwiseXor:
      return Broadcast2<T, T, T>(dt, a, b, [](T x, T y) { return static_cast<T>(x ^ y); });
    case BinaryKind::kBitShiftLeft:
    case BinaryKind::kBitShiftRight: {
      const bool left = kind == BinaryKind::kBitShiftLeft;
      // A count below 0 or at least the width is undefined in C++; as numpy does, every bit is
      // shifted out instead (0, or -1 for an arithmetic right shift of a negative value).
      return Broadcast2<T, T, T>(dt, a, b, [=](T x, T s) {
        if (s < T(0) || s >= static_cast<T>(kBits)) return (!left && x < T(0)) ? T(-1) : T(0);
        if (left) return static_cast<T>(WrapType<T>(x) << s);  // bits past the top are dropped
        return static_cast<T>(x >> s);  // arithmetic for signed types (C++20)
      });
    }
    case BinaryKind::kDiv:
      r = Broadcast2<T, T, T>(dt, a, b, [&](T x, T y) {
        if (y == 0) return div_by_zero = true, T(0);
        if constexpr (std::is_signed_v<T>) {
          if (x == kMin && y == T(-1)) return kMin;  // the one quotient that overflows
        }
        return static_cast<T>(x / y);  // C++ truncates toward zero, as ONNX requires
      });
      break;
    case BinaryKind::kMod:
    case BinaryKind::kFmod: {
      const bool python = kind == BinaryKind::kMod;
      r = Broadcast2<T, T, T>(dt, a, b, [&](T x, T y) {
        if (y == 0) return div_by_zero = true, T(0);
        if constexpr (std::is_signed_v<T>) {
          if (y == T(-1)) return T(0);  // also avoids INT_MIN % -1
          T m = static_cast<T>(x % y);
          // Python's sign rule: a nonzero remainder takes the divisor's sign.
          if (python && m != 0 && ((m < 0) != (y < 0))) m = static_cast<T>(m + y);
          return m;
        } else {
          return static_cast<T>(x % y);
        }
      });
      break;
    }
  }
  if (div_by_zero) return Status::Error(kDivByZero);
  return r;
}

template <class T>
Expected<Tensor> FloatBinary(BinaryKind kind, const Tensor& a, const Tensor& b) {
  const DType dt = a.dtype();
  switch (kind) {
    case BinaryKind::kAdd:
      return Broadcast2<T, T, T>(dt, a, b, [](T x, T y) { return x + y; });
    case BinaryKind::kSub:
      return Broadcast2<T, T, T>(dt, a, b, [](T x, T y) { return x - y; });
    case BinaryKind::kMul:
      return Broadcast2<T, T, T>(dt, a, b, [](T x, T y) { return x * y; });
    case BinaryKind::kDiv:
      return Broadcast2<T, T, T>(dt, a, b, [](T x, T y) { return x / y; });
    case BinaryKind::kFmod:
      return Broadcast2<T, T, T>(dt, a, b, [](T x, T y) { return std::fmod(x, y); });
    case BinaryKind::kMod:
      return Broadcast2<T, T, T>(dt, a, b, [](T x, T y) {
        T m = std::fmod(x, y);
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return m;
      });
    case BinaryKind::kPRelu:
      return Broadcast2<T, T, T>(dt, a, b, [](T x, T s) { return x < 0 ? s * x : x; });
    // NaN propagates (numpy.maximum), whichever side it is on.
    case BinaryKind::kMax:
      return Broadcast2<T, T, T>(dt, a, b, [](T x, T y) {
        return std::isnan(x) || std::isnan(y) ? std::numeric_limits<T>::quiet_NaN()
                                              : (x < y ? y : x);
      });
    case BinaryKind::kMin:
      return Broadcast2<T, T, T>(dt, a, b, [](T x, T y) {
        return std::isnan(x) || std::isnan(y) ? std::numeric_limits<T>::quiet_NaN()
                                              : (y < x ? y : x);
      });
    default:
      return Status::Error("bitwise operations need integer inputs, got ", DTypeName(dt));
  }
}

template <class T>
Expected<Tensor> CompareTyped(CompareKind kind, const Tensor& a, const Tensor& b) {
  switch (kind) {
    case CompareKind::kEqual:
      return Broadcast2<T, T, bool>(DType::kBool, a, b, [](T x, T y) { return x == y; });
    case CompareKind::kLess:
      return Broadcast2<T, T, bool>(DType::kBool, a, b, [](T x, T y) { return x < y; });
    case CompareKind::kGreater:
      return Broadcast2<T, T, bool>(DType::kBool, a, b, [](T x, T y) { return x > y; });
    case CompareKind::kLessOrEqual:
      return Broadcast2<T, T, bool>(DType::kBool, a, b, [](T x, T y) { return x <= y; });
    case CompareKind::kGreaterOrEqual:
      return Broadcast2<T, T, bool>(DType::kBool, a, b, [](T x, T y) { return x >= y; });
  }
  return Tensor();
}

// A string tensor must hold one string per element; a malformed one is an error, not an
// out-of-bounds read.
Status CheckStrings(const Tensor& t) {
  if (static_cast<int64_t>(t.strings().size()) == t.numel()) return Status::Ok();
  return Status::Error("string tensor ", DescribeTensor(t), " holds ", t.strings().size(),
                       " strings");
}

Expected<Tensor> EqualStrings(const Tensor& a, const Tensor& b) {
  KILN_RETURN_IF_ERROR(CheckStrings(a));
  KILN_RETURN_IF_ERROR(CheckStrings(b));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, BroadcastDims({a.dims(), b.dims()}));
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Make(DType::kBool, dims, "broadcast result"));
  bool* po = out.data<bool>();
  for (BroadcastIter it(dims, {BroadcastStrides(a.dims(), dims), BroadcastStrides(b.dims(), dims)});
       !it.done(); it.next()) {
    po[it.index()] = a.strings()[it.offset(0)] == b.strings()[it.offset(1)];
  }
  return out;
}

// Integer power by squaring, wrapping modulo 2^bits like repeated multiplication would.
template <class T>
T IntPow(T base, uint64_t e) {
  T result = 1;
  while (e > 0) {
    if (e & 1) result = WrapMul(result, base);
    base = WrapMul(base, base);
    e >>= 1;
  }
  return result;
}

template <class T>
T IntPowSigned(T base, int64_t e) {
  if (e >= 0) return IntPow(base, static_cast<uint64_t>(e));
  // 1 / base^|e| truncated toward zero.
  if (base == T(1)) return T(1);
  if constexpr (std::is_signed_v<T>) {
    if (base == T(-1)) return (e % 2 == 0) ? T(1) : T(-1);
  }
  return T(0);
}

// Saturating float-to-integer conversion (NaN -> 0), so no exponent is undefined behaviour.
template <class D>
D SaturateToInt(double v) {
  if (std::isnan(v)) return D(0);
  const double t = std::trunc(v);
  constexpr double kLow = static_cast<double>(std::numeric_limits<D>::lowest());
  constexpr double kHighPlusOne = static_cast<double>(std::numeric_limits<D>::max()) + 1.0;
  if (t <= kLow) return std::numeric_limits<D>::lowest();
  if (t >= kHighPlusOne) return std::numeric_limits<D>::max();
  return static_cast<D>(t);
}

template <class B, class E>
B PowOne(B base, E e) {
  if constexpr (std::is_floating_point_v<B>) {
    return static_cast<B>(std::pow(static_cast<double>(base), static_cast<double>(e)));
  } else if constexpr (std::is_floating_point_v<E>) {
    return SaturateToInt<B>(std::pow(static_cast<double>(base), static_cast<double>(e)));
  } else if constexpr (std::is_signed_v<E>) {
    return IntPowSigned(base, static_cast<int64_t>(e));
  } else {
    return IntPow(base, static_cast<uint64_t>(e));
  }
}

}  // namespace

Expected<Tensor> Binary(BinaryKind kind, const Tensor& a, const Tensor& b) {
  KILN_RETURN_IF_ERROR(SameDType("binary op", a, b));
  if (a.dtype() == DType::kFloat32) return FloatBinary<float>(kind, a, b);
  if (a.dtype() == DType::kFloat64) return FloatBinary<double>(kind, a, b);
  KILN_DISPATCH_INTEGER(a.dtype(), T, break, return IntBinary<T>(kind, a, b));
  return Status::Error("inputs of type ", DTypeName(a.dtype()), " are not supported");
}

Expected<Tensor> Compare(CompareKind kind, const Tensor& a, const Tensor& b) {
  KILN_RETURN_IF_ERROR(SameDType("comparison", a, b));
  if (kind == CompareKind::kEqual) {
    if (a.dtype() == DType::kString) return EqualStrings(a, b);
    if (a.dtype() == DType::kBool)
      return Broadcast2<uint8_t, uint8_t, bool>(
          DType::kBool, a, b, [](uint8_t x, uint8_t y) { return (x != 0) == (y != 0); });
  }
  KILN_DISPATCH_NUMERIC(
      a.dtype(), T,
      return Status::Error("comparison of ", DTypeName(a.dtype()), " inputs is not supported"),
      return CompareTyped<T>(kind, a, b));
  return Tensor();
}

Expected<Tensor> Logic(LogicKind kind, const Tensor& a, const Tensor& b) {
  if (a.dtype() != DType::kBool || b.dtype() != DType::kBool)
    return Status::Error("logic inputs must be bool, got ", DTypeName(a.dtype()), " and ",
                         DTypeName(b.dtype()));
  // Bytes, not bools: a stray byte value from a file must not be undefined behaviour.
  return Broadcast2<uint8_t, uint8_t, bool>(DType::kBool, a, b, [=](uint8_t x, uint8_t y) {
    const bool p = x != 0, q = y != 0;
    return kind == LogicKind::kAnd ? (p && q) : kind == LogicKind::kOr ? (p || q) : (p != q);
  });
}

Expected<Tensor> Pow(const Tensor& base, const Tensor& exponent) {
  const auto unsupported = [&] {
    return Status::Error("Pow of ", DTypeName(base.dtype()), " base and ",
                         DTypeName(exponent.dtype()), " exponent is not supported");
  };
  KILN_DISPATCH_NUMERIC(base.dtype(), B, return unsupported(),
                        KILN_DISPATCH_NUMERIC(exponent.dtype(), E, return unsupported(),
                                              return (Broadcast2<B, E, B>(
                                                  base.dtype(), base, exponent, PowOne<B, E>))));
  return Tensor();
}

Expected<Tensor> Where(const Tensor& cond, const Tensor& x, const Tensor& y) {
  if (cond.dtype() != DType::kBool)
    return Status::Error("Where condition must be bool, got ", DTypeName(cond.dtype()));
  KILN_RETURN_IF_ERROR(SameDType("Where", x, y));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                        BroadcastDims({cond.dims(), x.dims(), y.dims()}));
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Make(x.dtype(), dims, "Where result"));
  const uint8_t* pc = cond.data<uint8_t>();
  BroadcastIter it(dims, {BroadcastStrides(cond.dims(), dims), BroadcastStrides(x.dims(), dims),
                          BroadcastStrides(y.dims(), dims)});
  if (x.dtype() == DType::kString) {
    KILN_RETURN_IF_ERROR(CheckStrings(x));
    KILN_RETURN_IF_ERROR(CheckStrings(y));
    for (; !it.done(); it.next()) {
      out.strings()[it.index()] =
          pc[it.offset(0)] != 0 ? x.strings()[it.offset(1)] : y.strings()[it.offset(2)];
    }
    return out;
  }
  KILN_DISPATCH_ALL(
      x.dtype(), T, return Status::Error("Where of ", DTypeName(x.dtype()), " is not supported"), {
        // bool moves as bytes: a stray byte value must not be undefined behaviour.
        using V = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
        const V* px = x.data<V>();
        const V* py = y.data<V>();
        V* po = out.data<V>();
        for (; !it.done(); it.next())
          po[it.index()] = pc[it.offset(0)] != 0 ? px[it.offset(1)] : py[it.offset(2)];
      });
  return out;
}

Expected<Tensor> Variadic(VariadicKind kind, const std::vector<const Tensor*>& inputs) {
  if (inputs.empty()) return Status::Error("needs at least one input");
  for (const Tensor* t : inputs) {
    if (t == nullptr) return Status::Error("inputs may not be omitted");
    KILN_RETURN_IF_ERROR(SameDType("variadic op", *inputs[0], *t));
  }
  const DType dt = inputs[0]->dtype();
  const bool is_float = dt == DType::kFloat32 || dt == DType::kFloat64;
  if ((kind == VariadicKind::kSum || kind == VariadicKind::kMean) && !is_float)
    return Status::Error("Sum and Mean need float inputs, got ", DTypeName(dt));
  bool numeric = false;
  KILN_DISPATCH_NUMERIC(dt, T, break, numeric = sizeof(T) > 0);
  if (!numeric) return Status::Error("inputs of type ", DTypeName(dt), " are not supported");
  const BinaryKind step = kind == VariadicKind::kMax   ? BinaryKind::kMax
                          : kind == VariadicKind::kMin ? BinaryKind::kMin
                                                       : BinaryKind::kAdd;
  Tensor acc = inputs[0]->Clone();
  for (size_t i = 1; i < inputs.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(acc, Binary(step, acc, *inputs[i]));
  }
  if (kind == VariadicKind::kMean) {
    const double n = static_cast<double>(inputs.size());
    KILN_DISPATCH_FLOAT(dt, T, break, {
      T* p = acc.data<T>();
      for (int64_t i = 0; i < acc.numel(); ++i) p[i] = static_cast<T>(p[i] / n);
    });
  }
  return acc;
}

}  // namespace kiln::ref
