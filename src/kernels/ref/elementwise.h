// Reference elementwise kernels: unary math and activations, casts, binary arithmetic with numpy
// broadcasting, comparisons, logic, Where and the variadic Max/Min/Sum/Mean. Plain loops, the
// oracle the optimized kernels are tested against.
//
// Float math runs on float32/float64 only (callers widen float16/bfloat16). Errors carry no node
// context; the op layer adds it. Integer arithmetic wraps modulo 2^bits (as ONNX Runtime and
// numpy do) instead of overflowing, and integer division by zero is an error, never a trap.
#pragma once

#include <cstdint>
#include <vector>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ref {

enum class UnaryKind {
  // Defined for float32/float64 and every integer type.
  kAbs,
  kNeg,
  kSign,
  kRelu,
  // float32/float64 only.
  kFloor,
  kCeil,
  kRound,
  kSqrt,
  kReciprocal,
  kExp,
  kLog,
  kErf,
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kLeakyRelu,  // alpha
  kElu,        // alpha
  kSelu,       // alpha, gamma
  kCelu,       // alpha
  kSigmoid,
  kHardSigmoid,  // alpha, beta
  kHardSwish,
  kTanh,
  kSoftplus,
  kSoftsign,
  kThresholdedRelu,  // alpha
  kShrink,           // alpha = lambd, beta = bias
  kGelu,             // exact, with erf
  kGeluTanh,         // the tanh approximation
  kMish,
};

struct UnaryParams {
  double alpha = 0;
  double beta = 0;
  double gamma = 0;
};

// True if `kind` accepts integer inputs (Abs, Neg, Sign, Relu).
bool UnaryAcceptsIntegers(UnaryKind kind);
// y = f(x) elementwise; same dtype and dims as x.
Expected<Tensor> Unary(UnaryKind kind, const UnaryParams& params, const Tensor& x);

// Float predicates: bool output with x's dims.
Expected<Tensor> IsNaN(const Tensor& x);
Expected<Tensor> IsInf(const Tensor& x, bool detect_positive, bool detect_negative);
Expected<Tensor> Not(const Tensor& x);         // bool
Expected<Tensor> BitwiseNot(const Tensor& x);  // integer types

// Converts every element to `to`. Numbers, bool, float16 and bfloat16 convert among each other
// (float to integer truncates toward zero; NaN becomes 0 and out-of-range values saturate, so no
// input is undefined behaviour). Numbers convert to and from strings; an unparsable string is an
// error naming the element.
Expected<Tensor> Cast(const Tensor& x, DType to);

// Clamps x into [min, max]; either bound may be null (absent). Bounds are scalars (or
// one-element tensors) of x's dtype; min > max yields max everywhere, as ONNX specifies.
Expected<Tensor> Clip(const Tensor& x, const Tensor* min, const Tensor* max);

enum class BinaryKind {
  kAdd,
  kSub,
  kMul,
  kDiv,   // numeric; integer Div truncates toward zero
  kMod,   // integer remainder with the divisor's sign (Python), or float
  kFmod,  // remainder with the dividend's sign (C fmod)
  kBitShiftLeft,
  kBitShiftRight,  // integers; out-of-range counts shift every bit out
  kBitwiseAnd,
  kBitwiseOr,
  kBitwiseXor,  // integers
  kMax,
  kMin,    // numeric; NaN propagates
  kPRelu,  // x < 0 ? slope * x : x
};
// c = a op b with numpy broadcasting; a and b share one dtype, c has it too.
Expected<Tensor> Binary(BinaryKind kind, const Tensor& a, const Tensor& b);

enum class CompareKind { kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual };
// Bool result with numpy broadcasting. Equal also takes bool and string inputs.
Expected<Tensor> Compare(CompareKind kind, const Tensor& a, const Tensor& b);

enum class LogicKind { kAnd, kOr, kXor };
Expected<Tensor> Logic(LogicKind kind, const Tensor& a, const Tensor& b);  // bool inputs

// base ^ exponent with broadcasting; the result has base's dtype. The two dtypes may differ
// (float base with integer exponent and the reverse). Integer ^ integer is exact (wrapping);
// a negative integer exponent gives the truncated result (0 unless |base| == 1).
Expected<Tensor> Pow(const Tensor& base, const Tensor& exponent);

// cond ? x : y with three-way broadcasting; x and y share any dtype (strings included).
Expected<Tensor> Where(const Tensor& cond, const Tensor& x, const Tensor& y);

enum class VariadicKind { kSum, kMean, kMax, kMin };
// Folds one or more inputs of one dtype with broadcasting. Sum and Mean are float only.
Expected<Tensor> Variadic(VariadicKind kind, const std::vector<const Tensor*>& inputs);

}  // namespace kiln::ref
