// Direct convolution on NCHW16c, AVX-512F. Register budget (32 zmm): a tile of 12 output columns
// x 2 output channel blocks = 24 accumulators and 2 weight vectors; the input is broadcast from
// memory inside the FMA. Each broadcast feeds 2 FMAs and each weight load 12. A 1x1 over pixels
// runs up to 4 blocks x 6 columns (3 x 8): each broadcast feeds 4 FMAs, 10 loads per 24 FMAs
// instead of 14 (bench_conv --blocked, 1 thread: 16->96 at 112x112 0.425 -> 0.417 ms, 24->72 at
// 56x56 0.120 -> 0.114; 240->40 at 28x28 0.151 -> 0.132 as one 16 + 16 + 8 call). A partial last
// block runs only its real input channels (ic_last), and a last output block of at most 8 real
// channels (oc_last) accumulates in ymm.
// The accumulators start from the bias. A 1x1 with K <= 64 runs its own instantiation of the
// tiles (kShort, see RowOf).
// An image stem (in_c = 1..4 input channels, planes in_ci_stride apart) runs the same tiles with
// a loop over its in_c channels instead of the unrolled c.
#include <immintrin.h>

#include "kernels/ukernels/f32_conv.h"

// GCC 12's _mm512_max_ps/_mm512_min_ps pass an _mm512_undefined_ps() source that -O3 reports as
// uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kiln::ukernels {
namespace {

constexpr size_t kC = 16;

// The modes of a tile: kNchwc (in_c = 0: c contiguous input channels, unrolled), or an image
// stem (in_c = 1..4 planes in_ci_stride apart) whose in_ow_stride is 1 or 2 (the mode's value:
// each broadcast then reads a fixed offset from one pointer) or any (kStemAny). kNchwcUnit is
// a 1x1 in kNchwc with columns kC floats apart (stride 1), known at compile time: the
// tiles of a 1x1 over pixels then address their 24 columns as offsets from one pointer. With
// the stride read at run time GCC kept 24 column offsets, ten of them reloaded from the stack
// per channel (perf annotate of 32 -> 16 at 112x112).
constexpr size_t kNchwc = 0, kStemAny = 3, kNchwcUnit = 4;
constexpr bool IsNchwc(size_t mode) { return mode == kNchwc || mode == kNchwcUnit; }

// One input channel: acc[o][t] += x[t * ows] * w[o * w_ob_stride][0..kC), where with kHalf the
// last block (o = OB - 1) is 8 lanes wide and accumulates in half[t] instead (a last block of at
// most 8 real channels: 24 = 16 + 8 output channels). On Zen 4 a ymm FMA costs half a zmm one,
// so a 12 x (16 + 8) tile takes 18 FMA cycles per input channel, not 24.
template <size_t OB, size_t T, bool kHalf, bool kPf = false>
__attribute__((always_inline)) inline void Channel(__m512 (&acc)[OB][T], __m256 (&half)[T],
                                                   const float* x, const float* w, size_t ows,
                                                   const F32ConvNchwcParams* p,
                                                   ptrdiff_t pf = 0) {
  const size_t w_ob_stride = p->w_ob_stride;
  if constexpr (kPf) {
    for (size_t o = 0; o < p->prefetch_blocks; ++o) {
      _mm_prefetch(reinterpret_cast<const char*>(w + pf + o * w_ob_stride), _MM_HINT_T1);
    }
  }
  constexpr size_t kZ = kHalf ? OB - 1 : OB;  // zmm blocks
  __m512 wz[kZ > 0 ? kZ : 1];
#pragma GCC unroll 4
  for (size_t o = 0; o < kZ; ++o) wz[o] = _mm512_loadu_ps(w + o * w_ob_stride);
  __m256 wh = _mm256_setzero_ps();
  if constexpr (kHalf) wh = _mm256_loadu_ps(w + (OB - 1) * w_ob_stride);
#pragma GCC unroll 24
  for (size_t t = 0; t < T; ++t) {
    const __m512 xv = _mm512_set1_ps(x[t * ows]);
#pragma GCC unroll 4
    for (size_t o = 0; o < kZ; ++o) acc[o][t] = _mm512_fmadd_ps(xv, wz[o], acc[o][t]);
    if constexpr (kHalf) half[t] = _mm256_fmadd_ps(_mm512_castps512_ps256(xv), wh, half[t]);
  }
}

// Adds the output's contents when accumulating, clamps and stores one block of T columns (the
// accumulators start from the bias). The clamp's bound is the first operand of vmaxps/vminps,
// which return the second where either is NaN: a NaN stays NaN, as in the reference. kShort (a
// tile of a short K, where the stores are a large share): each step runs over the whole block
// behind one test of the parameters read up front, and a clamp bound at infinity is skipped. Testing per column reloaded the parameters after
// every store (a store may alias *p) and put three branches beside each store: a tenth of a
// 6 x 4 tile at K = 16 (16 -> 96), 4% at K = 64. On long K the plain form is kept: a 7-column
// tile at K = 1024 (1024 -> 2048 s2 at 14x14) ran 4% slower with the other, for no reason
// found.
template <size_t T, bool kShort>
__attribute__((always_inline)) inline void Store(const F32ConvNchwcParams* p, __m512* acc,
                                                 size_t o, float* output) {
  float* out = output + o * p->out_ob_stride;
  if constexpr (kShort) {
    const bool accumulate = p->accumulate != 0;
    const float min = p->min, max = p->max;
    if (accumulate) {
#pragma GCC unroll 24
      for (size_t t = 0; t < T; ++t) {
        acc[t] = _mm512_add_ps(acc[t], _mm512_loadu_ps(out + t * kC));
      }
    }
    if (min > -__builtin_inff()) {
      const __m512 v = _mm512_set1_ps(min);
#pragma GCC unroll 24
      for (size_t t = 0; t < T; ++t) acc[t] = _mm512_max_ps(v, acc[t]);
    }
    if (max < __builtin_inff()) {
      const __m512 v = _mm512_set1_ps(max);
#pragma GCC unroll 24
      for (size_t t = 0; t < T; ++t) acc[t] = _mm512_min_ps(v, acc[t]);
    }
#pragma GCC unroll 24
    for (size_t t = 0; t < T; ++t) _mm512_storeu_ps(out + t * kC, acc[t]);
  } else {
    const __m512 vmin = _mm512_set1_ps(p->min), vmax = _mm512_set1_ps(p->max);
#pragma GCC unroll 24
    for (size_t t = 0; t < T; ++t) {
      __m512 v = acc[t];
      if (p->accumulate) v = _mm512_add_ps(v, _mm512_loadu_ps(out + t * kC));
      v = _mm512_min_ps(vmax, _mm512_max_ps(vmin, v));
      _mm512_storeu_ps(out + t * kC, v);
    }
  }
}

// The input channels [0, n) of one block at every tap of the window; pf (floats from the
// weights, 0: none) names the weights of the next call to pull into L2 beside them, on a short
// tile only where kPf (see RowOf).
template <size_t OB, size_t T, bool kHalf, size_t kMode, size_t n, bool kPf, bool kShort>
__attribute__((always_inline)) inline void Block(const F32ConvNchwcParams* p, __m512 (&acc)[OB][T],
                                                 __m256 (&half)[T], const float* x_cb,
                                                 const float* w_cb, ptrdiff_t pf) {
  const size_t ows = kMode == kNchwcUnit ? kC : p->in_ow_stride;
  const size_t cin = IsNchwc(kMode) ? kC : p->in_c;
  // kNchwcUnit is a 1x1: one tap, known here, where two loops of one trip each kept their
  // bounds and pointers in registers that the tile's setup then spilled.
  const size_t kh_n = kMode == kNchwcUnit ? 1 : p->kh, kw_n = kMode == kNchwcUnit ? 1 : p->kw;
  for (size_t kh = 0; kh < kh_n; ++kh) {
    for (size_t kw = 0; kw < kw_n; ++kw) {
      const float* x = x_cb + kh * p->in_kh_stride + kw * p->in_kw_stride;
      const float* w = w_cb + kh * p->w_kh_stride + kw * cin * kC;
      if constexpr (IsNchwc(kMode)) {
        if constexpr (kShort) {
          // The 4-block tiles run four channels to an iteration, spelled out: GCC 12 left
          // `#pragma GCC unroll 4` on the plain loop unapplied there (one channel and a loop
          // branch per 24 FMAs). With the tap known, a hot 4-block tile over 384 pixels, median
          // of 41 interleaved rounds on Zen 5: K = 16 221 -> 234 GFLOP/s, K = 64 227 -> 236.
          // Narrower tiles keep the plain loop: spelled out, they ran 2-4% slower. (Full 4 x 6
          // tiles of a 1x1 now run PointRowN; these serve a half last block, the last columns
          // of a row and Zen 4's prefetching first tile.)
          static_assert(n % 4 == 0);
          constexpr size_t kU = OB == 4 ? 4 : n;
          for (size_t c4 = 0; c4 < n; c4 += kU) {
#pragma GCC unroll 4
            for (size_t ci = c4; ci < c4 + kU; ++ci) {
              const float* xc = x + ci;
              // One opaque pointer per channel: at a known stride its columns are then
              // displacements from it, where GCC otherwise keeps an offset register per column.
              if constexpr (kMode == kNchwcUnit) asm("" : "+r"(xc));
              Channel<OB, T, kHalf, kPf>(acc, half, xc, w + ci * kC, ows, p, pf);
            }
          }
        } else {
          // The next call's weights of this tap, pulled ahead of its channels (a test per
          // channel put a stack load and a branch beside every 24 FMAs).
          if (pf != 0) {
            for (size_t o = 0; o < p->prefetch_blocks; ++o) {
              for (size_t ci = 0; ci < n; ++ci) {
                _mm_prefetch(reinterpret_cast<const char*>(w + pf + o * p->w_ob_stride + ci * kC),
                             _MM_HINT_T1);
              }
            }
          }
#pragma GCC unroll 16
          for (size_t ci = 0; ci < n; ++ci) {
            Channel<OB, T, kHalf>(acc, half, x + ci, w + ci * kC, ows, p);
          }
        }
      } else {
        const size_t step = kMode == kStemAny ? ows : kMode;
        for (size_t ci = 0; ci < cin; ++ci) {
          Channel<OB, T, kHalf>(acc, half, x + ci * p->in_ci_stride, w + ci * kC, step, p);
        }
      }
    }
  }
}

// kIc8: the last input block holds 8 real channels (24 = 16 + 8 input channels), and only
// those run. Other partial counts run all 16 lanes (their weights are zero); the models have
// none.
template <size_t OB, size_t T, bool kHalf, bool kIc8, size_t kMode, bool kShort, bool kPf>
__attribute__((always_inline)) inline void TileBody(const F32ConvNchwcParams* p,
                                                    const float* input, float* output,
                                                    ptrdiff_t pf = 0) {
  constexpr size_t kZ = kHalf ? OB - 1 : OB;
  __m512 acc[OB][T];
  __m256 half[T];
  __m512 bias[OB];
#pragma GCC unroll 4
  for (size_t o = 0; o < OB; ++o) {
    bias[o] = p->bias ? _mm512_loadu_ps(p->bias + o * kC) : _mm512_setzero_ps();
  }
#pragma GCC unroll 24
  for (size_t t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (size_t o = 0; o < OB; ++o) acc[o][t] = bias[o];
    half[t] = _mm512_castps512_ps256(bias[OB - 1]);
  }
  const size_t full = kIc8 ? p->ic_blocks - 1 : p->ic_blocks;
  for (size_t cb = 0; cb < full; ++cb) {
    Block<OB, T, kHalf, kMode, kC, kPf, kShort>(p, acc, half, input + cb * p->in_cb_stride,
                                                p->weights + cb * p->w_cb_stride, pf);
  }
  if constexpr (kIc8) {
    Block<OB, T, kHalf, kMode, 8, kPf, kShort>(p, acc, half, input + full * p->in_cb_stride,
                                               p->weights + full * p->w_cb_stride, pf);
  }
#pragma GCC unroll 4
  for (size_t o = 0; o < kZ; ++o) Store<T, kShort>(p, acc[o], o, output);
  if constexpr (kHalf) {
    // The upper 8 lanes get what a zero product gives them: the bias, clamped.
#pragma GCC unroll 24
    for (size_t t = 0; t < T; ++t) {
      acc[OB - 1][t] = _mm512_castpd_ps(_mm512_insertf64x4(
          _mm512_castps_pd(bias[OB - 1]), _mm256_castps_pd(half[t]), 0));
    }
    Store<T, kShort>(p, acc[OB - 1], OB - 1, output);
  }
}

template <size_t OB, size_t T, bool kHalf, bool kIc8, size_t kMode>
__attribute__((noinline)) void TileCall(const F32ConvNchwcParams* p, const float* input,
                                        float* output, ptrdiff_t pf) {
  TileBody<OB, T, kHalf, kIc8, kMode, false, false>(p, input, output, pf);
}

// A short tile runs inline in its row; a long one is a call (a tenth of the code, and it ran
// as fast).
template <size_t OB, size_t T, bool kHalf, bool kIc8, size_t kMode, bool kShort,
          bool kPf = false>
__attribute__((always_inline)) inline void Tile(const F32ConvNchwcParams* p, const float* input,
                                                float* output, ptrdiff_t pf = 0) {
  if constexpr (kShort) {
    TileBody<OB, T, kHalf, kIc8, kMode, true, kPf>(p, input, output, pf);
  } else {
    TileCall<OB, T, kHalf, kIc8, kMode>(p, input, output, pf);
  }
}

template <size_t OB, size_t T, bool kHalf, bool kIc8, size_t kMode, bool kShort,
          bool kPf = false>
void Remainder(const F32ConvNchwcParams* p, size_t j, size_t r, ptrdiff_t pf = 0) {
  if constexpr (T > 1) {
    if (r == T) {
      return Tile<OB, T, kHalf, kIc8, kMode, kShort, kPf>(p, p->input + j * p->in_ow_stride,
                                                           p->output + j * kC, pf);
    }
    return Remainder<OB, T - 1, kHalf, kIc8, kMode, kShort, kPf>(p, j, r, pf);
  } else {
    Tile<OB, 1, kHalf, kIc8, kMode, kShort, kPf>(p, p->input + j * p->in_ow_stride,
                                                 p->output + j * kC, pf);
  }
}

// The first tile pulls the next call's weights into L2 (the rest reuse this call's from L1).
// kShort: at most 4 blocks of channels and taps (a 1x1 with K <= 64), whose weights stay in L1
// and whose stores are a large share of the work. Their tiles run 4 channels to an iteration,
// inline in the row, and the prefetching first tile is an instantiation of its own (kPf):
// fully unrolled, GCC spilled accumulators and shuffled registers across the 16 channels, and
// tested the prefetch per channel. With the Store change, bench_conv --algo direct_nchwc, 1
// thread, best of 3 alternating runs against the old code: 32 -> 16 at 112x112 93.2 -> 97.5
// GFLOP/s, 16 -> 96 at 112x112 91.3 -> 95.2, 24 -> 144 at 56x56 99.5 -> 101.4, 64 -> 64 at
// 56x56 108.6 -> 110.0. Longer K keep the full unroll and the call per tile: streaming weights
// from L2 (960 -> 320 at 7x7, 1024 -> 2048 s2 at 14x14) they lost 2 to 8% with the short
// tile's code.
template <size_t OB, bool kHalf, bool kIc8, size_t kMode, bool kShort>
void RowOf(const F32ConvNchwcParams* p) {
  constexpr size_t kT = 24 / OB;
  const ptrdiff_t pf = p->prefetch ? p->prefetch - p->weights : 0;
  if (p->even_cut) {
    // The driver's equal cut in one call (F32ConvNchwcParams::even_cut), the first tile pulling
    // the next call's weights as below.
    const size_t ow = p->ow, tiles = (ow + kT - 1) / kT;
    for (size_t i = 0, j = 0; i < tiles; ++i) {
      const size_t end = ow * (i + 1) / tiles;
      if (kShort && i == 0 && pf != 0) {
        Remainder<OB, kT, kHalf, kIc8, kMode, kShort, true>(p, j, end - j, pf);
      } else {
        Remainder<OB, kT, kHalf, kIc8, kMode, kShort>(p, j, end - j, i == 0 ? pf : 0);
      }
      j = end;
    }
    return;
  }
  size_t j = 0;
  if constexpr (kShort) {
    if (pf != 0) {
      if (p->ow < kT) {
        return Remainder<OB, kT - 1, kHalf, kIc8, kMode, kShort, true>(p, 0, p->ow, pf);
      }
      Tile<OB, kT, kHalf, kIc8, kMode, kShort, true>(p, p->input, p->output, pf);
      j = kT;
    }
  }
  for (; j + kT <= p->ow; j += kT) {
    Tile<OB, kT, kHalf, kIc8, kMode, kShort>(p, p->input + j * p->in_ow_stride,
                                             p->output + j * kC, j == 0 ? pf : 0);
  }
  if (j < p->ow) {
    Remainder<OB, kT - 1, kHalf, kIc8, kMode, kShort>(p, j, p->ow - j, j == 0 ? pf : 0);
  }
}

// A 1x1 over pixels in calls of OB blocks: tiles of T columns written out plainly, one pointer
// per operand and the channel loop left to GCC (an unroll pragma measured slower), where the
// general tile's Block/Channel layers left GCC more registers to keep and spill at every
// tile's start. A hot row of 384 pixels, median of 41 interleaved rounds on Zen 5, general tile
// -> this: K = 16 232 -> 237 GFLOP/s, K = 32 253 -> 257; rows of a 56x56 plane at K = 256 255
// -> 260; K = 1024 on 49 pixels level; over a 112x112 plane (the output leaves L2) K = 16 229
// -> 239. bench_conv --blocked, 1 thread, kiln/oneDNN median of 3 alternating runs, against
// the general tile: geomean over the 59 1x1 layers 0.978 -> 0.990 (128 -> 512 at 28x28 0.96
// -> 0.99, DenseNet's 128 -> 128 at 56x56 0.94 -> 0.99); these are the 4 x 6 tiles (2 x 12:
// see Row). The last columns (fewer than T) run the short general tile. Not where the next
// pair's weights are prefetched (Zen 4).
// A count of input channels known at compile time (not std::integral_constant: an ISA file
// instantiates no template that other files share).
template <size_t N>
struct Channels {
  static constexpr size_t n = N;
};

template <size_t OB, size_t T, bool kIc8>
[[gnu::always_inline]] inline void PointTile(const F32ConvNchwcParams* p, size_t j) {
  const float* in = p->input;
  const float* w = p->weights;
  float* out = p->output;
  const size_t icb = p->ic_blocks, in_cb = p->in_cb_stride, w_ob = p->w_ob_stride;
  const size_t full = kIc8 ? icb - 1 : icb;
  __m512 acc[OB][T];
#pragma GCC unroll 4
  for (size_t o = 0; o < OB; ++o) {
    const __m512 b = p->bias ? _mm512_loadu_ps(p->bias + o * kC) : _mm512_setzero_ps();
#pragma GCC unroll 16
    for (size_t t = 0; t < T; ++t) acc[o][t] = b;
  }
  // The block's channels: 16, or 8 in a last block of 8.
  auto block = [&](size_t cb, auto chans) {
    const float* x = in + cb * in_cb + j * kC;
    const float* wc = w + cb * kC * kC;
    for (size_t ci = 0; ci < decltype(chans)::n; ++ci) {
      __m512 wz[OB];
#pragma GCC unroll 4
      for (size_t o = 0; o < OB; ++o) wz[o] = _mm512_loadu_ps(wc + o * w_ob + ci * kC);
#pragma GCC unroll 16
      for (size_t t = 0; t < T; ++t) {
        const __m512 xv = _mm512_set1_ps(x[t * kC + ci]);
#pragma GCC unroll 4
        for (size_t o = 0; o < OB; ++o) acc[o][t] = _mm512_fmadd_ps(xv, wz[o], acc[o][t]);
      }
    }
  };
  for (size_t cb = 0; cb < full; ++cb) block(cb, Channels<kC>{});
  if constexpr (kIc8) block(full, Channels<8>{});
#pragma GCC unroll 4
  for (size_t o = 0; o < OB; ++o) Store<T, true>(p, acc[o], o, out + j * kC);
}

// With even_cut, the equal cut's tiles of T and T - 1 columns run the plain form; 49 pixels
// (a 7x7 map) in 4-block calls are 9 tiles of 5 or 6 columns, which the driver made a call
// each.
template <size_t OB, size_t T, bool kIc8>
void PointRowN(const F32ConvNchwcParams* p) {
  if (p->even_cut) {
    const size_t ow = p->ow, tiles = (ow + T - 1) / T;
    for (size_t i = 0, j = 0; i < tiles; ++i) {
      const size_t end = ow * (i + 1) / tiles;
      if (end - j == T) {
        PointTile<OB, T, kIc8>(p, j);
      } else if (end - j == T - 1) {
        PointTile<OB, T - 1, kIc8>(p, j);
      } else {
        Remainder<OB, T - 2, false, kIc8, kNchwcUnit, true>(p, j, end - j, 0);
      }
      j = end;
    }
    return;
  }
  size_t j = 0;
  for (; j + T <= p->ow; j += T) PointTile<OB, T, kIc8>(p, j);
  if (j < p->ow) Remainder<OB, T - 1, false, kIc8, kNchwcUnit, true>(p, j, p->ow - j, 0);
}

template <size_t OB, bool kHalf, bool kIc8, size_t kMode>
void Row(const F32ConvNchwcParams* p) {
  // A 1x1 at unit stride runs kNchwcUnit, whose column stride and one tap are compile-time.
  const bool point = kMode == kNchwc && p->in_ow_stride == kC && p->kh == 1 && p->kw == 1;
  if constexpr (OB == 4 && !kHalf && kMode == kNchwc) {
    if (point && !p->prefetch) return PointRowN<4, 6, kIc8>(p);
  }
  if (kMode == kNchwc && p->ic_blocks * p->kh * p->kw <= 4) {
    return point ? RowOf<OB, kHalf, kIc8, kNchwcUnit, true>(p)
                 : RowOf<OB, kHalf, kIc8, kMode, true>(p);
  }
  // Calls of 2 blocks (32 output channels, or the last pair of a layer) over K > 64 run the
  // plain form too, 12 columns a tile. Median of 21 interleaved rounds of conv::Run, warm, Zen 5,
  // general tile -> this: 144 -> 32 at 28x28 249 -> 260 GFLOP/s, 192 -> 32 255 -> 261, 96 -> 32
  // at 56x56 239 -> 254, 80 -> 32 at 28x28 257 -> 260, 160 -> 32 at 14x14 level. At K <= 64
  // the short tile above stays ahead (32 -> 32 at 56x56 252 vs 241); 14-column tiles ran as
  // 12; the form for 1 block (24 columns) or 3 (8) lost 37% / gained under 1.5%.
  if constexpr (OB == 2 && !kHalf && kMode == kNchwc) {
    if (point && !p->prefetch) return PointRowN<2, 12, kIc8>(p);
  }
  // A long 1x1 over pixels too: its tile's 16 unrolled channels then address their columns at
  // fixed offsets (bench_conv --blocked, 1 thread, Zen 5, kiln/oneDNN median of 3 alternating
  // runs, before PointRowN took the 4-block calls: geomean over the 59 1x1 layers 0.965 ->
  // 0.979; 72 -> 24 at 56x56, calls of 16 + 8 output channels, 0.93 -> 1.02).
  return point ? RowOf<OB, kHalf, kIc8, kNchwcUnit, false>(p)
               : RowOf<OB, kHalf, kIc8, kMode, false>(p);
}

template <bool kHalf, bool kIc8, size_t kMode>
void Rows(const F32ConvNchwcParams* p) {
  if constexpr (kMode == kNchwc) {
    if (p->oc_blocks == 4) return Row<4, kHalf, kIc8, kMode>(p);
    if (p->oc_blocks == 3) return Row<3, kHalf, kIc8, kMode>(p);
  }
  return p->oc_blocks > 1 ? Row<2, kHalf, kIc8, kMode>(p) : Row<1, kHalf, kIc8, kMode>(p);
}

}  // namespace

void f32_conv_nchwc16__avx512f(const F32ConvNchwcParams* p) {
  // Stems (few output blocks, none partial in the models) keep the full-width tiles only.
  if (p->in_c != 0) {
    if (p->in_ow_stride == 1) return Rows<false, false, 1>(p);
    if (p->in_ow_stride == 2) return Rows<false, false, 2>(p);
    return Rows<false, false, kStemAny>(p);
  }
  const bool half = p->oc_last != 0 && p->oc_last <= 8, ic8 = p->ic_last == 8;
  if (half) return ic8 ? Rows<true, true, kNchwc>(p) : Rows<true, false, kNchwc>(p);
  return ic8 ? Rows<false, true, kNchwc>(p) : Rows<false, false, kNchwc>(p);
}

}  // namespace kiln::ukernels
