// Cast: every fixed-size type to every other, and numbers to and from strings.
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/ref/elementwise.h"

namespace kiln::ref {
namespace {

template <class T>
constexpr bool kIsHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <class S>
float HalfLikeToFloat(S s) {
  if constexpr (std::is_same_v<S, Half>)
    return HalfToFloat(s.bits);
  else
    return BFloat16ToFloat(s.bits);
}

// double -> float without relying on out-of-range conversion, which C++ leaves undefined.
float NarrowToFloat(double d) {
  constexpr double kMax = std::numeric_limits<float>::max();
  if (d > kMax) return std::numeric_limits<float>::infinity();
  if (d < -kMax) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(d);
}

// Float to integer: truncate toward zero, NaN -> 0, saturate outside D's range. The saturation
// makes every input defined; ONNX leaves out-of-range casts unspecified.
template <class D>
D FloatToInt(double v) {
  if (std::isnan(v)) return D(0);
  const double t = std::trunc(v);
  // lowest() and max()+1 are exact powers of two in double, so the comparisons are exact.
  constexpr double kLow = static_cast<double>(std::numeric_limits<D>::lowest());
  constexpr double kHighPlusOne = static_cast<double>(std::numeric_limits<D>::max()) + 1.0;
  if (t <= kLow) return std::numeric_limits<D>::lowest();
  if (t >= kHighPlusOne) return std::numeric_limits<D>::max();
  return static_cast<D>(t);
}

// Cast's float -> bfloat16 keeps the top 16 bits (truncation): the ONNX backend tests expect it
// (numpy's view of the upper half). NaN keeps a mantissa bit so it cannot become infinity.
// The interpreter's float16/bfloat16 narrowing of op results rounds to nearest even instead.
uint16_t FloatToBFloat16Truncate(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  const uint16_t top = static_cast<uint16_t>(bits >> 16);
  return std::isnan(f) ? static_cast<uint16_t>(top | 0x0040) : top;
}

template <class D, class S>
D Convert(S s) {
  if constexpr (kIsHalfLike<S>) {
    return Convert<D>(HalfLikeToFloat(s));
  } else if constexpr (std::is_same_v<D, bool>) {
    return s != S(0);  // NaN is "not zero", so it casts to true, as numpy does
  } else if constexpr (std::is_same_v<D, Half>) {
    return Half{FloatToHalf(Convert<float>(s))};
  } else if constexpr (std::is_same_v<D, BFloat16>) {
    return BFloat16{FloatToBFloat16Truncate(Convert<float>(s))};
  } else if constexpr (std::is_same_v<D, float> && std::is_same_v<S, double>) {
    return NarrowToFloat(s);
  } else if constexpr (std::is_floating_point_v<D>) {
    return static_cast<D>(s);
  } else if constexpr (std::is_floating_point_v<S>) {
    return FloatToInt<D>(static_cast<double>(s));
  } else {
    return static_cast<D>(s);  // integer and bool to integer: modulo 2^bits (C++20 defines it)
  }
}

template <class S, class D>
void CastLoop(const Tensor& x, Tensor* y) {
  D* out = y->data<D>();
  if constexpr (std::is_same_v<S, bool>) {
    // Bytes, not bools: a byte other than 0/1 from a file must not be undefined behaviour.
    const uint8_t* in = x.data<uint8_t>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = Convert<D>(in[i] != 0);
  } else {
    const S* in = x.data<S>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = Convert<D>(in[i]);
  }
}

template <class S>
std::string ToString(S s) {
  if constexpr (kIsHalfLike<S>) {
    return ToString(HalfLikeToFloat(s));
  } else if constexpr (std::is_same_v<S, bool>) {
    return s ? "1" : "0";
  } else if constexpr (std::is_floating_point_v<S>) {
    // The shortest text that reads back as the same value ("0.1", not "0.100000001").
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof(buf), s);
    return std::string(buf, res.ptr);
  } else {
    return std::to_string(s);
  }
}

template <class S>
void ToStringLoop(const Tensor& x, std::vector<std::string>* out) {
  if constexpr (std::is_same_v<S, bool>) {
    const uint8_t* in = x.data<uint8_t>();  // bool as bytes, as in CastLoop
    for (int64_t i = 0; i < x.numel(); ++i) (*out)[i] = ToString(in[i] != 0);
  } else {
    const S* in = x.data<S>();
    for (int64_t i = 0; i < x.numel(); ++i) (*out)[i] = ToString(in[i]);
  }
}

// Parses a whole string (surrounding spaces allowed) as a number of type D.
template <class D>
Expected<D> FromString(const std::string& s, int64_t index) {
  const char* begin = s.c_str();
  char* end = nullptr;
  auto bad = [&] {
    return Status::Error("Cast cannot read string element ", index, " (\"", s.substr(0, 40),
                         "\") as ", DTypeName(DTypeOf<D>::value));
  };
  auto rest_is_space = [&] {
    while (*end == ' ' || *end == '\t' || *end == '\n') ++end;
    return end != begin && *end == '\0';
  };
  if constexpr (std::is_integral_v<D> && !std::is_same_v<D, bool>) {
    errno = 0;
    if constexpr (std::is_signed_v<D>) {
      long long v = std::strtoll(begin, &end, 10);
      if (rest_is_space() && errno == 0) return Convert<D>(static_cast<int64_t>(v));
    } else {
      unsigned long long v = std::strtoull(begin, &end, 10);
      if (rest_is_space() && errno == 0 && s.find('-') == std::string::npos)
        return Convert<D>(static_cast<uint64_t>(v));
    }
  }
  // Floats, bool, and integers written as "1.5e3": strtod reads "inf", "-INF", "NaN" too.
  double v = std::strtod(begin, &end);
  if (!rest_is_space()) return bad();
  return Convert<D>(v);
}

}  // namespace

Expected<Tensor> Cast(const Tensor& x, DType to) {
  const auto unsupported = [&] {
    return Status::Error("Cast from ", DTypeName(x.dtype()), " to ", DTypeName(to),
                         " is not supported");
  };
  const DType from = x.dtype();
  if (from == DType::kString && static_cast<int64_t>(x.strings().size()) != x.numel())
    return Status::Error("string tensor ", DescribeTensor(x), " holds ", x.strings().size(),
                         " strings");
  if (from == DType::kString && to == DType::kString) return x.Clone();
  Tensor y(to, x.dims());
  if (from == DType::kString) {
    const auto& in = x.strings();
    KILN_DISPATCH_ALL(to, D, return unsupported(), {
      D* out = y.data<D>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        KILN_ASSIGN_OR_RETURN(out[i], FromString<D>(in[i], i));
      }
    });
    return y;
  }
  if (to == DType::kString) {
    auto& out = y.strings();
    KILN_DISPATCH_ALL(from, S, return unsupported(), ToStringLoop<S>(x, &out));
    return y;
  }
  KILN_DISPATCH_ALL(from, S, return unsupported(),
                    KILN_DISPATCH_ALL(to, D, return unsupported(), (CastLoop<S, D>(x, &y))));
  return y;
}

}  // namespace kiln::ref
