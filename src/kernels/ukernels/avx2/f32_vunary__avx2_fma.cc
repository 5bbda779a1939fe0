// AVX2 activations applied by the GEMM driver on each finished tile (SiLU, HardSwish, GELU).
// exp: Cody-Waite reduction by ln 2 and a degree-5 polynomial on [-ln2/2, ln2/2], rel. error
// about 2 ulp. erf: Abramowitz & Stegun 7.1.26 (abs. error 1.5e-7), evaluated as 1 +- erfc so
// that GELU keeps its relative accuracy for negative inputs.
#include <immintrin.h>

#include "kernels/ukernels/f32_gemm.h"

namespace kiln::ukernels {
namespace {

inline __m256 Exp(__m256 x) {
  x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.0f)),
                    _mm256_set1_ps(-87.3365478515625f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // 2^n built in the exponent field; n is in [-126, 127] after the clamp above.
  const __m256i e = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

inline __m256 Silu(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(x, _mm256_add_ps(one, Exp(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

inline __m256 Hswish(__m256 x) {
  __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.0f / 6.0f), _mm256_set1_ps(0.5f));
  t = _mm256_min_ps(_mm256_max_ps(t, _mm256_setzero_ps()), _mm256_set1_ps(1.0f));
  return _mm256_mul_ps(x, t);
}

inline __m256 Gelu(__m256 x) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  const __m256 z = _mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f));
  const __m256 az = _mm256_andnot_ps(sign_mask, z);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(az, _mm256_set1_ps(0.3275911f), one));
  __m256 p = _mm256_set1_ps(1.061405429f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
  p = _mm256_mul_ps(p, t);
  // q = erfc(|z|); 1 + erf(z) is q for z < 0 and 2 - q otherwise.
  const __m256 q = _mm256_mul_ps(p, Exp(_mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), az), az)));
  const __m256 neg = _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_LT_OQ);
  const __m256 s = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.0f), q), q, neg);
  return _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.5f)), s);
}

template <__m256 (*F)(__m256)>
inline void Apply(size_t n, const float* x, float* y) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, F(_mm256_loadu_ps(x + i)));
  if (i < n) {
    // The tail goes through a local vector so that nothing past x[n) or y[n) is touched.
    alignas(32) float buf[8] = {};
    for (size_t j = i; j < n; ++j) buf[j - i] = x[j];
    _mm256_store_ps(buf, F(_mm256_load_ps(buf)));
    for (size_t j = i; j < n; ++j) y[j] = buf[j - i];
  }
}

}  // namespace

void f32_vsilu__avx2_fma(size_t n, const float* x, float* y) { Apply<Silu>(n, x, y); }
void f32_vhswish__avx2_fma(size_t n, const float* x, float* y) { Apply<Hswish>(n, x, y); }
void f32_vgelu__avx2_fma(size_t n, const float* x, float* y) { Apply<Gelu>(n, x, y); }

}  // namespace kiln::ukernels
