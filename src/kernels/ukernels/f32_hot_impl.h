// The bodies of the f32 hot microkernels, written once over a SIMD "vector traits" type V that
// each ISA file defines before including this header (scalar: one float; avx2: __m256; avx512:
// __m512). Included only by the files in ukernels/<isa>/, and everything here has internal
// linkage: each ISA file compiles its own copy with its own flags, so the linker can never pick
// an AVX-512 copy for a scalar caller (see src/kernels/CMakeLists.txt). Nothing here may use
// std:: templates for the same reason.
//
// V provides: T, kWidth, Load, Store, LoadPartial (zeros past n), LoadPartialOr (fill past n),
// StorePartial, Set, Add, Sub, Mul, Div, Max, Min (x86 semantics: the second operand when either
// is NaN), MaxNan, MinNan (NaN propagates), Fma (a * b + c), Fnma (c - a * b), Abs, CopySign,
// Round (to nearest even), ScalePow2 (p * 2^n for integral n in [-150, 128]), IfNegative,
// ReduceAdd, ReduceMax, LoadEvens (p[0], p[2], ..., reading 2 * kWidth floats), Evens (the
// same of the registers a, b as consecutive floats), TableBits(k, t) (per lane, the float whose
// bits are t[b & 15] + (b << 19), b the bits of k).
//
// Accuracy, measured against double precision in tests/kernels/hot_eltwise_test.cc (the same
// figures at every ISA level; the test asserts the bounds in brackets):
//   exp      Cody-Waite by ln 2, degree-5 polynomial (Cephes expf): 1.25 ulp [1.5] on [-87, 88];
//            denormal results below, 0 under -103.97 and +inf over 88.72, as expf.
//   tanh     -expm1(-2|x|) / (expm1(-2|x|) + 2), the expm1 accurate near 0: 2.48 ulp [3].
//   sigmoid  e / (1 + e) with e = exp(-|x|), mirrored for x > 0: 2.31 ulp [3].
//   SiLU     x / (1 + exp(-x)), exp by a 16-entry table of 2^(j/16) and a cubic: 3.2 ulp [4].
//   gelu     erf by Abramowitz & Stegun 7.1.26 (erf abs. error <= 1.5e-7), evaluated as
//            1 +- erfc so negative inputs keep their accuracy: abs. error 1.74e-7 * max(1, |x|)
//            [2e-7].
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ukernels/f32_hot.h"
#include "kernels/ukernels/f32_pool_impl.h"  // HotPool2d

namespace kiln::ukernels {
namespace {  // NOLINT(build/namespaces): one private copy per ISA file, on purpose

template <class V>
inline typename V::T HotExp(typename V::T x) {
  using T = typename V::T;
  // Clamping keeps n in [-150, 128]; NaN passes through (Max/Min return their second operand).
  x = V::Min(V::Set(89.0f), V::Max(V::Set(-104.0f), x));
  const T n = V::Round(V::Mul(x, V::Set(1.44269504088896341f)));
  T r = V::Fnma(n, V::Set(0.693359375f), x);  // ln 2 = 0.693359375 - 2.12194440e-4, n * hi exact
  r = V::Fnma(n, V::Set(-2.12194440e-4f), r);
  T p = V::Set(1.9875691500e-4f);
  p = V::Fma(p, r, V::Set(1.3981999507e-3f));
  p = V::Fma(p, r, V::Set(8.3334519073e-3f));
  p = V::Fma(p, r, V::Set(4.1665795894e-2f));
  p = V::Fma(p, r, V::Set(1.6666665459e-1f));
  p = V::Fma(p, r, V::Set(5.0000001201e-1f));
  p = V::Fma(p, V::Mul(r, r), V::Add(r, V::Set(1.0f)));
  return V::ScalePow2(p, n);
}

// expm1(z) for z in [-18, 0]: 2^n * (e^r - 1) + (2^n - 1), which is e^r - 1 itself when n == 0,
// so small |z| keep their relative accuracy.
template <class V>
inline typename V::T HotExpm1Neg(typename V::T z) {
  using T = typename V::T;
  const T n = V::Round(V::Mul(z, V::Set(1.44269504088896341f)));
  T r = V::Fnma(n, V::Set(0.693359375f), z);
  r = V::Fnma(n, V::Set(-2.12194440e-4f), r);
  T p = V::Set(1.9875691500e-4f);
  p = V::Fma(p, r, V::Set(1.3981999507e-3f));
  p = V::Fma(p, r, V::Set(8.3334519073e-3f));
  p = V::Fma(p, r, V::Set(4.1665795894e-2f));
  p = V::Fma(p, r, V::Set(1.6666665459e-1f));
  p = V::Fma(p, r, V::Set(5.0000001201e-1f));
  const T q = V::Fma(p, V::Mul(r, r), r);  // e^r - 1
  const T s = V::ScalePow2(V::Set(1.0f), n);
  return V::Fma(s, q, V::Sub(s, V::Set(1.0f)));
}

template <class V>
inline typename V::T HotTanh(typename V::T x) {
  using T = typename V::T;
  // tanh saturates to 1 in float beyond |x| = 9; -18 keeps 2^n normal.
  const T z = V::Max(V::Set(-18.0f), V::Mul(V::Abs(x), V::Set(-2.0f)));
  const T em1 = HotExpm1Neg<V>(z);
  const T t = V::Div(V::Sub(V::Set(0.0f), em1), V::Add(em1, V::Set(2.0f)));
  return V::CopySign(t, x);
}

template <class V>
inline typename V::T HotSigmoid(typename V::T x) {
  using T = typename V::T;
  const T e = HotExp<V>(V::Sub(V::Set(0.0f), V::Abs(x)));
  const T f = V::Div(e, V::Add(e, V::Set(1.0f)));
  return V::IfNegative(x, f, V::Sub(V::Set(1.0f), f));
}

// 2^(j / 16) for j < 16 as float bits, less j << 19: adding k << 19 for k = 16 q + j (low bits
// of an integer-valued float's bits, see HotSilu) gives the bits of 2^(k / 16) for normal results.
constexpr int32_t kExp2Sixteenths[16] = {
    0x3F800000, 0x3F7DAAC3, 0x3F7B95C2, 0x3F79C3D3, 0x3F7837F0, 0x3F76F532, 0x3F75FED7, 0x3F75583F,
    0x3F7504F3, 0x3F7508A4, 0x3F75672A, 0x3F76248C, 0x3F7744FD, 0x3F78CCDF, 0x3F7AC0C7, 0x3F7D257D};

// x / (1 + e^-x): no cancellation on either side (e^-x is large for x < 0, and 1 + e^-x as
// accurate as it). e^-x = 2^(k/16) e^-r with k = round(-16 x / ln 2) and |r| <= ln 2 / 32: a table
// of 2^(j/16) (V::TableBits) and a cubic instead of HotExp's degree-5 polynomial and vscalefps.
// It takes 7 multiply-adds and 16 operations in all, against 24 of x times HotSigmoid (Zen 4:
// 3.1 vs 5.8 ns per 16 floats). 1.5 * 2^23 added to the product rounds it to an integer k held
// in the low bits of the sum. x is clamped to [-88, 87], where 2^(k/16) stays normal: beyond 87
// the result is x, below -88 it is -88 / 1.65e38 (the limit there is -0).
template <class V>
inline typename V::T HotSilu(typename V::T x) {
  using T = typename V::T;
  const T xl = V::Max(V::Set(-88.0f), x);  // NaN passes (the second operand)
  const T xc = V::Min(V::Set(87.0f), xl);
  const T magic = V::Set(12582912.0f);
  const T k = V::Fma(xc, V::Set(-23.0831203f), magic);  // -16 / ln 2
  const T n = V::Sub(k, magic);
  // r = x + n ln2/16 in two parts; the first has 12 bits, so n times it is exact.
  T r = V::Fma(n, V::Set(0.0433197021484375f), xc);
  r = V::Fma(n, V::Set(1.99663646e-6f), r);
  // e^-r - 1 = r (r (1/2 - r/6) - 1), small, so 2^(k/16) e^-r = t + t (e^-r - 1) rounds once.
  const T q = V::Fma(r, V::Set(-1.0f / 6.0f), V::Set(0.5f));
  const T em1 = V::Mul(r, V::Fma(r, q, V::Set(-1.0f)));
  const T t = V::TableBits(k, kExp2Sixteenths);
  const T e = V::Fma(t, em1, t);
  return V::Div(xl, V::Add(e, V::Set(1.0f)));
}

template <class V>
inline typename V::T HotGelu(typename V::T x) {
  using T = typename V::T;
  const T z = V::Mul(x, V::Set(0.70710678118654752f));
  const T az = V::Abs(z);
  const T one = V::Set(1.0f);
  const T t = V::Div(one, V::Fma(az, V::Set(0.3275911f), one));
  T p = V::Set(1.061405429f);
  p = V::Fma(p, t, V::Set(-1.453152027f));
  p = V::Fma(p, t, V::Set(1.421413741f));
  p = V::Fma(p, t, V::Set(-0.284496736f));
  p = V::Fma(p, t, V::Set(0.254829592f));
  p = V::Mul(p, t);
  // q = erfc(|z|); 1 + erf(z) is q for z < 0 and 2 - q otherwise.
  const T q = V::Mul(p, HotExp<V>(V::Sub(V::Set(0.0f), V::Mul(az, az))));
  const T s = V::IfNegative(z, q, V::Sub(V::Set(2.0f), q));
  return V::Mul(V::Mul(x, V::Set(0.5f)), s);
}

// y = f(x), two vectors per step, then whole vectors, then one masked tail. In place is safe:
// every store follows the loads of its step.
template <class V, class F>
inline void HotMap(size_t n, const float* x, float* y, const F& f) {
  constexpr size_t w = V::kWidth;
  size_t i = 0;
  for (; i + 2 * w <= n; i += 2 * w) {
    const typename V::T a = V::Load(x + i);
    const typename V::T b = V::Load(x + i + w);
    V::Store(y + i, f(a));
    V::Store(y + i + w, f(b));
  }
  for (; i + w <= n; i += w) V::Store(y + i, f(V::Load(x + i)));
  if (i < n) V::StorePartial(y + i, f(V::LoadPartial(x + i, n - i)), n - i);
}

template <class V, class F>
inline void HotMap2(size_t n, const float* a, const float* b, float* y, const F& f) {
  constexpr size_t w = V::kWidth;
  size_t i = 0;
  for (; i + 2 * w <= n; i += 2 * w) {
    const typename V::T r0 = f(V::Load(a + i), V::Load(b + i));
    const typename V::T r1 = f(V::Load(a + i + w), V::Load(b + i + w));
    V::Store(y + i, r0);
    V::Store(y + i + w, r1);
  }
  for (; i + w <= n; i += w) V::Store(y + i, f(V::Load(a + i), V::Load(b + i)));
  if (i < n) {
    V::StorePartial(y + i, f(V::LoadPartial(a + i, n - i), V::LoadPartial(b + i, n - i)), n - i);
  }
}

template <class V>
struct HotOps {
  using T = typename V::T;
  static T Add(T a, T b) { return V::Add(a, b); }
  static T Sub(T a, T b) { return V::Sub(a, b); }
  static T Mul(T a, T b) { return V::Mul(a, b); }
  static T Div(T a, T b) { return V::Div(a, b); }
  static T Max(T a, T b) { return V::MaxNan(a, b); }
  static T Min(T a, T b) { return V::MinNan(a, b); }
};

template <class V, typename V::T (*Op)(typename V::T, typename V::T)>
inline void HotBinary(size_t n, const float* a, const float* b, float* y) {
  HotMap2<V>(n, a, b, y, [](typename V::T u, typename V::T v) { return Op(u, v); });
}

template <class V, typename V::T (*Op)(typename V::T, typename V::T)>
inline void HotBinaryC(size_t n, const float* a, const float* c, float* y) {
  const typename V::T vc = V::Set(c[0]);
  HotMap<V>(n, a, y, [vc](typename V::T u) { return Op(u, vc); });
}

template <class V, typename V::T (*Op)(typename V::T, typename V::T)>
inline void HotRBinaryC(size_t n, const float* a, const float* c, float* y) {
  const typename V::T vc = V::Set(c[0]);
  HotMap<V>(n, a, y, [vc](typename V::T u) { return Op(vc, u); });
}

// Max or sum of n >= 0 values with four accumulators; `fill` is the identity.
template <class V, bool kMax>
inline float HotReduce(size_t n, const float* x) {
  using T = typename V::T;
  constexpr size_t w = V::kWidth;
  const float fill = kMax ? -__builtin_inff() : 0.0f;
  auto op = [](T a, T b) { return kMax ? V::Max(a, b) : V::Add(a, b); };
  T acc0 = V::Set(fill), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  size_t i = 0;
  for (; i + 4 * w <= n; i += 4 * w) {
    acc0 = op(acc0, V::Load(x + i));
    acc1 = op(acc1, V::Load(x + i + w));
    acc2 = op(acc2, V::Load(x + i + 2 * w));
    acc3 = op(acc3, V::Load(x + i + 3 * w));
  }
  for (; i + w <= n; i += w) acc0 = op(acc0, V::Load(x + i));
  if (i < n) acc1 = op(acc1, V::LoadPartialOr(x + i, n - i, fill));
  const T acc = op(op(acc0, acc1), op(acc2, acc3));
  return kMax ? V::ReduceMax(acc) : V::ReduceAdd(acc);
}

template <class V, bool kStore>
inline float HotAddExpMinusMax(size_t n, const float* x, float max, float* y) {
  using T = typename V::T;
  constexpr size_t w = V::kWidth;
  const T vmax = V::Set(max);
  T acc0 = V::Set(0.0f), acc1 = acc0;
  size_t i = 0;
  for (; i + 2 * w <= n; i += 2 * w) {
    const T e0 = HotExp<V>(V::Sub(V::Load(x + i), vmax));
    const T e1 = HotExp<V>(V::Sub(V::Load(x + i + w), vmax));
    if (kStore) {
      V::Store(y + i, e0);
      V::Store(y + i + w, e1);
    }
    acc0 = V::Add(acc0, e0);
    acc1 = V::Add(acc1, e1);
  }
  for (; i + w <= n; i += w) {
    const T e = HotExp<V>(V::Sub(V::Load(x + i), vmax));
    if (kStore) V::Store(y + i, e);
    acc0 = V::Add(acc0, e);
  }
  if (i < n) {
    // Lanes past n read -inf, whose exp is 0.
    const T e = HotExp<V>(V::Sub(V::LoadPartialOr(x + i, n - i, -__builtin_inff()), vmax));
    if (kStore) V::StorePartial(y + i, e, n - i);
    acc1 = V::Add(acc1, e);
  }
  return V::ReduceAdd(V::Add(acc0, acc1));
}

template <class V>
inline void HotSumSqDiff(size_t n, const float* x, float mean, float* sum_diff, float* sum_sq) {
  using T = typename V::T;
  constexpr size_t w = V::kWidth;
  const T vm = V::Set(mean);
  T s0 = V::Set(0.0f), s1 = s0, q0 = s0, q1 = s0;
  size_t i = 0;
  for (; i + 2 * w <= n; i += 2 * w) {
    const T d0 = V::Sub(V::Load(x + i), vm);
    const T d1 = V::Sub(V::Load(x + i + w), vm);
    s0 = V::Add(s0, d0);
    s1 = V::Add(s1, d1);
    q0 = V::Fma(d0, d0, q0);
    q1 = V::Fma(d1, d1, q1);
  }
  for (; i + w <= n; i += w) {
    const T d = V::Sub(V::Load(x + i), vm);
    s0 = V::Add(s0, d);
    q0 = V::Fma(d, d, q0);
  }
  if (i < n) {
    const T d = V::Sub(V::LoadPartialOr(x + i, n - i, mean), vm);  // lanes past n give 0
    s1 = V::Add(s1, d);
    q1 = V::Fma(d, d, q1);
  }
  *sum_diff = V::ReduceAdd(V::Add(s0, s1));
  *sum_sq = V::ReduceAdd(V::Add(q0, q1));
}

template <class V>
inline void HotLayerNorm(size_t n, const float* x, float mean, float inv_std, const float* scale,
                         const float* bias, float* y) {
  using T = typename V::T;
  constexpr size_t w = V::kWidth;
  const T vm = V::Set(mean);
  const T vs = V::Set(inv_std);
  size_t i = 0;
  if (bias != nullptr) {
    for (; i + w <= n; i += w) {
      const T t = V::Mul(V::Sub(V::Load(x + i), vm), vs);
      V::Store(y + i, V::Fma(t, V::Load(scale + i), V::Load(bias + i)));
    }
    if (i < n) {
      const size_t r = n - i;
      const T t = V::Mul(V::Sub(V::LoadPartial(x + i, r), vm), vs);
      V::StorePartial(y + i, V::Fma(t, V::LoadPartial(scale + i, r), V::LoadPartial(bias + i, r)),
                      r);
    }
  } else {
    for (; i + w <= n; i += w) {
      const T t = V::Mul(V::Sub(V::Load(x + i), vm), vs);
      V::Store(y + i, V::Mul(t, V::Load(scale + i)));
    }
    if (i < n) {
      const size_t r = n - i;
      const T t = V::Mul(V::Sub(V::LoadPartial(x + i, r), vm), vs);
      V::StorePartial(y + i, V::Mul(t, V::LoadPartial(scale + i, r)), r);
    }
  }
}

}  // namespace
}  // namespace kiln::ukernels

// Defines every kernel of f32_hot.h for ISA suffix S with the vector traits V.
#define KILN_DEFINE_F32_HOT_UKERNELS(S, V)                                                         \
  void f32_vbinary_add__##S(size_t n, const float* a, const float* b, float* y) {                  \
    HotBinary<V, HotOps<V>::Add>(n, a, b, y);                                                      \
  }                                                                                                \
  void f32_vbinary_sub__##S(size_t n, const float* a, const float* b, float* y) {                  \
    HotBinary<V, HotOps<V>::Sub>(n, a, b, y);                                                      \
  }                                                                                                \
  void f32_vbinary_mul__##S(size_t n, const float* a, const float* b, float* y) {                  \
    HotBinary<V, HotOps<V>::Mul>(n, a, b, y);                                                      \
  }                                                                                                \
  void f32_vbinary_div__##S(size_t n, const float* a, const float* b, float* y) {                  \
    HotBinary<V, HotOps<V>::Div>(n, a, b, y);                                                      \
  }                                                                                                \
  void f32_vbinary_max__##S(size_t n, const float* a, const float* b, float* y) {                  \
    HotBinary<V, HotOps<V>::Max>(n, a, b, y);                                                      \
  }                                                                                                \
  void f32_vbinary_min__##S(size_t n, const float* a, const float* b, float* y) {                  \
    HotBinary<V, HotOps<V>::Min>(n, a, b, y);                                                      \
  }                                                                                                \
  void f32_vbinaryc_add__##S(size_t n, const float* a, const float* c, float* y) {                 \
    HotBinaryC<V, HotOps<V>::Add>(n, a, c, y);                                                     \
  }                                                                                                \
  void f32_vbinaryc_sub__##S(size_t n, const float* a, const float* c, float* y) {                 \
    HotBinaryC<V, HotOps<V>::Sub>(n, a, c, y);                                                     \
  }                                                                                                \
  void f32_vbinaryc_mul__##S(size_t n, const float* a, const float* c, float* y) {                 \
    HotBinaryC<V, HotOps<V>::Mul>(n, a, c, y);                                                     \
  }                                                                                                \
  void f32_vbinaryc_div__##S(size_t n, const float* a, const float* c, float* y) {                 \
    HotBinaryC<V, HotOps<V>::Div>(n, a, c, y);                                                     \
  }                                                                                                \
  void f32_vbinaryc_max__##S(size_t n, const float* a, const float* c, float* y) {                 \
    HotBinaryC<V, HotOps<V>::Max>(n, a, c, y);                                                     \
  }                                                                                                \
  void f32_vbinaryc_min__##S(size_t n, const float* a, const float* c, float* y) {                 \
    HotBinaryC<V, HotOps<V>::Min>(n, a, c, y);                                                     \
  }                                                                                                \
  void f32_vrbinaryc_sub__##S(size_t n, const float* a, const float* c, float* y) {                \
    HotRBinaryC<V, HotOps<V>::Sub>(n, a, c, y);                                                    \
  }                                                                                                \
  void f32_vrbinaryc_div__##S(size_t n, const float* a, const float* c, float* y) {                \
    HotRBinaryC<V, HotOps<V>::Div>(n, a, c, y);                                                    \
  }                                                                                                \
  void f32_vrelu__##S(size_t n, const float* x, float* y, const F32UnaryParams*) {                 \
    HotMap<V>(n, x, y, [](V::T v) { return V::Max(V::Set(0.0f), v); });                            \
  }                                                                                                \
  void f32_vclip__##S(size_t n, const float* x, float* y, const F32UnaryParams* p) {               \
    const V::T lo = V::Set(p->alpha), hi = V::Set(p->beta);                                        \
    HotMap<V>(n, x, y, [lo, hi](V::T v) { return V::Min(hi, V::Max(lo, v)); });                    \
  }                                                                                                \
  void f32_vsigmoid__##S(size_t n, const float* x, float* y, const F32UnaryParams*) {              \
    HotMap<V>(n, x, y, [](V::T v) { return HotSigmoid<V>(v); });                                   \
  }                                                                                                \
  void f32_vtanh__##S(size_t n, const float* x, float* y, const F32UnaryParams*) {                 \
    HotMap<V>(n, x, y, [](V::T v) { return HotTanh<V>(v); });                                      \
  }                                                                                                \
  void f32_vsilu__##S(size_t n, const float* x, float* y, const F32UnaryParams*) {                 \
    HotMap<V>(n, x, y, [](V::T v) { return HotSilu<V>(v); });                                      \
  }                                                                                                \
  void f32_vhswish__##S(size_t n, const float* x, float* y, const F32UnaryParams*) {               \
    HotMap<V>(n, x, y, [](V::T v) {                                                                \
      const V::T t = V::Fma(v, V::Set(1.0f / 6.0f), V::Set(0.5f));                                 \
      return V::Mul(v, V::Min(V::Set(1.0f), V::Max(V::Set(0.0f), t)));                             \
    });                                                                                            \
  }                                                                                                \
  void f32_vhsigmoid__##S(size_t n, const float* x, float* y, const F32UnaryParams* p) {           \
    const V::T a = V::Set(p->alpha), b = V::Set(p->beta);                                          \
    HotMap<V>(n, x, y, [a, b](V::T v) {                                                            \
      return V::Min(V::Set(1.0f), V::Max(V::Set(0.0f), V::Fma(v, a, b)));                          \
    });                                                                                            \
  }                                                                                                \
  void f32_vgelu__##S(size_t n, const float* x, float* y, const F32UnaryParams*) {                 \
    HotMap<V>(n, x, y, [](V::T v) { return HotGelu<V>(v); });                                      \
  }                                                                                                \
  void f32_vexp__##S(size_t n, const float* x, float* y, const F32UnaryParams*) {                  \
    HotMap<V>(n, x, y, [](V::T v) { return HotExp<V>(v); });                                       \
  }                                                                                                \
  void f32_vlrelu__##S(size_t n, const float* x, float* y, const F32UnaryParams* p) {              \
    const V::T a = V::Set(p->alpha);                                                               \
    HotMap<V>(n, x, y, [a](V::T v) { return V::IfNegative(v, V::Mul(v, a), v); });                 \
  }                                                                                                \
  void f32_maxpool2d__##S(const float* x, float* y, const F32Pool2dParams* p) {                   \
    HotPool2d<V, true>(x, y, p);                                                                   \
  }                                                                                                \
  void f32_avgpool2d__##S(const float* x, float* y, const F32Pool2dParams* p) {                    \
    HotPool2d<V, false>(x, y, p);                                                                  \
  }                                                                                                \
  float f32_gmaxpool__##S(size_t n, const float* x) { return HotReduce<V, true>(n, x); }           \
  float f32_gavgpool__##S(size_t n, const float* x) {                                              \
    return HotReduce<V, false>(n, x) / static_cast<float>(n);                                      \
  }                                                                                                \
  void f32_gavgpool_nchwc__##S(size_t hw, size_t c, const float* x, float* y) {                    \
    HotGAvgPoolNchwc<V>(hw, c, x, y);                                                              \
  }                                                                                                \
  void f32_vchannelscale_nchwc__##S(size_t hw, size_t c, const float* x, const float* s,           \
                                    float* y) {                                                    \
    HotChannelScaleNchwc<V>(hw, c, x, s, y);                                                       \
  }                                                                                                \
  float f32_rmax__##S(size_t n, const float* x) { return HotReduce<V, true>(n, x); }               \
  float f32_rsum__##S(size_t n, const float* x) { return HotReduce<V, false>(n, x); }              \
  float f32_raddexpminusmax__##S(size_t n, const float* x, float max) {                            \
    return HotAddExpMinusMax<V, false>(n, x, max, nullptr);                                        \
  }                                                                                                \
  float f32_raddstoreexpminusmax__##S(size_t n, const float* x, float max, float* y) {             \
    return HotAddExpMinusMax<V, true>(n, x, max, y);                                               \
  }                                                                                                \
  void f32_vscale__##S(size_t n, const float* x, float s, float* y) {                              \
    const V::T vs = V::Set(s);                                                                     \
    HotMap<V>(n, x, y, [vs](V::T v) { return V::Mul(v, vs); });                                    \
  }                                                                                                \
  void f32_rsumsqdiff__##S(size_t n, const float* x, float mean, float* sum_diff, float* sum_sq) { \
    HotSumSqDiff<V>(n, x, mean, sum_diff, sum_sq);                                                 \
  }                                                                                                \
  void f32_vlayernorm__##S(size_t n, const float* x, float mean, float inv_std,                    \
                           const float* scale, const float* bias, float* y) {                      \
    HotLayerNorm<V>(n, x, mean, inv_std, scale, bias, y);                                          \
  }
