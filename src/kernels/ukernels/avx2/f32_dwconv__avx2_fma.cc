// Depthwise 3x3 and 5x5 row kernels, strides 1 and 2, for AVX2 + FMA: 8 output columns per
// vector. Stride 2 loads 16 consecutive inputs and splits them into even and odd columns (one
// shuffle + one lane permute each), so window columns 2j and 2j+1 share two loads.
// Register budget, 3x3: 9 weight vectors + bias + 2 accumulators + loads = 15 of 16 (5x5 keeps
// its 25 weights in memory as FMA operands). Vectors whose window crosses either end of the row
// use masked loads, so the kernel reads only the real row.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

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

// Lanes j of an 8-wide load at input column `start` that fall inside [0, in_w), as the sign
// bits maskload reads.
inline __m256i LaneMask(long start, long in_w) {
  const __m256i j = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const long lo = std::min<long>(std::max<long>(-start, 0), kV);
  const long hi = std::max<long>(std::min<long>(in_w - start, kV), lo);
  // lo <= j < hi
  const __m256i ge = _mm256_cmpgt_epi32(j, _mm256_set1_epi32(static_cast<int>(lo) - 1));
  const __m256i lt = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(hi)), j);
  return _mm256_and_si256(ge, lt);
}

// Row pointer plus a column that may lie outside the row: formed as an integer, so that no
// out-of-range pointer exists in C++ terms; only masked loads read through it, and those do not
// touch (or fault on) the masked lanes.
inline const float* At(const float* row, long col) {
  return reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(row) +
                                        static_cast<uintptr_t>(col) * sizeof(float));
}

// 8 outputs whose windows start at column `base` of each row (base + S * j for lane j). kMasked:
// the window may cross either end of the row, and every load is masked to [0, in_w).
template <int K, int S, bool kMasked>
inline __m256 Vector(const float* const* rows, long base, long in_w, const __m256* wv,
                     __m256 bias) {
  __m256 acc0 = bias, acc1 = _mm256_setzero_ps();
  // The masks of the loads at offsets 0 .. K - 1 (and 8 more for stride 2), the same in every
  // window row: computed once here, not per tap.
  __m256i m[K + 1], mh[K + 1];
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
      __m256 xv;
      if constexpr (S == 1) {
        if constexpr (kMasked) {
          xv = _mm256_maskload_ps(At(rows[ky], base + kx), m[kx]);
        } else {
          xv = _mm256_loadu_ps(rows[ky] + base + kx);
        }
      } else {
        const long c = base + (kx & ~1);
        __m256 lo, hi;
        if constexpr (kMasked) {
          lo = _mm256_maskload_ps(At(rows[ky], c), m[kx & ~1]);
          hi = _mm256_maskload_ps(At(rows[ky], c + kV), mh[kx & ~1]);
        } else {
          lo = _mm256_loadu_ps(rows[ky] + c);
          hi = _mm256_loadu_ps(rows[ky] + c + kV);
        }
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
void Body(const float* const* rows, const __m256* wv, const F32DwConvRow* a, float* out);

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
  __m256 wv[K * K];
  const float* rows[K];
  for (int ky = 0; ky < K; ++ky) {
    rows[ky] = a->rows[ky] ? a->rows[ky] : any_row;
    for (int kx = 0; kx < K; ++kx) {
      wv[ky * K + kx] = a->rows[ky] ? _mm256_set1_ps(a->w[ky * K + kx]) : _mm256_setzero_ps();
    }
  }
  Body<K, S>(rows, wv, a, a->out);
}

// One row whose window rows all exist, with the weights already broadcast.
template <int K, int S>
void Body(const float* const* rows, const __m256* wv, const F32DwConvRow* a, float* out) {
  const long in_w = static_cast<long>(a->in_w), pad = static_cast<long>(a->pad_left);
  const size_t out_w = a->out_w;
  const __m256 vmin = _mm256_set1_ps(a->min), vmax = _mm256_set1_ps(a->max);
  const __m256 vb = _mm256_set1_ps(a->bias);
  constexpr int kReach = Reach<K, S>();
  for (size_t ox = 0; ox < out_w; ox += kV) {
    const long base = static_cast<long>(ox) * S - pad;
    if (base >= 0 && base + kReach <= in_w && ox + kV <= out_w) {
      const __m256 v = Vector<K, S, false>(rows, base, in_w, wv, vb);
      _mm256_storeu_ps(out + ox, _mm256_min_ps(_mm256_max_ps(v, vmin), vmax));
      continue;
    }
    // An edge vector: masked loads read zeros past either end of the row (no stack copy, whose
    // scalar stores would stall the vector loads that follow them). The tail is stored lane by
    // lane: a masked store (vmaskmovps) is microcoded and slow on AMD cores.
    const __m256 v = Vector<K, S, true>(rows, base, in_w, wv, vb);
    alignas(32) float res[kV];
    _mm256_store_ps(res, _mm256_min_ps(_mm256_max_ps(v, vmin), vmax));
    const size_t n = out_w - ox < static_cast<size_t>(kV) ? out_w - ox : kV;
    for (size_t i = 0; i < n; ++i) a->out[ox + i] = res[i];
  }
}

// `count` rows: the weights are broadcast once; rows next to a padding row take Row's path.
template <int K, int S>
void Rows(const F32DwConvRow* a) {
  __m256 wv[K * K];
  for (int k = 0; k < K * K; ++k) wv[k] = _mm256_set1_ps(a->w[k]);
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

void f32_dwconv3x3_s1__avx2_fma(const F32DwConvRow* a) { Rows<3, 1>(a); }
void f32_dwconv3x3_s2__avx2_fma(const F32DwConvRow* a) { Rows<3, 2>(a); }
void f32_dwconv5x5_s1__avx2_fma(const F32DwConvRow* a) { Rows<5, 1>(a); }
void f32_dwconv5x5_s2__avx2_fma(const F32DwConvRow* a) { Rows<5, 2>(a); }

}  // namespace kiln::ukernels
