// The body of the f32 2-D pooling microkernel (f32_maxpool2d__S, f32_avgpool2d__S), written
// over the same vector traits V as f32_hot_impl.h, which includes it (same rules: internal
// linkage, one copy per ISA file, no std:: templates).
//
// A call pools a run of output rows (across planes). Each row takes two passes over a scratch
// row (F32Pool2dParams::buf):
//  1. vertical: the window's input rows reduced elementwise (contiguous, whole vectors; the last
//     partial one loads the fill in its idle lanes) into buf[pad_left, pad_left + iw), with the
//     fill value (-inf for max, 0 for average) in the leading padding and everything past the
//     input that the second pass reads (written once per call);
//  2. horizontal: y[ox] reduces buf[ox * stride + k], k < kw. The fill makes every window look
//     interior, so each output vector takes kw loads (stride 1), 2 * kw loads and one even-lane
//     permute (stride 2) or a plain loop (stride >= 3), with no edge cases; only the average's
//     edge columns, whose divisor differs, are redone one by one afterwards.
// Before this, each output column pooled its window straight from the input rows (kh * kw
// strided loads per vector) and every column whose window crossed an edge or the row's last
// partial vector ran a scalar loop: on 3x3 stride-2 pools most of a short row (13..55 outputs).
//
// Max uses V::Max (x86 semantics: the second operand when either is NaN), as the kernel always
// has; whether a NaN wins depends on where it sits, as in the reference.
#pragma once

#include <cstddef>

#include "kernels/ukernels/f32_hot.h"

namespace kiln::ukernels {
namespace {  // NOLINT(build/namespaces): one private copy per ISA file, on purpose

template <class V, bool kMax>
inline typename V::T PoolOp(typename V::T a, typename V::T b) {
  return kMax ? V::Max(a, b) : V::Add(a, b);
}

// Pass 1 for output row oy: reduces its window's input rows into b[0, iw) and returns the
// average's row count (the rows inside the input, or with count_include_pad the window's rows
// inside the explicit padding).
template <class V, bool kMax>
inline float HotPoolRows(const float* x, size_t oy, float* b, const F32Pool2dParams* p) {
  using T = typename V::T;
  constexpr size_t w = V::kWidth;
  const size_t ih = p->ih, iw = p->iw, pt = p->pad_top;
  const size_t start = oy * p->stride_h, stop = start + p->kh;  // padded coordinates
  const size_t r0 = start < pt ? 0 : (start - pt < ih ? start - pt : ih);
  const size_t r1 = stop < pt ? 0 : (stop - pt < ih ? stop - pt : ih);
  const size_t nrows = r1 > r0 ? r1 - r0 : 0;
  const float* xr = x + r0 * iw;
  size_t i = 0;
  if (nrows == 0) {
    for (; i < iw; ++i) b[i] = kMax ? -__builtin_inff() : 0.0f;
  } else {
    for (; i + w <= iw; i += w) {
      T acc = V::Load(xr + i);
      for (size_t r = 1; r < nrows; ++r) acc = PoolOp<V, kMax>(acc, V::Load(xr + r * iw + i));
      V::Store(b + i, acc);
    }
    if (i < iw) {
      // The lanes past the row load as the fill, so a whole-vector store keeps the padding
      // (the scratch row has room for it) and avoids a masked store.
      const size_t n = iw - i;
      const float fill = kMax ? -__builtin_inff() : 0.0f;
      T acc = V::LoadPartialOr(xr + i, n, fill);
      for (size_t r = 1; r < nrows; ++r)
        acc = PoolOp<V, kMax>(acc, V::LoadPartialOr(xr + r * iw + i, n, fill));
      V::Store(b + i, acc);
    }
  }
  if (!p->count_include_pad) return static_cast<float>(nrows);
  const size_t padded_h = ih + pt + p->pad_bottom;
  return static_cast<float>((stop < padded_h ? stop : padded_h) - start);
}

// Pass 2: one output row from the padded scratch row buf. kKw, kS: the window width and stride
// when known at compile time (the common 3x3 / 2x2 pools unroll), else 0.
template <class V, bool kMax, size_t kKw, size_t kS>
inline void HotPoolColumns(const float* buf, float row_count, float* y, const float* y_end,
                           const F32Pool2dParams* p) {
  using T = typename V::T;
  constexpr size_t w = V::kWidth;
  const size_t iw = p->iw, ow = p->ow, pl = p->pad_left;
  const size_t kw = kKw ? kKw : p->kw, s = kS ? kS : p->stride_w;
  // Average: the interior columns (window inside the input) divide by row_count * kw; the
  // others are redone below.
  const float sc = 1.0f / (row_count * static_cast<float>(kw));
  if (s <= 2) {
    const T scale = V::Set(sc);
    for (size_t ox = 0; ox < ow; ox += w) {
      const float* base = buf + ox * s;
      T acc = V::Load(base);
      for (size_t k = 1; k < kw; ++k) acc = PoolOp<V, kMax>(acc, V::Load(base + k));
      if (s == 2 && w > 1) {
        // Stride 2: the stride-1 windows of 2 * w columns, then their even lanes (one permute
        // per output vector, not one per tap).
        T hi = V::Load(base + w);
        for (size_t k = 1; k < kw; ++k) hi = PoolOp<V, kMax>(hi, V::Load(base + w + k));
        acc = V::Evens(acc, hi);
      }
      if (!kMax) acc = V::Mul(acc, scale);
      // AVX2's masked store (vmaskmovps) is slow: there a whole vector past the row, when it
      // lands in the next rows of this call (which overwrite it later), is cheaper. AVX-512's
      // masked store is not, and overlapping whole stores measured slower there.
      if (ox + w <= ow || (w >= 8 && y + ox + w <= y_end)) {
        V::Store(y + ox, acc);
      } else {
        V::StorePartial(y + ox, acc, ow - ox);
      }
    }
  } else {
    for (size_t ox = 0; ox < ow; ++ox) {
      const float* base = buf + ox * s;
      float acc = base[0];
      for (size_t k = 1; k < kw; ++k) {
        if (kMax) {
          acc = acc > base[k] ? acc : base[k];  // V::Max's operand order
        } else {
          acc += base[k];
        }
      }
      y[ox] = kMax ? acc : acc * sc;
    }
  }
  if (kMax) return;
  // Interior: ox * s >= pl and ox * s - pl + kw <= iw.
  size_t lo = (pl + s - 1) / s;
  size_t hi = iw + pl >= kw ? (iw + pl - kw) / s + 1 : 0;
  if (lo > ow) lo = ow;
  if (hi < lo) hi = lo;
  const size_t padded_end = pl + iw + p->pad_right;
  auto edge = [&](size_t ox) {
    const size_t start = ox * s, end = start + kw;  // padded coordinates
    float sum = buf[start];
    for (size_t k = 1; k < kw; ++k) sum += buf[start + k];
    size_t cols;
    if (p->count_include_pad) {
      cols = (end < padded_end ? end : padded_end) - start;
    } else {
      const size_t c0 = start > pl ? start : pl, c1 = end < pl + iw ? end : pl + iw;
      cols = c1 > c0 ? c1 - c0 : 0;
    }
    y[ox] = sum / (row_count * static_cast<float>(cols));
  };
  for (size_t ox = 0; ox < lo; ++ox) edge(ox);
  for (size_t ox = hi; ox < ow; ++ox) edge(ox);
}

template <class V, bool kMax, size_t kKw, size_t kS>
inline void HotPool2dRun(const float* x, float* y, const F32Pool2dParams* p) {
  using T = typename V::T;
  constexpr size_t w = V::kWidth;
  const size_t iw = p->iw, ow = p->ow, pl = p->pad_left;
  if (p->row_begin >= p->row_end) return;
  const float fill = kMax ? -__builtin_inff() : 0.0f;
  const T vfill = V::Set(fill);
  const size_t row_floats = F32Pool2dRowFloats(iw, ow, p->kw, p->stride_w, pl);
  float* const bufs[2] = {p->buf, p->buf + row_floats};
  // The padding of both rows, once: the leading pad and everything past the input that pass 2
  // reads (whole vectors of this ISA's width, within F32Pool2dRowFloats).
  const size_t reads = (ow + w - 1) / w * w * p->stride_w + p->kw;
  for (float* b : bufs) {
    for (size_t i = 0; i < pl; ++i) b[i] = fill;
    for (size_t j = pl + iw; j < reads; j += w) {
      if (j + w <= reads) {
        V::Store(b + j, vfill);
      } else {
        V::StorePartial(b + j, vfill, reads - j);
      }
    }
  }
  // Pipelined by one row: pass 1 of the next row goes into the other buffer before pass 2 of
  // this one, so pass 2 reads (at other offsets) stores that have had time to leave the store
  // queue.
  const size_t in_plane = p->ih * iw, oh = p->oh;
  size_t plane = p->row_begin / oh, oy = p->row_begin % oh;
  const float* const y_end = y + p->row_end * ow;
  float row_count = HotPoolRows<V, kMax>(x + plane * in_plane, oy, bufs[0] + pl, p);
  for (size_t r = p->row_begin; r < p->row_end; ++r) {
    const size_t cur = (r - p->row_begin) & 1;
    size_t next_plane = plane, next_oy = oy + 1;
    if (next_oy == oh) {
      ++next_plane;
      next_oy = 0;
    }
    float next_count = 0.0f;
    if (r + 1 < p->row_end)
      next_count =
          HotPoolRows<V, kMax>(x + next_plane * in_plane, next_oy, bufs[cur ^ 1] + pl, p);
    HotPoolColumns<V, kMax, kKw, kS>(bufs[cur], row_count, y + (plane * oh + oy) * ow, y_end, p);
    plane = next_plane;
    oy = next_oy;
    row_count = next_count;
  }
}

template <class V, bool kMax>
inline void HotPool2d(const float* x, float* y, const F32Pool2dParams* p) {
  if (p->kw == 3 && p->stride_w == 2) return HotPool2dRun<V, kMax, 3, 2>(x, y, p);
  if (p->kw == 3 && p->stride_w == 1) return HotPool2dRun<V, kMax, 3, 1>(x, y, p);
  if (p->kw == 2 && p->stride_w == 2) return HotPool2dRun<V, kMax, 2, 2>(x, y, p);
  HotPool2dRun<V, kMax, 0, 0>(x, y, p);
}

// Global average pooling of one channel block held NCHWc: x [hw, c] (c <= 64 lanes, contiguous)
// -> y[l] = mean over i of x[i * c + l], l < c. Four independent accumulators, so that the adds'
// latency (not one dependency chain per lane) does not bound it; EfficientNet's 112x112 and 56x56
// pools read 1.6-1.8 MB each and were add-latency bound in a scalar loop.
template <class V>
inline void HotGAvgPoolNchwc(size_t hw, size_t c, const float* x, float* y) {
  using T = typename V::T;
  constexpr size_t w = V::kWidth;
  float sums[64] = {};
  if ((c % w == 0 && 4 % (c / w) == 0) || (c < w && w % c == 0)) {
    // The block as a flat array of vectors: vector v holds lanes of chunk v % (c / w) (c >= w),
    // or w / c whole positions (c < w); 4 accumulators keep that alignment.
    const size_t n = hw * c;
    T a0 = V::Set(0.0f), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 4 * w <= n; i += 4 * w) {
      a0 = V::Add(a0, V::Load(x + i));
      a1 = V::Add(a1, V::Load(x + i + w));
      a2 = V::Add(a2, V::Load(x + i + 2 * w));
      a3 = V::Add(a3, V::Load(x + i + 3 * w));
    }
    // The rest: fewer than 4 vectors, a multiple of c / w of them when c >= w, so each lands on
    // an accumulator of its own chunk; a partial last vector (c < w only) loads 0s past the end.
    if (i + w <= n) { a0 = V::Add(a0, V::Load(x + i)); i += w; }
    if (i + w <= n) { a1 = V::Add(a1, V::Load(x + i)); i += w; }
    if (i + w <= n) { a2 = V::Add(a2, V::Load(x + i)); i += w; }
    if (i < n) {
      // Only when c < w (with c >= w, n is a multiple of w).
      a3 = V::Add(a3, V::LoadPartialOr(x + i, n - i, 0.0f));
    }
    float v[4][w];
    V::Store(v[0], a0);
    V::Store(v[1], a1);
    V::Store(v[2], a2);
    V::Store(v[3], a3);
    if (c >= w) {
      for (size_t k = 0; k < 4; ++k)
        for (size_t j = 0; j < w; ++j) sums[k % (c / w) * w + j] += v[k][j];
    } else {
      for (size_t k = 0; k < 4; ++k)
        for (size_t j = 0; j < w; ++j) sums[j % c] += v[k][j];
    }
  } else {
    // Any other block: whole vectors of lanes, each position in turn (two positions per
    // iteration, two accumulator sets).
    const size_t chunks = (c + w - 1) / w, tail = c - (chunks - 1) * w;
    T acc[2][64 / w];
    for (size_t j = 0; j < chunks; ++j) acc[0][j] = acc[1][j] = V::Set(0.0f);
    for (size_t i = 0; i < hw; ++i) {
      const float* p = x + i * c;
      T* a = acc[i & 1];
      for (size_t j = 0; j + 1 < chunks; ++j) a[j] = V::Add(a[j], V::Load(p + j * w));
      a[chunks - 1] = V::Add(a[chunks - 1], V::LoadPartialOr(p + (chunks - 1) * w, tail, 0.0f));
    }
    for (size_t j = 0; j < chunks; ++j) {
      float v[w];
      V::Store(v, V::Add(acc[0][j], acc[1][j]));
      for (size_t l = 0; l < w && j * w + l < c; ++l) sums[j * w + l] = v[l];
    }
  }
  // hw = 0 gives 0 / 0 = NaN, as the NCHW kernel.
  const float count = static_cast<float>(hw);
  for (size_t l = 0; l < c; ++l) y[l] = sums[l] / count;
}

// The squeeze-and-excitation scale of one NCHWc channel block: y[i * c + l] = x[i * c + l] *
// s[l], i < hw, l < c (c in 1..64). Explicit vectors, so that y == x (the planner runs it in
// place) stays vectorized: the compiler's loop fell back to scalar code when the pointers
// overlapped.
template <class V>
inline void HotChannelScaleNchwc(size_t hw, size_t c, const float* x, const float* s, float* y) {
  using T = typename V::T;
  constexpr size_t w = V::kWidth;
  if (c < w && w % c == 0) {
    // Whole vectors of w / c positions with the scales repeated across the lanes.
    float rep[w];
    for (size_t j = 0; j < w; ++j) rep[j] = s[j % c];
    const T sv = V::Load(rep);
    const size_t n = hw * c;
    size_t i = 0;
    for (; i + 2 * w <= n; i += 2 * w) {
      const T a = V::Mul(V::Load(x + i), sv), b = V::Mul(V::Load(x + i + w), sv);
      V::Store(y + i, a);
      V::Store(y + i + w, b);
    }
    for (; i + w <= n; i += w) V::Store(y + i, V::Mul(V::Load(x + i), sv));
    if (i < n) V::StorePartial(y + i, V::Mul(V::LoadPartial(x + i, n - i), sv), n - i);
    return;
  }
  const size_t chunks = (c + w - 1) / w, tail = c - (chunks - 1) * w;
  T sv[64 / w];
  for (size_t j = 0; j + 1 < chunks; ++j) sv[j] = V::Load(s + j * w);
  sv[chunks - 1] = V::LoadPartial(s + (chunks - 1) * w, tail);
  if (tail == w) {
    if (chunks == 1) {
      const T s0 = sv[0];
      size_t i = 0;
      for (; i + 2 <= hw; i += 2) {
        const T a = V::Mul(V::Load(x + i * w), s0), b = V::Mul(V::Load(x + i * w + w), s0);
        V::Store(y + i * w, a);
        V::Store(y + i * w + w, b);
      }
      if (i < hw) V::Store(y + i * w, V::Mul(V::Load(x + i * w), s0));
      return;
    }
    for (size_t i = 0; i < hw; ++i)
      for (size_t j = 0; j < chunks; ++j)
        V::Store(y + i * c + j * w, V::Mul(V::Load(x + i * c + j * w), sv[j]));
    return;
  }
  for (size_t i = 0; i < hw; ++i) {
    const float* p = x + i * c;
    float* q = y + i * c;
    for (size_t j = 0; j + 1 < chunks; ++j) V::Store(q + j * w, V::Mul(V::Load(p + j * w), sv[j]));
    const size_t o = (chunks - 1) * w;
    V::StorePartial(q + o, V::Mul(V::LoadPartial(p + o, tail), sv[chunks - 1]), tail);
  }
}

}  // namespace
}  // namespace kiln::ukernels
