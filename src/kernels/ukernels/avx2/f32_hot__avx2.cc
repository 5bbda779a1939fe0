// AVX2 + FMA f32 hot microkernels: the bodies of f32_hot_impl.h over __m256 (8 lanes). Tails
// use maskload/maskstore, so nothing past the n elements is touched.
#include <immintrin.h>

#include "kernels/ukernels/f32_hot.h"

namespace kiln::ukernels {
namespace {

struct V {
  using T = __m256;
  static constexpr size_t kWidth = 8;
  static T Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static __m256i Mask(size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static T LoadPartial(const float* p, size_t n) { return _mm256_maskload_ps(p, Mask(n)); }
  static T LoadPartialOr(const float* p, size_t n, float fill) {
    const __m256i m = Mask(n);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
  static void StorePartial(float* p, T v, size_t n) { _mm256_maskstore_ps(p, Mask(n), v); }
  static T Set(float v) { return _mm256_set1_ps(v); }
  static T Add(T a, T b) { return _mm256_add_ps(a, b); }
  static T Sub(T a, T b) { return _mm256_sub_ps(a, b); }
  static T Mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T Div(T a, T b) { return _mm256_div_ps(a, b); }
  static T Max(T a, T b) { return _mm256_max_ps(a, b); }
  static T Min(T a, T b) { return _mm256_min_ps(a, b); }
  static T MaxNan(T a, T b) {
    return _mm256_blendv_ps(_mm256_max_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
  static T MinNan(T a, T b) {
    return _mm256_blendv_ps(_mm256_min_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
  static T Fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  // c + w[0..8) * b with w read inside the FMA (a memory operand, never a register): the
  // depthwise rows' third window row (f32_dwconv_nchwc_impl.h, kMemRow).
  static T FmaMem(const float* w, T b, T c) {
    asm("vfmadd231ps %[w], %[b], %[c]"
        : [c] "+x"(c)
        : [b] "x"(b), [w] "m"(*reinterpret_cast<const T*>(w)));
    return c;
  }
  static T Fnma(T a, T b, T c) { return _mm256_fnmadd_ps(a, b, c); }
  static T Abs(T x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
  static T CopySign(T mag, T sign) {
    const T m = _mm256_set1_ps(-0.0f);
    return _mm256_or_ps(_mm256_andnot_ps(m, mag), _mm256_and_ps(m, sign));
  }
  static T Round(T x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // p * 2^n1 * 2^n2 with n1 = n >> 1: both factors stay normal for n in [-150, 128].
  static T ScalePow2(T p, T n) {
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    const __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const T s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const T s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    // A NaN n converts to INT_MIN; p is NaN then too (the caller's input was NaN).
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  }
  static T IfNegative(T x, T a, T b) {
    return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
  }
  static float ReduceAdd(T v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float ReduceMax(T v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // Two 8-entry permutes (low 3 bits), blended on bit 3 (shifted into the sign).
  static T TableBits(T k, const int32_t* t) {
    const __m256i b = _mm256_castps_si256(k);
    const __m256i lo = _mm256_permutevar8x32_epi32(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t)), b);
    const __m256i hi = _mm256_permutevar8x32_epi32(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t + 8)), b);
    const __m256 v = _mm256_blendv_ps(_mm256_castsi256_ps(lo), _mm256_castsi256_ps(hi),
                                      _mm256_castsi256_ps(_mm256_slli_epi32(b, 28)));
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(v), _mm256_slli_epi32(b, 19)));
  }
  // p[0], p[2], ..., p[14]: shuffle picks the evens per 128-bit lane, permute orders the halves.
  static T LoadEvens(const float* p) { return Evens(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)); }
  static T Evens(T a, T b) {
    const T e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
  }
  static T Odds(T a, T b) {  // p[1], p[3], ..., p[15] (f32_gconv_impl.h)
    const T o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
  }
};

// The NCHW depthwise row kernels (f32_dwconv_row_impl.h): 8 output columns per vector; stride
// 2 splits 16 consecutive inputs with Evens/Odds (one shuffle + one lane permute each). Register
// budget, 3x3: 9 weight vectors + bias + 2 accumulators + loads = 15 of 16 (5x5 keeps its 25
// weights in memory as FMA operands). Edge vectors load under arbitrary lane ranges.
struct DwRow : V {
  using M = __m256i;  // the sign bits maskload reads
  static constexpr int kV = static_cast<int>(kWidth);
  static T LoadMasked(M m, const float* p) { return _mm256_maskload_ps(p, m); }
  static M Lanes(long lo, long hi) {
    const __m256i j = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i ge = _mm256_cmpgt_epi32(j, _mm256_set1_epi32(static_cast<int>(lo) - 1));
    const __m256i lt = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(hi)), j);
    return _mm256_and_si256(ge, lt);
  }
  // Lane by lane: a masked store (vmaskmovps) is microcoded and slow on AMD cores.
  static void StoreFirst(float* p, size_t n, T v) {
    alignas(32) float res[kV];
    _mm256_store_ps(res, v);
    for (size_t i = 0; i < n; ++i) p[i] = res[i];
  }
};

}  // namespace
}  // namespace kiln::ukernels

#include "kernels/ukernels/f32_dwconv_nchwc_impl.h"
#include "kernels/ukernels/f32_dwconv_row_impl.h"
#include "kernels/ukernels/f32_gconv_impl.h"
#include "kernels/ukernels/f32_gemv_panel_impl.h"
#include "kernels/ukernels/f32_hot_impl.h"

namespace kiln::ukernels {
KILN_DEFINE_F32_HOT_UKERNELS(avx2, V)
KILN_DEFINE_F32_GEMV_PANEL_UKERNEL(avx2, V)
KILN_DEFINE_F32_GCONV_UKERNEL(avx2_fma, V, 1)
KILN_DEFINE_F32_DWCONV_NCHWC_UKERNEL(f32_dwconv_nchwc8__avx2_fma, V)
void f32_dwconv3x3_s1__avx2_fma(const F32DwConvRow* a) { DwRows<DwRow, 3, 1>(a); }
void f32_dwconv3x3_s2__avx2_fma(const F32DwConvRow* a) { DwRows<DwRow, 3, 2>(a); }
void f32_dwconv5x5_s1__avx2_fma(const F32DwConvRow* a) { DwRows<DwRow, 5, 1>(a); }
void f32_dwconv5x5_s2__avx2_fma(const F32DwConvRow* a) { DwRows<DwRow, 5, 2>(a); }
}  // namespace kiln::ukernels
