// The body of the plain (NCHW) depthwise row microkernels of f32_dwconv.h (F32DwConvRow: 3x3 and
// 5x5, strides 1 and 2), written once over the row traits D of an ISA file. Included only by the
// f32_hot__<isa>.cc files after they define D; internal linkage, one copy per ISA (see
// src/kernels/CMakeLists.txt), and no std:: templates for the same reason.
//
// A vector holds D::kV output columns of one row. Stride 2 loads 2 * kV consecutive inputs and
// splits them into even and odd columns, so window columns 2j and 2j + 1 share two loads.
// Vectors whose window crosses either end of the row use masked loads, so the kernel reads only
// the real row, and store only the outputs that exist.
//
// D provides: T (a vector of kV floats), M (a lane mask), kV, Load, LoadMasked(m, p) (zeros in
// the masked-off lanes, which it neither reads nor faults on), Lanes(lo, hi) (the mask of lanes
// lo <= j < hi, 0 <= lo <= hi <= kV), Store, StoreFirst(p, n, v) (lanes
// 0 .. n - 1), Set, Add, Fma (a * b + c), Max, Min, Evens(lo, hi) and Odds(lo, hi) (the even
// and odd floats of the 2 * kV in lo, hi): the hot kernels' traits V of the same ISA file, plus
// the masks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ukernels/f32_dwconv.h"

namespace kiln::ukernels {
namespace {  // NOLINT(build/namespaces): one private copy per ISA file, on purpose

// Input columns one vector of outputs reads, from its first: S * kV + K - 1 (stride 2 loads a
// pair of vectors at offsets up to K - 1).
template <class D, int K, int S>
constexpr long DwReach() {
  return S == 1 ? D::kV + K - 1 : 2 * D::kV + K - 1;
}

// Row pointer plus a column that may lie outside the row: formed as an integer, so that no
// out-of-range pointer exists in C++ terms; only masked loads read through it, and those do not
// touch (or fault on) the masked lanes.
inline const float* DwAt(const float* row, long col) {
  return reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(row) +
                                        static_cast<uintptr_t>(col) * sizeof(float));
}

// The lanes j of a load at input column `start` that fall inside [0, in_w).
template <class D>
inline typename D::M DwLaneMask(long start, long in_w) {
  const long lo = -start < 0 ? 0 : (-start > D::kV ? D::kV : -start);
  const long end = in_w - start > D::kV ? D::kV : in_w - start;
  return D::Lanes(lo, end < lo ? lo : end);
}

// kV outputs whose windows start at column `base` of each row (base + S * j for lane j).
// kMasked: the window may cross either end of the row, and every load is masked to [0, in_w).
// Two accumulators, so that the FMAs of a window form two chains.
template <class D, int K, int S, bool kMasked>
inline typename D::T DwVector(const float* const* rows, long base, long in_w,
                              const typename D::T* wv, typename D::T bias) {
  using T = typename D::T;
  T acc0 = bias, acc1 = D::Set(0.0f);
  // The masks of the loads at offsets 0 .. K - 1 (and kV more for stride 2), the same in every
  // window row: computed once here, not per tap.
  typename D::M m[K + 1], mh[K + 1];
  if constexpr (kMasked) {
    for (int o = 0; o < K; ++o) {
      m[o] = DwLaneMask<D>(base + o, in_w);
      if constexpr (S == 2) mh[o] = DwLaneMask<D>(base + o + D::kV, in_w);
    }
  }
#pragma GCC unroll 5
  for (int ky = 0; ky < K; ++ky) {
#pragma GCC unroll 5
    for (int kx = 0; kx < K; ++kx) {
      T xv;
      if constexpr (S == 1) {
        if constexpr (kMasked) {
          xv = D::LoadMasked(m[kx], DwAt(rows[ky], base + kx));
        } else {
          xv = D::Load(rows[ky] + base + kx);
        }
      } else {
        const long c = base + (kx & ~1);
        T lo, hi;
        if constexpr (kMasked) {
          lo = D::LoadMasked(m[kx & ~1], DwAt(rows[ky], c));
          hi = D::LoadMasked(mh[kx & ~1], DwAt(rows[ky], c + D::kV));
        } else {
          lo = D::Load(rows[ky] + c);
          hi = D::Load(rows[ky] + c + D::kV);
        }
        xv = (kx & 1) ? D::Odds(lo, hi) : D::Evens(lo, hi);
      }
      if ((ky * K + kx) & 1) {
        acc1 = D::Fma(wv[ky * K + kx], xv, acc1);
      } else {
        acc0 = D::Fma(wv[ky * K + kx], xv, acc0);
      }
    }
  }
  return D::Add(acc0, acc1);
}

// One row whose window rows all exist, with the weights already broadcast.
template <class D, int K, int S>
void DwBody(const float* const* rows, const typename D::T* wv, const F32DwConvRow* a,
            float* out) {
  using T = typename D::T;
  constexpr size_t kV = D::kV;
  const long in_w = static_cast<long>(a->in_w), pad = static_cast<long>(a->pad_left);
  const size_t out_w = a->out_w;
  const T vmin = D::Set(a->min), vmax = D::Set(a->max), vb = D::Set(a->bias);
  for (size_t ox = 0; ox < out_w; ox += kV) {
    const long base = static_cast<long>(ox) * S - pad;
    if (base >= 0 && base + DwReach<D, K, S>() <= in_w && ox + kV <= out_w) {
      const T v = DwVector<D, K, S, false>(rows, base, in_w, wv, vb);
      D::Store(out + ox, D::Min(vmax, D::Max(vmin, v)));
      continue;
    }
    // An edge vector: masked loads read zeros past either end of the row (no stack copy, whose
    // scalar stores would stall the vector loads that follow them).
    const T v = DwVector<D, K, S, true>(rows, base, in_w, wv, vb);
    const size_t n = out_w - ox < kV ? out_w - ox : kV;
    D::StoreFirst(out + ox, n, D::Min(vmax, D::Max(vmin, v)));
  }
}

// One row next to the padding: null window rows read any real row with zero weights, so the
// body needs no branches.
template <class D, int K, int S>
void DwPaddedRow(const F32DwConvRow* a) {
  const float* any_row = nullptr;
  for (int ky = 0; ky < K; ++ky) {
    if (a->rows[ky]) any_row = a->rows[ky];
  }
  if (!any_row) {
    const float v = a->bias < a->min ? a->min : (a->bias > a->max ? a->max : a->bias);
    for (size_t ox = 0; ox < a->out_w; ++ox) a->out[ox] = v;
    return;
  }
  typename D::T wv[K * K];
  const float* rows[K];
  for (int ky = 0; ky < K; ++ky) {
    rows[ky] = a->rows[ky] ? a->rows[ky] : any_row;
    for (int kx = 0; kx < K; ++kx) {
      wv[ky * K + kx] = a->rows[ky] ? D::Set(a->w[ky * K + kx]) : D::Set(0.0f);
    }
  }
  DwBody<D, K, S>(rows, wv, a, a->out);
}

// `count` rows: the weights are broadcast once; rows next to the padding take DwPaddedRow.
template <class D, int K, int S>
void DwRows(const F32DwConvRow* a) {
  typename D::T wv[K * K];
  for (int k = 0; k < K * K; ++k) wv[k] = D::Set(a->w[k]);
  F32DwConvRow one = *a;
  for (size_t i = 0; i < a->count; ++i) {
    one.rows = a->rows + i * a->row_step;
    one.out = a->out + i * a->out_w;
    bool full = true;
    for (int ky = 0; ky < K; ++ky) full = full && one.rows[ky];
    if (full) {
      DwBody<D, K, S>(one.rows, wv, &one, one.out);
    } else {
      DwPaddedRow<D, K, S>(&one);
    }
  }
}

}  // namespace
}  // namespace kiln::ukernels
