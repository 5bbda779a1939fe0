// Depthwise 3x3 and 5x5 row kernels, strides 1 and 2, for AVX2 + FMA: 8 output columns per
// vector. Stride 2 loads 16 consecutive inputs and splits them into even and odd columns (one
// shuffle + one lane permute each), so window columns 2j and 2j+1 share two loads.
// Register budget, 3x3: 9 weight vectors + bias + 2 accumulators + loads = 15 of 16 (5x5 keeps
// its 25 weights in memory as FMA operands). Vectors whose window crosses either end of the row
// are computed from a small zeroed copy on the stack, so the kernel reads only the real input.
#include <immintrin.h>

#include "kernels/ukernels/f32_dwconv.h"

namespace kiln::ukernels {
namespace {

constexpr int kV = 8;

inline __m256 Even(__m256 lo, __m256 hi) {
  const __m256 t = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
}
inline __m256 Odd(__m256 lo, __m256 hi) {
  const __m256 t = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
}

// Input columns one vector of outputs reads, from its first: S * V + K - 1 (stride 2 loads a
// pair of vectors at offsets up to K - 1).
template <int K, int S>
constexpr int Reach() {
  return S == 1 ? kV + K - 1 : 2 * kV + K - 1;
}

// 8 outputs whose windows start at r[ky][0], r[ky][S], ...
template <int K, int S>
inline __m256 Vector(const float* const* r, size_t ld, const __m256* wv, __m256 bias) {
  __m256 acc0 = bias, acc1 = _mm256_setzero_ps();
#pragma GCC unroll 5
  for (int ky = 0; ky < K; ++ky) {
    const float* x = r[ky] + ky * ld;
#pragma GCC unroll 5
    for (int kx = 0; kx < K; ++kx) {
      __m256 xv;
      if constexpr (S == 1) {
        xv = _mm256_loadu_ps(x + kx);
      } else {
        const __m256 lo = _mm256_loadu_ps(x + (kx & ~1)), hi = _mm256_loadu_ps(x + (kx & ~1) + 8);
        xv = (kx & 1) ? Odd(lo, hi) : Even(lo, hi);
      }
      if ((ky * K + kx) & 1) {
        acc1 = _mm256_fmadd_ps(wv[ky * K + kx], xv, acc1);
      } else {
        acc0 = _mm256_fmadd_ps(wv[ky * K + kx], xv, acc0);
      }
    }
  }
  return _mm256_add_ps(acc0, acc1);
}

template <int K, int S>
void Row(const F32DwConvRow* a) {
  const long in_w = static_cast<long>(a->in_w), pad = static_cast<long>(a->pad_left);
  const size_t out_w = a->out_w;
  // Padding rows: any real row with zero weights, so the fast path needs no branches.
  const float* any_row = nullptr;
  for (int ky = 0; ky < K; ++ky) {
    if (a->rows[ky]) any_row = a->rows[ky];
  }
  const __m256 vmin = _mm256_set1_ps(a->min), vmax = _mm256_set1_ps(a->max);
  const __m256 vb = _mm256_set1_ps(a->bias);
  if (!any_row) {
    const float v = a->bias < a->min ? a->min : (a->bias > a->max ? a->max : a->bias);
    for (size_t ox = 0; ox < out_w; ++ox) a->out[ox] = v;
    return;
  }
  __m256 wv[K * K];
  const float* rows[K];
  for (int ky = 0; ky < K; ++ky) {
    rows[ky] = a->rows[ky] ? a->rows[ky] : any_row;
    for (int kx = 0; kx < K; ++kx) {
      wv[ky * K + kx] = a->rows[ky] ? _mm256_set1_ps(a->w[ky * K + kx]) : _mm256_setzero_ps();
    }
  }
  constexpr int kReach = Reach<K, S>();
  size_t ox = 0;
  for (; ox < out_w; ox += kV) {
    const long base = static_cast<long>(ox) * S - pad;
    const float* r[K];
    if (base >= 0 && base + kReach <= in_w && ox + kV <= out_w) {
      for (int ky = 0; ky < K; ++ky) r[ky] = rows[ky] + base;
      __m256 v = Vector<K, S>(r, 0, wv, vb);
      _mm256_storeu_ps(a->out + ox, _mm256_min_ps(_mm256_max_ps(v, vmin), vmax));
      continue;
    }
    // An edge vector: its window rows copied, zero-padded, onto the stack.
    alignas(32) float buf[K][kReach + 1];
    for (int ky = 0; ky < K; ++ky) {
      for (int j = 0; j < kReach; ++j) {
        const long col = base + j;
        buf[ky][j] = col >= 0 && col < in_w ? rows[ky][col] : 0.0f;
      }
      r[ky] = buf[0];
    }
    alignas(32) float res[kV];
    __m256 v = Vector<K, S>(r, kReach + 1, wv, vb);
    _mm256_store_ps(res, _mm256_min_ps(_mm256_max_ps(v, vmin), vmax));
    const size_t n = out_w - ox < static_cast<size_t>(kV) ? out_w - ox : kV;
    for (size_t i = 0; i < n; ++i) a->out[ox + i] = res[i];
  }
}

}  // namespace

void f32_dwconv3x3_s1__avx2_fma(const F32DwConvRow* a) { Row<3, 1>(a); }
void f32_dwconv3x3_s2__avx2_fma(const F32DwConvRow* a) { Row<3, 2>(a); }
void f32_dwconv5x5_s1__avx2_fma(const F32DwConvRow* a) { Row<5, 1>(a); }
void f32_dwconv5x5_s2__avx2_fma(const F32DwConvRow* a) { Row<5, 2>(a); }

}  // namespace kiln::ukernels

// NCHWc rows (AVX2 + FMA, 8 channels per vector): each output pixel is a vector of channels, so every window tap is one
// aligned-width load and one FMA; four pixels run together for independent FMA chains, and only
// pixels whose window crosses a row end test their taps.
namespace kiln::ukernels {
namespace {

template <int K>
void RowC(const F32DwConvRowC* a) {
  const size_t kh = K ? K : a->kh, kw = K ? K : a->kw, cb = a->cb, s = a->stride;
  const size_t in_w = a->in_w, out_w = a->out_w, pl = a->pad_left;
  // Pixels [lo, hi) read only real columns.
  size_t lo = (pl + s - 1) / s;
  size_t hi = in_w + pl >= kw ? (in_w + pl - kw) / s + 1 : 0;
  if (hi > out_w) hi = out_w;
  if (lo > hi) lo = hi;
  const __m256 vmin = _mm256_set1_ps(a->min), vmax = _mm256_set1_ps(a->max);
  for (size_t g = 0; g < cb; g += 8) {
    const float* w = a->w + g;
    const __m256 vb = _mm256_loadu_ps(a->bias + g);
    auto edge = [&](size_t ox) {
      __m256 acc = vb;
      const long base = static_cast<long>(ox * s) - static_cast<long>(pl);
      for (size_t ky = 0; ky < kh; ++ky) {
        if (!a->rows[ky]) continue;
        for (size_t kx = 0; kx < kw; ++kx) {
          const long col = base + static_cast<long>(kx);
          if (col < 0 || col >= static_cast<long>(in_w)) continue;
          acc = _mm256_fmadd_ps(_mm256_loadu_ps(w + (ky * kw + kx) * cb),
                                _mm256_loadu_ps(a->rows[ky] + col * cb + g), acc);
        }
      }
      _mm256_storeu_ps(a->out + ox * cb + g, _mm256_min_ps(_mm256_max_ps(acc, vmin), vmax));
    };
    for (size_t ox = 0; ox < lo; ++ox) edge(ox);
    size_t ox = lo;
    for (; ox + 4 <= hi; ox += 4) {
      __m256 acc0 = vb, acc1 = vb, acc2 = vb, acc3 = vb;
      for (size_t ky = 0; ky < kh; ++ky) {
        if (!a->rows[ky]) continue;
        const float* x = a->rows[ky] + (ox * s - pl) * cb + g;
        const float* wk = w + ky * kw * cb;
        for (size_t kx = 0; kx < kw; ++kx) {
          const __m256 wv = _mm256_loadu_ps(wk + kx * cb);
          acc0 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + kx * cb), acc0);
          acc1 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + (s + kx) * cb), acc1);
          acc2 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + (2 * s + kx) * cb), acc2);
          acc3 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + (3 * s + kx) * cb), acc3);
        }
      }
      float* o = a->out + ox * cb + g;
      _mm256_storeu_ps(o, _mm256_min_ps(_mm256_max_ps(acc0, vmin), vmax));
      _mm256_storeu_ps(o + cb, _mm256_min_ps(_mm256_max_ps(acc1, vmin), vmax));
      _mm256_storeu_ps(o + 2 * cb, _mm256_min_ps(_mm256_max_ps(acc2, vmin), vmax));
      _mm256_storeu_ps(o + 3 * cb, _mm256_min_ps(_mm256_max_ps(acc3, vmin), vmax));
    }
    for (; ox < out_w; ++ox) edge(ox);
  }
}

}  // namespace

void f32_dwconv_nchwc8__avx2_fma(const F32DwConvRowC* a) {
  if (a->kh == 3 && a->kw == 3) return RowC<3>(a);
  if (a->kh == 5 && a->kw == 5) return RowC<5>(a);
  RowC<0>(a);
}

}  // namespace kiln::ukernels
