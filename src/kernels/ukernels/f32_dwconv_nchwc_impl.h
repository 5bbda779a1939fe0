// The body of the channel-blocked depthwise row microkernel (f32_dwconv.h, F32DwConvRowC), written
// once over the vector traits V of an ISA file (see f32_hot_impl.h for V's contract). Included
// only by the files in ukernels/<isa>/ after they define V; internal linkage, one copy per ISA.
//
// Each output pixel is a vector of channels, so every window tap is one FMA. What decides the
// speed is how many independent FMA chains run at once (an FMA waits 4 cycles for its
// accumulator) and how many loads each FMA needs (Zen 4 loads one zmm a cycle, the same rate as
// its FMAs). The common shapes (3x3 and 5x5, stride 1 and 2, one vector per block) run
// DwRowSlide: a row's pixels go in balanced groups of up to 8 (AVX-512) or 4 (AVX2), one chain
// each, and each input column a group touches is loaded once per window row and feeds every tap
// that reads it (3x3 stride 1: 10 loads for 24 FMAs, where one load per tap made the loads the
// bound). A group whose windows cross a row end skips the columns outside the row, one branch
// per column, so border pixels run in groups like the others. Other windows and strides run
// DwRowC: groups of interior pixels with a load per tap, border pixels one by one.
#pragma once

#include <cstddef>
#include <type_traits>

#include "kernels/ukernels/f32_dwconv.h"
#include "kernels/ukernels/f32_unroll.h"

namespace kiln::ukernels {
namespace {  // NOLINT(build/namespaces): one private copy per ISA file, on purpose

// Calls f(integral_constant<N>) for the N == n in [1, kMax].
template <size_t kMax, class F>
__attribute__((always_inline)) inline void GroupOf(size_t n, const F& f) {
  if constexpr (kMax >= 1) {
    if (n == kMax) return f(std::integral_constant<size_t, kMax>{});
    GroupOf<kMax - 1>(n, f);
  }
}

// The lambdas of DwRowSlide are forced inline like Unrolled (f32_unroll.h).
#define KILN_DW_INLINE __attribute__((always_inline))

// K x K window, stride S, one vector of W channels per block (a->cb == W). kOneGroup: the row
// is at most 8 pixels, one group (AVX2 only, see kMemRow).
template <class V, size_t K, size_t S, bool kOneGroup = false>
inline void DwRowSlide(const F32DwConvRowC* a) {
  using T = typename V::T;
  constexpr size_t W = V::kWidth;
  // Registers: AVX-512 has 32 (8 accumulators + 9 weights + a column), AVX2 16 (4 + 9 + 1).
  // Out of order, consecutive groups of a row overlap, so AVX2's 4 chains a group keep both FMA
  // pipes busy on long rows; a row of 7 (4 + 3) has too few. There, as one group of 7, a 3x3
  // holds only the weights of its first two window rows (7 + 6 + 1 registers) and takes the
  // third row's from memory, inside each FMA (kMemRow). Old against new kernel in one process,
  // hot rows, 1 thread, Zen 5 at the AVX2 level, median of 41 interleaved rounds: 960 channels
  // at 7x7 1.18-1.24x (65 -> 76 GFLOP/s), at 8x8 1.22x, while at 14..112 wide the same form ran
  // 3-4% slower, and at stride 2 onto 7 or 8 wide level or 9% slower (17 or 15 columns a row).
  constexpr bool kMemRow = kOneGroup && K == 3 && W < 16;
  constexpr size_t kGroup = W >= 16 || kMemRow ? 8 : 4;
  const size_t in_w = a->in_w, out_w = a->out_w, pl = a->pad_left;
  // Pixels [lo, hi) read only real columns.
  size_t lo = (pl + S - 1) / S;
  size_t hi = in_w + pl >= K ? (in_w + pl - K) / S + 1 : 0;
  if (hi > out_w) hi = out_w;
  if (lo > hi) lo = hi;
  // Balanced groups: a row of 14 runs as 7 + 7, not 8 + 6; a row of 7 as one group.
  const size_t groups = (out_w + kGroup - 1) / kGroup;
  const size_t base = out_w / groups, longer = out_w % groups;
  const float* w = a->w;
  // With kMemRow the bias and the bounds are read per group (the stores may alias *a, so they
  // stay reads): kept in registers across the row they would crowd out the held weights.
  constexpr bool kReread = kMemRow;
  const T vb_row = V::Load(a->bias), vmin_row = V::Set(a->min), vmax_row = V::Set(a->max);
  // 3x3: the nine weights stay in registers (six with kMemRow); 5x5: a window row's five,
  // loaded per row.
  T held[K == 3 ? 9 : 1];
  if constexpr (K == 3) {
    for (size_t t = 0; t < (kMemRow ? 6 : 9); ++t) held[t] = V::Load(w + t * W);
  }
  for (size_t r = 0; r < a->count; ++r) {
    const float* const* rows = a->rows + r * a->row_step;
    float* out = a->out + r * out_w * W;
    // N pixels from ox on. Column c of the group (input column ox * S + c - pl) feeds pixel
    // (c - kx) / S through tap kx wherever that divides; kEdge: some columns lie outside the
    // row (they read as zero: skipped). A null row is a padding row.
    auto group = [&](auto n_tag, auto edge_tag, size_t ox) KILN_DW_INLINE {
      constexpr size_t N = decltype(n_tag)::value;
      constexpr bool kEdge = decltype(edge_tag)::value;
      const T vb = kReread ? V::Load(a->bias) : vb_row;
      T acc[N];
      for (size_t i = 0; i < N; ++i) acc[i] = vb;
      const size_t first = ox * S;  // the group's first input column, plus pl
      Unrolled<K>([&](auto ky_tag) KILN_DW_INLINE {
        constexpr size_t ky = decltype(ky_tag)::value;
        const float* row = rows[ky];
        if (!row) return;
        constexpr bool kMem = kMemRow && ky == 2;  // this row's weights from memory
        T wr[K];
        Unrolled<K>([&](auto kx_tag) KILN_DW_INLINE {
          constexpr size_t kx = decltype(kx_tag)::value;
          if constexpr (kMem) {
            wr[kx] = V::Set(0.0f);  // unused
          } else if constexpr (K == 3) {
            wr[kx] = held[ky * 3 + kx];
          } else {
            wr[kx] = V::Load(w + (ky * K + kx) * W);
          }
        });
        Unrolled<(N - 1) * S + K>([&](auto c_tag) KILN_DW_INLINE {
          constexpr size_t c = decltype(c_tag)::value;
          T v;
          if constexpr (kEdge) {
            if (first + c < pl || first + c - pl >= in_w) return;
            v = V::Load(row + (first + c - pl) * W);
          } else {
            v = V::Load(row + (first - pl + c) * W);  // first >= pl: an interior group
            // Keeps v in a register: GCC otherwise folds the load into each FMA that uses it,
            // back to one load per tap (an edge group's branch happens to prevent that).
            asm("" : "+v"(v));
          }
          Unrolled<K>([&](auto kx_tag) KILN_DW_INLINE {
            constexpr size_t kx = decltype(kx_tag)::value;
            if constexpr (c >= kx && (c - kx) % S == 0 && (c - kx) / S < N) {
              if constexpr (kMem) {
                acc[(c - kx) / S] = V::FmaMem(w + (ky * K + kx) * W, v, acc[(c - kx) / S]);
              } else {
                acc[(c - kx) / S] = V::Fma(wr[kx], v, acc[(c - kx) / S]);
              }
            }
          });
        });
      });
      const T vmin = kReread ? V::Set(a->min) : vmin_row;
      const T vmax = kReread ? V::Set(a->max) : vmax_row;
      for (size_t i = 0; i < N; ++i) {
        V::Store(out + (ox + i) * W, V::Min(vmax, V::Max(vmin, acc[i])));
      }
    };
    size_t ox = 0;
    for (size_t q = 0; q < groups; ++q) {
      const size_t n = base + (q < longer ? 1 : 0);
      GroupOf<kGroup>(n, [&](auto n_tag) KILN_DW_INLINE {
        if (ox >= lo && ox + n <= hi) {
          group(n_tag, std::false_type{}, ox);
        } else {
          group(n_tag, std::true_type{}, ox);
        }
      });
      ox += n;
    }
  }
}

// The shapes DwRowSlide does not take: K is 3 or 5 (the window, both sides; the 3x3 weights
// then stay in registers), or 0 for any window read from the params; the stride and the block
// (several vectors) come from the params.
template <class V, size_t K>
inline void DwRowC(const F32DwConvRowC* a) {
  using T = typename V::T;
  // Registers: AVX-512 has 32 (8 accumulators + 9 weights + loads), AVX2 16 (4 + 9 + loads).
  constexpr size_t kGroup = V::kWidth >= 16 ? 8 : 4;
  constexpr bool kHeldTaps = K == 3;
  const size_t kh = K ? K : a->kh, kw = K ? K : a->kw;
  const size_t cb = a->cb, s = a->stride;
  const size_t in_w = a->in_w, out_w = a->out_w, pl = a->pad_left;
  // Pixels [lo, hi) read only real columns.
  size_t lo = (pl + s - 1) / s;
  size_t hi = in_w + pl >= kw ? (in_w + pl - kw) / s + 1 : 0;
  if (hi > out_w) hi = out_w;
  if (lo > hi) lo = hi;
  const T vmin = V::Set(a->min), vmax = V::Set(a->max);
  alignas(64) static constexpr float zeros[V::kWidth] = {};
  for (size_t g = 0; g < cb; g += V::kWidth) {
    const float* w = a->w + g;
    const T vb = V::Load(a->bias + g);
    T held[kHeldTaps ? 9 : 1];
    if constexpr (kHeldTaps) {
      for (size_t t = 0; t < 9; ++t) held[t] = V::Load(w + t * cb);
    }
    auto tap = [&](size_t ky, size_t kx) {
      if constexpr (kHeldTaps) {
        return held[ky * 3 + kx];
      } else {
        return V::Load(w + (ky * kw + kx) * cb);
      }
    };
    for (size_t r = 0; r < a->count; ++r) {
      const float* const* rows = a->rows + r * a->row_step;
      float* out = a->out + r * out_w * cb;
      auto store = [&](size_t ox, T acc) {
        V::Store(out + ox * cb + g, V::Min(vmax, V::Max(vmin, acc)));
      };
      // One pixel, any position, one chain per window row (three for 3x3). A tap outside the row
      // (or on a padding row) reads a zero vector instead: no branch, no out-of-range address.
      auto single = [&](size_t ox) {
        T acc[K ? K : 1];
        for (size_t i = 0; i < (K ? K : 1); ++i) acc[i] = V::Set(0.0f);
        acc[0] = vb;
        const long first = static_cast<long>(ox * s) - static_cast<long>(pl);
        for (size_t ky = 0; ky < kh; ++ky) {
          const float* row = rows[ky];
          T& sum = acc[K ? ky : 0];
          for (size_t kx = 0; kx < kw; ++kx) {
            const long col = first + static_cast<long>(kx);
            const bool real = row != nullptr && col >= 0 && col < static_cast<long>(in_w);
            const float* x = real ? row + static_cast<size_t>(col) * cb + g : zeros;
            sum = V::Fma(tap(ky, kx), V::Load(x), sum);
          }
        }
        for (size_t i = 1; i < (K ? K : 1); ++i) acc[0] = V::Add(acc[0], acc[i]);
        store(ox, acc[0]);
      };
      // N interior pixels from ox on, one chain each.
      auto group = [&](auto n_tag, size_t ox) {
        constexpr size_t N = decltype(n_tag)::value;
        T acc[N];
        for (size_t i = 0; i < N; ++i) acc[i] = vb;
        for (size_t ky = 0; ky < kh; ++ky) {
          const float* row = rows[ky];
          if (!row) continue;
          const float* x = row + (ox * s - pl) * cb + g;
          for (size_t kx = 0; kx < kw; ++kx) {
            const T wv = tap(ky, kx);
            for (size_t i = 0; i < N; ++i) {
              acc[i] = V::Fma(wv, V::Load(x + (i * s + kx) * cb), acc[i]);
            }
          }
        }
        for (size_t i = 0; i < N; ++i) store(ox + i, acc[i]);
      };
      for (size_t ox = 0; ox < lo; ++ox) single(ox);
      size_t ox = lo;
      for (; ox + kGroup <= hi; ox += kGroup) group(std::integral_constant<size_t, kGroup>{}, ox);
      // The rest of the interior as one group: 7 of a padded 7-wide row run as 7 chains.
      if (hi - ox >= 2) {
        GroupOf<kGroup - 1>(hi - ox, [&](auto n_tag) { group(n_tag, ox); });
        ox = hi;
      }
      for (; ox < out_w; ++ox) single(ox);
    }
  }
}

}  // namespace
}  // namespace kiln::ukernels

// Defines f32_dwconv_nchwc<W>__<S> over the ISA file's V.
#define KILN_DEFINE_F32_DWCONV_NCHWC_UKERNEL(NAME, V)                               \
  void NAME(const F32DwConvRowC* a) {                                                \
    constexpr size_t W = V::kWidth;                                                  \
    const bool one_vector = a->cb == W;                                              \
    if (a->kh == 3 && a->kw == 3 && one_vector && a->stride == 1) {                  \
      if (W < 16 && a->out_w <= 8) return DwRowSlide<V, 3, 1, true>(a);              \
      return DwRowSlide<V, 3, 1>(a);                                                 \
    }                                                                                \
    if (a->kh == 3 && a->kw == 3 && one_vector && a->stride == 2)                    \
      return DwRowSlide<V, 3, 2>(a);                                                 \
    if (a->kh == 5 && a->kw == 5 && one_vector && a->stride == 1)                    \
      return DwRowSlide<V, 5, 1>(a);                                                 \
    if (a->kh == 5 && a->kw == 5 && one_vector && a->stride == 2)                    \
      return DwRowSlide<V, 5, 2>(a);                                                 \
    if (a->kh == 3 && a->kw == 3) return DwRowC<V, 3>(a);                            \
    if (a->kh == 5 && a->kw == 5) return DwRowC<V, 5>(a);                            \
    DwRowC<V, 0>(a);                                                                 \
  }
