// AVX-512 (F, DQ) f32 hot microkernels: the bodies of f32_hot_impl.h over __m512 (16 lanes).
// Tails use mask registers; 2^n uses vscalefps, which handles every exponent range itself.
#include <immintrin.h>

#include "kernels/ukernels/f32_hot.h"

namespace kiln::ukernels {
namespace {

struct V {
  using T = __m512;
  static constexpr size_t kWidth = 16;
  static T Load(const float* p) { return _mm512_loadu_ps(p); }
  static void Store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static __mmask16 Mask(size_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static T LoadPartial(const float* p, size_t n) { return _mm512_maskz_loadu_ps(Mask(n), p); }
  static T LoadPartialOr(const float* p, size_t n, float fill) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), Mask(n), p);
  }
  static void StorePartial(float* p, T v, size_t n) { _mm512_mask_storeu_ps(p, Mask(n), v); }
  // Lanes [first, first + n) of v to p[0, n).
  static void StoreLanes(float* p, T v, size_t first, size_t n) {
    const __m512i idx = _mm512_add_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32(static_cast<int>(first)));
    _mm512_mask_storeu_ps(p, Mask(n), _mm512_maskz_permutexvar_ps(kAll, idx, v));
  }
  // Several intrinsics below use their maskz forms with an all-ones mask (kAll): GCC 12's plain
  // forms pass an _mm512_undefined_ps() that -Wmaybe-uninitialized reports, and the all-ones
  // mask compiles to the same instruction.
  static constexpr __mmask16 kAll = 0xFFFF;
  static T Set(float v) { return _mm512_set1_ps(v); }
  static T Add(T a, T b) { return _mm512_add_ps(a, b); }
  static T Sub(T a, T b) { return _mm512_sub_ps(a, b); }
  static T Mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static T Div(T a, T b) { return _mm512_div_ps(a, b); }
  static T Max(T a, T b) { return _mm512_maskz_max_ps(kAll, a, b); }
  static T Min(T a, T b) { return _mm512_maskz_min_ps(kAll, a, b); }
  static T MaxNan(T a, T b) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), Max(a, b), a);
  }
  static T MinNan(T a, T b) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), Min(a, b), a);
  }
  static T Fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  // The depthwise rows take AVX2's third window row from memory (f32_dwconv_nchwc_impl.h,
  // kMemRow); with 32 registers this level never does, but the name must exist for the template.
  static T FmaMem(const float* w, T b, T c) { return _mm512_fmadd_ps(_mm512_loadu_ps(w), b, c); }
  static T Fnma(T a, T b, T c) { return _mm512_fnmadd_ps(a, b, c); }
  static T Abs(T x) { return _mm512_abs_ps(x); }
  static T CopySign(T mag, T sign) {
    const T m = _mm512_set1_ps(-0.0f);
    return _mm512_or_ps(_mm512_andnot_ps(m, mag), _mm512_and_ps(m, sign));
  }
  static T Round(T x) {
    return _mm512_maskz_roundscale_ps(kAll, x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static T ScalePow2(T p, T n) { return _mm512_maskz_scalef_ps(kAll, p, n); }
  static T IfNegative(T x, T a, T b) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), b, a);
  }
  static float ReduceAdd(T v) {
    const __m256 h = _mm256_add_ps(_mm512_maskz_extractf32x8_ps(0xFF, v, 0),
                                   _mm512_maskz_extractf32x8_ps(0xFF, v, 1));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float ReduceMax(T v) {
    const __m256 h = _mm256_max_ps(_mm512_maskz_extractf32x8_ps(0xFF, v, 0),
                                   _mm512_maskz_extractf32x8_ps(0xFF, v, 1));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static T TableBits(T k, const int32_t* t) {
    const __m512i b = _mm512_castps_si512(k);
    const __m512i v = _mm512_maskz_permutexvar_epi32(kAll, b, _mm512_loadu_si512(t));  // b & 15
    return _mm512_castsi512_ps(_mm512_add_epi32(v, _mm512_maskz_slli_epi32(kAll, b, 19)));
  }
  static T LoadEvens(const float* p) { return Evens(_mm512_loadu_ps(p), _mm512_loadu_ps(p + 16)); }
  static T Evens(T a, T b) {
    const __m512i idx =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(a, idx, b);
  }
  static T Odds(T a, T b) {  // the odd lanes of a, b (f32_gconv_impl.h)
    const __m512i idx =
        _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    return _mm512_permutex2var_ps(a, idx, b);
  }
};

// The NCHW depthwise row kernels (f32_dwconv_row_impl.h): 16 output columns per vector; stride
// 2 splits 32 consecutive inputs with Evens/Odds (one two-source permute each). Register budget:
// 9 (3x3) or 25 (5x5) weight vectors + bias + 2 accumulators + loads, within the 32 zmm
// registers. Edge vectors load and store under lane masks.
struct DwRow : V {
  using M = __mmask16;
  static constexpr int kV = static_cast<int>(kWidth);
  static T LoadMasked(M m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  static M Lanes(long lo, long hi) { return static_cast<M>((1u << hi) - (1u << lo)); }
  static void StoreFirst(float* p, size_t n, T v) { StorePartial(p, v, n); }
};

}  // namespace
}  // namespace kiln::ukernels

#include "kernels/ukernels/f32_dwconv_nchwc_impl.h"
#include "kernels/ukernels/f32_dwconv_row_impl.h"
#include "kernels/ukernels/f32_gconv_impl.h"
#include "kernels/ukernels/f32_gemv_panel_impl.h"
#include "kernels/ukernels/f32_hot_impl.h"

namespace kiln::ukernels {
KILN_DEFINE_F32_HOT_UKERNELS(avx512, V)
KILN_DEFINE_F32_GEMV_PANEL_UKERNEL(avx512, V)
KILN_DEFINE_F32_GCONV_UKERNEL(avx512f, V, 2)
KILN_DEFINE_F32_DWCONV_NCHWC_UKERNEL(f32_dwconv_nchwc16__avx512f, V)
void f32_dwconv3x3_s1__avx512f(const F32DwConvRow* a) { DwRows<DwRow, 3, 1>(a); }
void f32_dwconv3x3_s2__avx512f(const F32DwConvRow* a) { DwRows<DwRow, 3, 2>(a); }
void f32_dwconv5x5_s1__avx512f(const F32DwConvRow* a) { DwRows<DwRow, 5, 1>(a); }
void f32_dwconv5x5_s2__avx512f(const F32DwConvRow* a) { DwRows<DwRow, 5, 2>(a); }
}  // namespace kiln::ukernels
