// The body of the grouped-convolution microkernel (f32_gconv.h), written once over the vector
// traits V of an ISA file (see f32_hot_impl.h for V's contract). Included only by the files in
// ukernels/<isa>/ after they define V; internal linkage, one copy per ISA.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "kernels/ukernels/f32_gconv.h"
#include "kernels/ukernels/f32_unroll.h"

namespace kiln::ukernels {
namespace {  // NOLINT(build/namespaces): one private copy per ISA file, on purpose

// The clamp of the epilogue, only the bounds it has: ReLU's lone Max saves a vector op per
// accumulator, 4% of a 3x3 stem's 27 FMAs. Max(lo, a) and Min(hi, a) return a when it is NaN,
// as std::max / std::min in the reference's order do.
template <class V>
struct ClampOp {
  typename V::T lo, hi;
  bool has_lo, has_hi;
  explicit ClampOp(const F32GConvParams& p)
      : lo(V::Set(p.clamp_min)), hi(V::Set(p.clamp_max)),
        has_lo(p.clamp_min > -std::numeric_limits<float>::infinity()),
        has_hi(p.clamp_max < std::numeric_limits<float>::infinity()) {}
  typename V::T operator()(typename V::T a) const {
    if (has_lo) a = V::Max(lo, a);
    if (has_hi) a = V::Min(hi, a);
    return a;
  }
};

// A vector of flat indices from output pixel (oy, ox) on that straddles a row end (about once
// per row) stores its lanes that fall on output pixels: runs of columns below the width, in
// consecutive rows below `rows`, separated by the pitch's gap columns, which are dropped.
// AVX-512 shifts the lanes of each run down and stores them under a mask; the other ISAs copy
// the vector to the stack and the runs from there.
template <class V>
struct Spans {
  size_t first[V::kWidth], count[V::kWidth], at[V::kWidth], n = 0;
};

template <class V>
inline void FindSpans(size_t oy, size_t ox, const F32GConvParams& p, Spans<V>* s) {
  for (size_t lane = 0; lane < V::kWidth && oy < p.rows;) {
    if (ox < p.width) {
      const size_t n = std::min(p.width - ox, V::kWidth - lane);
      s->first[s->n] = lane;
      s->count[s->n] = n;
      s->at[s->n++] = oy * p.width + ox;
      lane += n;
      ox += n;
    } else {
      lane += p.pitch - ox;  // the gap columns
      ox = 0;
      ++oy;
    }
  }
}

// r by value: passing the accumulators by reference made the compiler keep them in memory.
template <class V>
inline void StoreSpans(float* y, typename V::T r, const Spans<V>& s) {
  if constexpr (requires { V::StoreLanes(y, r, size_t{0}, size_t{0}); }) {
    for (size_t i = 0; i < s.n; ++i) V::StoreLanes(y + s.at[i], r, s.first[i], s.count[i]);
  } else {
    alignas(64) float lanes[V::kWidth];
    V::Store(lanes, r);
    for (size_t i = 0; i < s.n; ++i)
      std::memcpy(y + s.at[i], lanes + s.first[i], s.count[i] * sizeof(float));
  }
}

// acc[j][v] = bias[j] + the sum over the p.nk taps k of w[k * WS + j] times the vector of input
// at x + p.offsets[k] + f + v * width: MB output channels by NV vectors of output pixels from
// flat index f. The tap loop is unrolled by 3 (an RGB stem's taps come in threes): 2-4% of a 3x3
// stem's time in the row mode, 1% of a 7x7 one's (unrolling by 9 gained nothing more).
template <class V, size_t MB, size_t NV, size_t WS>
__attribute__((always_inline)) inline void TileProducts(typename V::T (&acc)[MB][NV],
                                                        const float* x, const float* w,
                                                        const float* bias, size_t f,
                                                        const F32GConvParams& p) {
  using T = typename V::T;
  for (size_t j = 0; j < MB; ++j) {
    const T b = V::Set(bias ? bias[j] : 0.0f);
    for (size_t v = 0; v < NV; ++v) acc[j][v] = b;
  }
  const float* wk = w;
#pragma GCC unroll 3
  for (size_t k = 0; k < p.nk; ++k, wk += WS) {
    const float* in = x + p.offsets[k] + f;
    T xv[NV];
    for (size_t v = 0; v < NV; ++v) xv[v] = V::Load(in + v * V::kWidth);
    for (size_t j = 0; j < MB; ++j) {
      const T wv = V::Set(wk[j]);
      for (size_t v = 0; v < NV; ++v) acc[j][v] = V::Fma(xv[v], wv, acc[j][v]);
    }
  }
}

// MB output channels times NV vectors of output pixels stay in registers: 8 x 2 zmm = 16 of 32
// on AVX-512, 8 x 1 ymm = 8 of 16 on AVX2 (the input vectors and a broadcast need the rest).
template <class V, size_t MB, size_t NV>
inline void GConvMB(const float* x, const float* w, const float* bias, float* y,
                    const F32GConvParams& p) {
  using T = typename V::T;
  constexpr size_t kChunk = NV * V::kWidth;
  const ClampOp<V> clamp(p);
  size_t oy = 0, ox = 0;  // the output pixel of flat index f + v * width
  for (size_t f = 0; f < p.count; f += kChunk) {
    T acc[MB][NV];
    TileProducts<V, MB, NV, MB>(acc, x, w, bias, f, p);
    // acc indexed by compile-time constants only: a runtime index (a loop the compiler
    // does not unroll) kept the accumulators in memory, 32 stores and loads per chunk.
    Unrolled<NV>([&](auto v) {
      if (oy < p.rows && ox + V::kWidth <= p.width) {  // the vector lies in one output row
        float* yv = y + oy * p.width + ox;
        Unrolled<MB>([&](auto j) { V::Store(yv + j * p.y_stride, clamp(acc[j][v])); });
      } else if (oy < p.rows) {
        Spans<V> spans;
        FindSpans<V>(oy, ox, p, &spans);
        Unrolled<MB>([&](auto j) { StoreSpans<V>(y + j * p.y_stride, clamp(acc[j][v]), spans); });
      }
      ox += V::kWidth;
      while (ox >= p.pitch) {
        ox -= p.pitch;
        ++oy;
      }
    });
  }
}

// One register tile of the row mode: MB channels x NV vectors of output pixels from flat index f,
// all in one output row, stored from y on (the tile's first pixel of channel 0). With kTail, the
// last vector stores only its first `tail` lanes (the row's end).
template <class V, size_t MB, size_t NV, bool kTail, size_t WS>
inline void RowTile(const float* x, const float* w, const float* bias, float* y, size_t f,
                    size_t tail, const F32GConvParams& p, const ClampOp<V>& clamp) {
  typename V::T acc[MB][NV];
  TileProducts<V, MB, NV, WS>(acc, x, w, bias, f, p);
  Unrolled<NV>([&](auto v) {
    Unrolled<MB>([&](auto j) {
      float* yv = y + j * p.y_stride + v * V::kWidth;
      if (kTail && v + 1 == NV) {
        V::StorePartial(yv, clamp(acc[j][v]), tail);
      } else {
        V::Store(yv, clamp(acc[j][v]));
      }
    });
  });
}

// The row mode: each output row on its own, in tiles of NV vectors, the last one (or its last
// vector) cut at the row's end. Where the rows rounded up to whole vectors are no longer than
// the pitch (224x224 stems: 112 columns, pitch 113 or 115), it computes no more than the flat
// run and stores every vector straight, with no vector straddling a row end: the flat run's
// span stores took about a quarter of its chunks on a 3x3 stem, and its gap columns cost 2.6%
// of ResNet's 7x7 stem.
template <class V, size_t MB, size_t NV, size_t WS = MB>
inline void GConvRowsMB(const float* x, const float* w, const float* bias, float* y,
                        const F32GConvParams& p) {
  constexpr size_t kW = V::kWidth, kChunk = NV * kW;
  const ClampOp<V> clamp(p);
  const size_t full = p.width / kChunk * kChunk, rest = p.width - full;
  const size_t rest_vectors = (rest + kW - 1) / kW, tail = rest - (rest_vectors - 1) * kW;
  for (size_t oy = 0; oy < p.rows; ++oy) {
    const size_t f = oy * p.pitch;
    float* yr = y + oy * p.width;
    for (size_t ox = 0; ox < full; ox += kChunk) {
      RowTile<V, MB, NV, false, WS>(x, w, bias, yr + ox, f + ox, 0, p, clamp);
    }
    if (rest == 0) continue;
    Unrolled<NV>([&](auto n) {
      if (n + 1 == rest_vectors) {
        RowTile<V, MB, n + 1, true, WS>(x, w, bias, yr + full, f + full, tail, p, clamp);
      }
    });
  }
}

template <class V, size_t MB, size_t NV>
inline void GConvAnyMB(const float* x, const float* w, const float* bias, float* y,
                       const F32GConvParams& p) {
  constexpr size_t kW = V::kWidth;
  if (p.width >= NV * kW && (p.width + kW - 1) / kW * kW <= p.pitch) {
    if constexpr (kW == 8 && MB > 4) {
      // AVX2 (16 registers): 8 channels x 1 vector left 6 idle and kept only 8 FMAs in flight
      // (2 per cycle, 4 cycles each). Two passes of 4 channels x 3 vectors use all 16.
      GConvRowsMB<V, 4, 3, MB>(x, w, bias, y, p);
      GConvRowsMB<V, MB - 4, 3, MB>(x, w + 4, bias ? bias + 4 : nullptr, y + 4 * p.y_stride, p);
    } else if constexpr (kW == 8) {
      GConvRowsMB<V, MB, 3>(x, w, bias, y, p);
    } else {
      GConvRowsMB<V, MB, NV>(x, w, bias, y, p);
    }
  } else {
    GConvMB<V, MB, NV>(x, w, bias, y, p);
  }
}

template <class V, size_t NV>
inline void GConv(const float* x, const float* w, const float* bias, float* y,
                  const F32GConvParams* p) {
  switch (p->mb) {
    case 8: return GConvAnyMB<V, 8, NV>(x, w, bias, y, *p);
    case 7: return GConvAnyMB<V, 7, NV>(x, w, bias, y, *p);
    case 6: return GConvAnyMB<V, 6, NV>(x, w, bias, y, *p);
    case 5: return GConvAnyMB<V, 5, NV>(x, w, bias, y, *p);
    case 4: return GConvAnyMB<V, 4, NV>(x, w, bias, y, *p);
    case 3: return GConvAnyMB<V, 3, NV>(x, w, bias, y, *p);
    case 2: return GConvAnyMB<V, 2, NV>(x, w, bias, y, *p);
    case 1: return GConvAnyMB<V, 1, NV>(x, w, bias, y, *p);
    default: return;
  }
}

// Vectors (kWidth > 1) need V::Odds(a, b) besides f32_hot_impl.h's Evens: the odd lanes of a,
// b as consecutive floats. (Taking the odds as the evens of the floats one further on measured
// no faster than the baseline ISA's loop: two more loads, both across cache lines.)
template <class V>
inline void Deinterleave2(size_t w, const float* s, float* even, float* odd) {
  constexpr size_t kW = V::kWidth;
  size_t i = 0;  // pairs done
  if constexpr (kW > 1) {
    for (; 2 * (i + kW) <= w; i += kW) {
      const typename V::T a = V::Load(s + 2 * i), b = V::Load(s + 2 * i + kW);
      V::Store(even + i, V::Evens(a, b));
      V::Store(odd + i, V::Odds(a, b));
    }
  }
  for (; 2 * i + 1 < w; ++i) {
    even[i] = s[2 * i];
    odd[i] = s[2 * i + 1];
  }
  if (w % 2) even[i] = s[w - 1];
}

}  // namespace
}  // namespace kiln::ukernels

// Defines f32_gconv__S with the vector traits V, NV vectors of pixels per channel, and
// f32_deinterleave2__S.
#define KILN_DEFINE_F32_GCONV_UKERNEL(S, V, NV)                                              \
  void f32_gconv__##S(const float* x, const float* w, const float* bias, float* y,          \
                      const F32GConvParams* p) {                                             \
    GConv<V, NV>(x, w, bias, y, p);                                                          \
  }                                                                                          \
  void f32_deinterleave2__##S(size_t w, const float* src, float* even, float* odd) {        \
    Deinterleave2<V>(w, src, even, odd);                                                     \
  }
