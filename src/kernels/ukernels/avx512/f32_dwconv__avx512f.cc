// Depthwise 3x3 and 5x5 row kernels, strides 1 and 2, for AVX-512F: 16 output columns per
// vector. Stride 2 loads 32 consecutive inputs and splits them into even and odd columns (one
// two-source permute each), so window columns 2j and 2j+1 share two loads.
// Register budget: 9 (3x3) or 25 (5x5) weight vectors + bias + 2 accumulators + loads, within
// the 32 zmm registers. Vectors whose window crosses either end of the row use masked loads and
// stores, so the kernel reads and writes only the real row.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

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

// Lanes j of a 16-wide load at input column `start` that fall inside [0, in_w); branch-free.
inline __mmask16 LaneMask(long start, long in_w) {
  const long lo = std::min<long>(std::max<long>(-start, 0), kV);
  const long hi = std::max<long>(std::min<long>(in_w - start, kV), lo);
  return static_cast<__mmask16>((1u << hi) - (1u << lo));
}

// Row pointer plus a column that may lie outside the row: formed as an integer, so that no
// out-of-range pointer exists in C++ terms; only masked loads read through it, and those do not
// touch (or fault on) the masked lanes.
inline const float* At(const float* row, long col) {
  return reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(row) +
                                        static_cast<uintptr_t>(col) * sizeof(float));
}

// 16 outputs whose windows start at column `base` of each row (base + S * j for lane j). kMasked:
// the window may cross either end of the row, and every load is masked to [0, in_w).
template <int K, int S, bool kMasked>
inline __m512 Vector(const float* const* rows, long base, long in_w, const __m512* wv,
                     __m512 bias) {
  __m512 acc0 = bias, acc1 = _mm512_setzero_ps();
  // The masks of the loads at offsets 0 .. K - 1 (and 16 more for stride 2), the same in every
  // window row: computed once here, not per tap.
  __mmask16 m[K + 1], mh[K + 1];
  if constexpr (kMasked) {
    for (int o = 0; o < K; ++o) {
      m[o] = LaneMask(base + o, in_w);
      if constexpr (S == 2) mh[o] = LaneMask(base + o + kV, in_w);
    }
  }
#pragma GCC unroll 5
  for (int ky = 0; ky < K; ++ky) {
#pragma GCC unroll 5
    for (int kx = 0; kx < K; ++kx) {
      __m512 xv;
      if constexpr (S == 1) {
        if constexpr (kMasked) {
          xv = _mm512_maskz_loadu_ps(m[kx], At(rows[ky], base + kx));
        } else {
          xv = _mm512_loadu_ps(rows[ky] + base + kx);
        }
      } else {
        const long c = base + (kx & ~1);
        __m512 lo, hi;
        if constexpr (kMasked) {
          lo = _mm512_maskz_loadu_ps(m[kx & ~1], At(rows[ky], c));
          hi = _mm512_maskz_loadu_ps(mh[kx & ~1], At(rows[ky], c + kV));
        } else {
          lo = _mm512_loadu_ps(rows[ky] + c);
          hi = _mm512_loadu_ps(rows[ky] + c + kV);
        }
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
void Body(const float* const* rows, const __m512* wv, const F32DwConvRow* a, float* out);

// One row; null (padding) rows read any real row with zero weights.
template <int K, int S>
void Row(const F32DwConvRow* a) {
  const size_t out_w = a->out_w;
  // Padding rows: any real row with zero weights, so the fast path needs no branches.
  const float* any_row = nullptr;
  for (int ky = 0; ky < K; ++ky) {
    if (a->rows[ky]) any_row = a->rows[ky];
  }
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
  Body<K, S>(rows, wv, a, a->out);
}

// One row whose window rows all exist, with the weights already broadcast.
template <int K, int S>
void Body(const float* const* rows, const __m512* wv, const F32DwConvRow* a, float* out) {
  const long in_w = static_cast<long>(a->in_w), pad = static_cast<long>(a->pad_left);
  const size_t out_w = a->out_w;
  const __m512 vmin = _mm512_set1_ps(a->min), vmax = _mm512_set1_ps(a->max);
  const __m512 vb = _mm512_set1_ps(a->bias);
  constexpr int kReach = Reach<K, S>();
  for (size_t ox = 0; ox < out_w; ox += kV) {
    const long base = static_cast<long>(ox) * S - pad;
    if (base >= 0 && base + kReach <= in_w && ox + kV <= out_w) {
      const __m512 v = Vector<K, S, false>(rows, base, in_w, wv, vb);
      _mm512_storeu_ps(out + ox, _mm512_min_ps(_mm512_max_ps(v, vmin), vmax));
      continue;
    }
    // An edge vector: masked loads read zeros past either end of the row, and a masked store
    // writes only the outputs that exist (no stack copy, whose scalar stores would stall the
    // vector loads that follow them).
    const __m512 v = Vector<K, S, true>(rows, base, in_w, wv, vb);
    const size_t n = out_w - ox < static_cast<size_t>(kV) ? out_w - ox : kV;
    _mm512_mask_storeu_ps(out + ox, static_cast<__mmask16>((1u << n) - 1),
                          _mm512_min_ps(_mm512_max_ps(v, vmin), vmax));
  }
}

// `count` rows: the weights are broadcast once; rows next to a padding row take Row's path.
template <int K, int S>
void Rows(const F32DwConvRow* a) {
  __m512 wv[K * K];
  for (int k = 0; k < K * K; ++k) wv[k] = _mm512_set1_ps(a->w[k]);
  F32DwConvRow one = *a;
  for (size_t i = 0; i < a->count; ++i) {
    one.rows = a->rows + i * a->row_step;
    one.out = a->out + i * a->out_w;
    bool full = true;
    for (int ky = 0; ky < K; ++ky) full = full && one.rows[ky];
    if (full) {
      Body<K, S>(one.rows, wv, &one, one.out);
    } else {
      Row<K, S>(&one);
    }
  }
}

}  // namespace

void f32_dwconv3x3_s1__avx512f(const F32DwConvRow* a) { Rows<3, 1>(a); }
void f32_dwconv3x3_s2__avx512f(const F32DwConvRow* a) { Rows<3, 2>(a); }
void f32_dwconv5x5_s1__avx512f(const F32DwConvRow* a) { Rows<5, 1>(a); }
void f32_dwconv5x5_s2__avx512f(const F32DwConvRow* a) { Rows<5, 2>(a); }

}  // namespace kiln::ukernels
