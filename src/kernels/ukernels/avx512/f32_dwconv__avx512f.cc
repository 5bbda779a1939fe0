// Depthwise 3x3 and 5x5 row kernels, strides 1 and 2, for AVX-512F: 16 output columns per
// vector. Stride 2 loads 32 consecutive inputs and splits them into even and odd columns (one
// two-source permute each), so window columns 2j and 2j+1 share two loads.
// Register budget: 9 (3x3) or 25 (5x5) weight vectors + bias + 2 accumulators + loads, within
// the 32 zmm registers. Vectors whose window crosses either end of the row are computed from a
// small zeroed copy on the stack, so the kernel reads only the real input.
#include <immintrin.h>

#include "kernels/ukernels/f32_dwconv.h"

// GCC 12's _mm512_max_ps/_mm512_min_ps pass an _mm512_undefined_ps() source that -O3 reports as
// maybe uninitialized; the value is never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kiln::ukernels {
namespace {

constexpr int kV = 16;

inline __m512 Even(__m512 lo, __m512 hi) {
  const __m512i idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_permutex2var_ps(lo, idx, hi);
}
inline __m512 Odd(__m512 lo, __m512 hi) {
  const __m512i idx = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  return _mm512_permutex2var_ps(lo, idx, hi);
}

// Input columns one vector of outputs reads, from its first: S * V + K - 1 (stride 2 loads a
// pair of vectors at offsets up to K - 1).
template <int K, int S>
constexpr int Reach() {
  return S == 1 ? kV + K - 1 : 2 * kV + K - 1;
}

// 8 outputs whose windows start at r[ky][0], r[ky][S], ...
template <int K, int S>
inline __m512 Vector(const float* const* r, size_t ld, const __m512* wv, __m512 bias) {
  __m512 acc0 = bias, acc1 = _mm512_setzero_ps();
#pragma GCC unroll 5
  for (int ky = 0; ky < K; ++ky) {
    const float* x = r[ky] + ky * ld;
#pragma GCC unroll 5
    for (int kx = 0; kx < K; ++kx) {
      __m512 xv;
      if constexpr (S == 1) {
        xv = _mm512_loadu_ps(x + kx);
      } else {
        const __m512 lo = _mm512_loadu_ps(x + (kx & ~1)), hi = _mm512_loadu_ps(x + (kx & ~1) + 16);
        xv = (kx & 1) ? Odd(lo, hi) : Even(lo, hi);
      }
      if ((ky * K + kx) & 1) {
        acc1 = _mm512_fmadd_ps(wv[ky * K + kx], xv, acc1);
      } else {
        acc0 = _mm512_fmadd_ps(wv[ky * K + kx], xv, acc0);
      }
    }
  }
  return _mm512_add_ps(acc0, acc1);
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
  const __m512 vmin = _mm512_set1_ps(a->min), vmax = _mm512_set1_ps(a->max);
  const __m512 vb = _mm512_set1_ps(a->bias);
  if (!any_row) {
    const float v = a->bias < a->min ? a->min : (a->bias > a->max ? a->max : a->bias);
    for (size_t ox = 0; ox < out_w; ++ox) a->out[ox] = v;
    return;
  }
  __m512 wv[K * K];
  const float* rows[K];
  for (int ky = 0; ky < K; ++ky) {
    rows[ky] = a->rows[ky] ? a->rows[ky] : any_row;
    for (int kx = 0; kx < K; ++kx) {
      wv[ky * K + kx] = a->rows[ky] ? _mm512_set1_ps(a->w[ky * K + kx]) : _mm512_setzero_ps();
    }
  }
  constexpr int kReach = Reach<K, S>();
  size_t ox = 0;
  for (; ox < out_w; ox += kV) {
    const long base = static_cast<long>(ox) * S - pad;
    const float* r[K];
    if (base >= 0 && base + kReach <= in_w && ox + kV <= out_w) {
      for (int ky = 0; ky < K; ++ky) r[ky] = rows[ky] + base;
      __m512 v = Vector<K, S>(r, 0, wv, vb);
      _mm512_storeu_ps(a->out + ox, _mm512_min_ps(_mm512_max_ps(v, vmin), vmax));
      continue;
    }
    // An edge vector: its window rows copied, zero-padded, onto the stack.
    alignas(64) float buf[K][kReach + 1];
    for (int ky = 0; ky < K; ++ky) {
      for (int j = 0; j < kReach; ++j) {
        const long col = base + j;
        buf[ky][j] = col >= 0 && col < in_w ? rows[ky][col] : 0.0f;
      }
      r[ky] = buf[0];
    }
    alignas(64) float res[kV];
    __m512 v = Vector<K, S>(r, kReach + 1, wv, vb);
    _mm512_store_ps(res, _mm512_min_ps(_mm512_max_ps(v, vmin), vmax));
    const size_t n = out_w - ox < static_cast<size_t>(kV) ? out_w - ox : kV;
    for (size_t i = 0; i < n; ++i) a->out[ox + i] = res[i];
  }
}

}  // namespace

void f32_dwconv3x3_s1__avx512f(const F32DwConvRow* a) { Row<3, 1>(a); }
void f32_dwconv3x3_s2__avx512f(const F32DwConvRow* a) { Row<3, 2>(a); }
void f32_dwconv5x5_s1__avx512f(const F32DwConvRow* a) { Row<5, 1>(a); }
void f32_dwconv5x5_s2__avx512f(const F32DwConvRow* a) { Row<5, 2>(a); }

}  // namespace kiln::ukernels

// NCHWc rows (AVX-512F, 16 channels per vector): each output pixel is a vector of channels, so every window tap is one
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
  const __m512 vmin = _mm512_set1_ps(a->min), vmax = _mm512_set1_ps(a->max);
  for (size_t g = 0; g < cb; g += 16) {
    const float* w = a->w + g;
    const __m512 vb = _mm512_loadu_ps(a->bias + g);
    auto edge = [&](size_t ox) {
      __m512 acc = vb;
      const long base = static_cast<long>(ox * s) - static_cast<long>(pl);
      for (size_t ky = 0; ky < kh; ++ky) {
        if (!a->rows[ky]) continue;
        for (size_t kx = 0; kx < kw; ++kx) {
          const long col = base + static_cast<long>(kx);
          if (col < 0 || col >= static_cast<long>(in_w)) continue;
          acc = _mm512_fmadd_ps(_mm512_loadu_ps(w + (ky * kw + kx) * cb),
                                _mm512_loadu_ps(a->rows[ky] + col * cb + g), acc);
        }
      }
      _mm512_storeu_ps(a->out + ox * cb + g, _mm512_min_ps(_mm512_max_ps(acc, vmin), vmax));
    };
    for (size_t ox = 0; ox < lo; ++ox) edge(ox);
    size_t ox = lo;
    for (; ox + 4 <= hi; ox += 4) {
      __m512 acc0 = vb, acc1 = vb, acc2 = vb, acc3 = vb;
      for (size_t ky = 0; ky < kh; ++ky) {
        if (!a->rows[ky]) continue;
        const float* x = a->rows[ky] + (ox * s - pl) * cb + g;
        const float* wk = w + ky * kw * cb;
        for (size_t kx = 0; kx < kw; ++kx) {
          const __m512 wv = _mm512_loadu_ps(wk + kx * cb);
          acc0 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + kx * cb), acc0);
          acc1 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + (s + kx) * cb), acc1);
          acc2 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + (2 * s + kx) * cb), acc2);
          acc3 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + (3 * s + kx) * cb), acc3);
        }
      }
      float* o = a->out + ox * cb + g;
      _mm512_storeu_ps(o, _mm512_min_ps(_mm512_max_ps(acc0, vmin), vmax));
      _mm512_storeu_ps(o + cb, _mm512_min_ps(_mm512_max_ps(acc1, vmin), vmax));
      _mm512_storeu_ps(o + 2 * cb, _mm512_min_ps(_mm512_max_ps(acc2, vmin), vmax));
      _mm512_storeu_ps(o + 3 * cb, _mm512_min_ps(_mm512_max_ps(acc3, vmin), vmax));
    }
    for (; ox < out_w; ++ox) edge(ox);
  }
}

}  // namespace

void f32_dwconv_nchwc16__avx512f(const F32DwConvRowC* a) {
  if (a->kh == 3 && a->kw == 3) return RowC<3>(a);
  if (a->kh == 5 && a->kw == 5) return RowC<5>(a);
  RowC<0>(a);
}

}  // namespace kiln::ukernels
