// Depthwise 3x3 and 5x5 row kernels, strides 1 and 2, for AVX-512F: 16 output columns per
// vector (the body is f32_dwconv_row_impl.h). Stride 2 splits 32 consecutive inputs into even
// and odd columns with one two-source permute each. Register budget: 9 (3x3) or 25 (5x5) weight
// vectors + bias + 2 accumulators + loads, within the 32 zmm registers. Edge vectors load and
// store under lane masks.
#include <immintrin.h>

#include <cstddef>

#include "kernels/ukernels/f32_dwconv.h"

// GCC 12's _mm512_max_ps/_mm512_min_ps pass an _mm512_undefined_ps() source that -O3 reports as
// maybe uninitialized; the value is never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kiln::ukernels {
namespace {

struct D {
  using T = __m512;
  using M = __mmask16;
  static constexpr int kV = 16;
  static T Load(const float* p) { return _mm512_loadu_ps(p); }
  static T LoadMasked(M m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  static M Lanes(long lo, long hi) { return static_cast<M>((1u << hi) - (1u << lo)); }
  static void Store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static void StoreFirst(float* p, size_t n, T v) {
    _mm512_mask_storeu_ps(p, static_cast<M>((1u << n) - 1), v);
  }
  static T Set(float x) { return _mm512_set1_ps(x); }
  static T Zero() { return _mm512_setzero_ps(); }
  static T Add(T a, T b) { return _mm512_add_ps(a, b); }
  static T Fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T Max(T a, T b) { return _mm512_max_ps(a, b); }
  static T Min(T a, T b) { return _mm512_min_ps(a, b); }
  static T Even(T lo, T hi) {
    const __m512i idx =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(lo, idx, hi);
  }
  static T Odd(T lo, T hi) {
    const __m512i idx =
        _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    return _mm512_permutex2var_ps(lo, idx, hi);
  }
};

}  // namespace
}  // namespace kiln::ukernels

#include "kernels/ukernels/f32_dwconv_row_impl.h"

namespace kiln::ukernels {

void f32_dwconv3x3_s1__avx512f(const F32DwConvRow* a) { DwRows<D, 3, 1>(a); }
void f32_dwconv3x3_s2__avx512f(const F32DwConvRow* a) { DwRows<D, 3, 2>(a); }
void f32_dwconv5x5_s1__avx512f(const F32DwConvRow* a) { DwRows<D, 5, 1>(a); }
void f32_dwconv5x5_s2__avx512f(const F32DwConvRow* a) { DwRows<D, 5, 2>(a); }

}  // namespace kiln::ukernels
