// Element types. The numbering is ONNX's TensorProto.DataType, so the frontend maps 1:1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace kiln {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
  // Pseudo element types beyond ONNX's numbering: a Tensor of these holds an ONNX sequence (an
  // ordered list of values) or optional (empty, or one value) instead of elements, so every
  // interface that passes Tensors carries them too. They have no bytes (DTypeSize 0).
  kSequence = 1000,
  kOptional = 1001,
};

// Bytes per element; 0 for kUndefined, sizeof(std::string) is never used (strings live apart).
size_t DTypeSize(DType t);
const char* DTypeName(DType t);  // "float32", "int64", ...
// True for the tensor element types kiln knows; false for anything a hostile file may put in an
// int32 (and for kSequence/kOptional, which are no element types).
bool IsKnownDType(int32_t onnx_type);
// IsKnownDType, or kSequence/kOptional: the types a value (an input, an activation) may have.
bool IsKnownValueDType(int32_t type);
// kSequence or kOptional.
inline bool IsContainer(DType t) { return t == DType::kSequence || t == DType::kOptional; }
bool IsFloat(DType t);  // float16, bfloat16, float32, float64
bool IsInteger(DType t);
bool IsSigned(DType t);

// IEEE binary16 and bfloat16 storage types. Arithmetic converts through float.
struct Half {
  uint16_t bits = 0;
};
struct BFloat16 {
  uint16_t bits = 0;
};
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);  // round to nearest even
inline float BFloat16ToFloat(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t FloatToBFloat16(float f);  // round to nearest even

template <class T>
struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kFloat32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kFloat64; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kInt8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::kInt16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kUInt8; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::kUInt16; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kUInt32; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::kUInt64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };
template <> struct DTypeOf<Half> { static constexpr DType value = DType::kFloat16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::kBFloat16; };

}  // namespace kiln

// Type dispatch: KILN_DISPATCH_xxx(dtype, T, ...body using T...). The default branch
// evaluates `on_unsupported`, which must be an expression (usually a return of a Status).
#define KILN_DTYPE_CASE(enum_value, type, T, ...) \
  case ::kiln::DType::enum_value: {               \
    using T = type;                               \
    __VA_ARGS__;                                  \
    break;                                        \
  }

// float32 and float64 (float16/bfloat16 are promoted to float32 by the caller).
#define KILN_DISPATCH_FLOAT(dtype, T, on_unsupported, ...)     \
  switch (dtype) {                                             \
    KILN_DTYPE_CASE(kFloat32, float, T, __VA_ARGS__)           \
    KILN_DTYPE_CASE(kFloat64, double, T, __VA_ARGS__)          \
    default:                                                   \
      on_unsupported;                                          \
  }

#define KILN_DISPATCH_INT_CASES(T, ...)                        \
  KILN_DTYPE_CASE(kInt8, int8_t, T, __VA_ARGS__)               \
  KILN_DTYPE_CASE(kInt16, int16_t, T, __VA_ARGS__)             \
  KILN_DTYPE_CASE(kInt32, int32_t, T, __VA_ARGS__)             \
  KILN_DTYPE_CASE(kInt64, int64_t, T, __VA_ARGS__)             \
  KILN_DTYPE_CASE(kUInt8, uint8_t, T, __VA_ARGS__)             \
  KILN_DTYPE_CASE(kUInt16, uint16_t, T, __VA_ARGS__)           \
  KILN_DTYPE_CASE(kUInt32, uint32_t, T, __VA_ARGS__)           \
  KILN_DTYPE_CASE(kUInt64, uint64_t, T, __VA_ARGS__)

// float32, float64 and every integer type (not bool, not 16-bit floats).
#define KILN_DISPATCH_NUMERIC(dtype, T, on_unsupported, ...)   \
  switch (dtype) {                                             \
    KILN_DTYPE_CASE(kFloat32, float, T, __VA_ARGS__)           \
    KILN_DTYPE_CASE(kFloat64, double, T, __VA_ARGS__)          \
    KILN_DISPATCH_INT_CASES(T, __VA_ARGS__)                    \
    default:                                                   \
      on_unsupported;                                          \
  }

#define KILN_DISPATCH_INTEGER(dtype, T, on_unsupported, ...)   \
  switch (dtype) {                                             \
    KILN_DISPATCH_INT_CASES(T, __VA_ARGS__)                    \
    default:                                                   \
      on_unsupported;                                          \
  }

// Every fixed-size type, for ops that only move bytes (Gather, Transpose, Concat...).
// 16-bit floats appear as Half / BFloat16, bool as bool.
#define KILN_DISPATCH_ALL(dtype, T, on_unsupported, ...)       \
  switch (dtype) {                                             \
    KILN_DTYPE_CASE(kFloat32, float, T, __VA_ARGS__)           \
    KILN_DTYPE_CASE(kFloat64, double, T, __VA_ARGS__)          \
    KILN_DISPATCH_INT_CASES(T, __VA_ARGS__)                    \
    KILN_DTYPE_CASE(kBool, bool, T, __VA_ARGS__)               \
    KILN_DTYPE_CASE(kFloat16, ::kiln::Half, T, __VA_ARGS__)    \
    KILN_DTYPE_CASE(kBFloat16, ::kiln::BFloat16, T, __VA_ARGS__) \
    default:                                                   \
      on_unsupported;                                          \
  }
