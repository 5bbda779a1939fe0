// Depthwise 3x3 and 5x5 row kernels, strides 1 and 2, for AVX2 + FMA: 8 output columns per
// vector (the body is f32_dwconv_row_impl.h). Stride 2 splits 16 consecutive inputs into even
// and odd columns with one shuffle + one lane permute each. Register budget, 3x3: 9 weight
// vectors + bias + 2 accumulators + loads = 15 of 16 (5x5 keeps its 25 weights in memory as FMA
// operands). Edge vectors load under lane masks.
#include <immintrin.h>

#include <cstddef>

#include "kernels/ukernels/f32_dwconv.h"

namespace kiln::ukernels {
namespace {

struct D {
  using T = __m256;
  using M = __m256i;  // the sign bits maskload reads
  static constexpr int kV = 8;
  static T Load(const float* p) { return _mm256_loadu_ps(p); }
  static T LoadMasked(M m, const float* p) { return _mm256_maskload_ps(p, m); }
  static M Lanes(long lo, long hi) {
    const __m256i j = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i ge = _mm256_cmpgt_epi32(j, _mm256_set1_epi32(static_cast<int>(lo) - 1));
    const __m256i lt = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(hi)), j);
    return _mm256_and_si256(ge, lt);
  }
  static void Store(float* p, T v) { _mm256_storeu_ps(p, v); }
  // Lane by lane: a masked store (vmaskmovps) is microcoded and slow on AMD cores.
  static void StoreFirst(float* p, size_t n, T v) {
    alignas(32) float res[kV];
    _mm256_store_ps(res, v);
    for (size_t i = 0; i < n; ++i) p[i] = res[i];
  }
  static T Set(float x) { return _mm256_set1_ps(x); }
  static T Zero() { return _mm256_setzero_ps(); }
  static T Add(T a, T b) { return _mm256_add_ps(a, b); }
  static T Fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T Max(T a, T b) { return _mm256_max_ps(a, b); }
  static T Min(T a, T b) { return _mm256_min_ps(a, b); }
  static T Even(T lo, T hi) {
    const __m256 t = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
  }
  static T Odd(T lo, T hi) {
    const __m256 t = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
  }
};

}  // namespace
}  // namespace kiln::ukernels

#include "kernels/ukernels/f32_dwconv_row_impl.h"

namespace kiln::ukernels {

void f32_dwconv3x3_s1__avx2_fma(const F32DwConvRow* a) { DwRows<D, 3, 1>(a); }
void f32_dwconv3x3_s2__avx2_fma(const F32DwConvRow* a) { DwRows<D, 3, 2>(a); }
void f32_dwconv5x5_s1__avx2_fma(const F32DwConvRow* a) { DwRows<D, 5, 1>(a); }
void f32_dwconv5x5_s2__avx2_fma(const F32DwConvRow* a) { DwRows<D, 5, 2>(a); }

}  // namespace kiln::ukernels
