// Scalar f32 hot microkernels: the bodies of f32_hot_impl.h over one float, the level every CPU
// runs and the one the vector levels are cross-checked with in tests.
#include <cmath>
#include <cstring>

#include "kernels/ukernels/f32_hot.h"

namespace kiln::ukernels {
namespace {

struct V {
  using T = float;
  static constexpr size_t kWidth = 1;
  static T Load(const float* p) { return *p; }
  static void Store(float* p, T v) { *p = v; }
  // Width 1 has no partial vectors; these exist for the shared bodies and read one value.
  static T LoadPartial(const float* p, size_t) { return *p; }
  static T LoadPartialOr(const float* p, size_t, float) { return *p; }
  static void StorePartial(float* p, T v, size_t) { *p = v; }
  static T Set(float v) { return v; }
  static T Add(T a, T b) { return a + b; }
  static T Sub(T a, T b) { return a - b; }
  static T Mul(T a, T b) { return a * b; }
  static T Div(T a, T b) { return a / b; }
  // x86 maxps/minps: the second operand unless the first is strictly greater (smaller).
  static T Max(T a, T b) { return a > b ? a : b; }
  static T Min(T a, T b) { return a < b ? a : b; }
  static T MaxNan(T a, T b) { return a != a ? a : Max(a, b); }
  static T MinNan(T a, T b) { return a != a ? a : Min(a, b); }
  // Unfused: without -mfma, std::fma would be a library call per element.
  static T Fma(T a, T b, T c) { return a * b + c; }
  static T Fnma(T a, T b, T c) { return c - a * b; }
  static T Abs(T x) { return std::fabs(x); }
  static T CopySign(T mag, T sign) { return std::copysign(mag, sign); }
  static T Round(T x) { return std::nearbyint(x); }
  // p * 2^n in two steps so that n in [-150, 128] never leaves the exponent range.
  static T ScalePow2(T p, T n) {
    if (n != n) return n;
    const int32_t ni = static_cast<int32_t>(n);
    const int32_t n1 = ni >> 1, n2 = ni - n1;
    return p * Pow2(n1) * Pow2(n2);
  }
  static T IfNegative(T x, T a, T b) { return x < 0.0f ? a : b; }
  static float ReduceAdd(T v) { return v; }
  static float ReduceMax(T v) { return v; }
  static T LoadEvens(const float* p) { return *p; }
  static T Evens(T a, T) { return a; }
  static T TableBits(T k, const int32_t* t) {
    uint32_t b;
    std::memcpy(&b, &k, sizeof b);
    const uint32_t v = static_cast<uint32_t>(t[b & 15]) + (b << 19);
    float f;
    std::memcpy(&f, &v, sizeof f);
    return f;
  }

 private:
  static float Pow2(int32_t e) {
    const uint32_t bits = static_cast<uint32_t>(e + 127) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
};

}  // namespace
}  // namespace kiln::ukernels

#include "kernels/ukernels/f32_gconv_impl.h"
#include "kernels/ukernels/f32_gemv_panel_impl.h"
#include "kernels/ukernels/f32_hot_impl.h"

namespace kiln::ukernels {
KILN_DEFINE_F32_HOT_UKERNELS(scalar, V)
KILN_DEFINE_F32_GEMV_PANEL_UKERNEL(scalar, V)
KILN_DEFINE_F32_GCONV_UKERNEL(scalar, V, 4)
}  // namespace kiln::ukernels
