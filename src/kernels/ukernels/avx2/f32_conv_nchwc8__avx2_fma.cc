// Direct convolution on NCHW8c, AVX2 + FMA. Register budget (16 ymm): a tile of 6 output columns
// x 2 output channel blocks = 12 accumulators, 2 weight vectors, 1 broadcast input (one block:
// 12 columns). Each broadcast feeds 2 FMAs and each weight load 6: 8 loads per 12 FMAs. A 1x1 at
// unit stride also runs 3 blocks x 4 columns (all 16 registers), which the driver uses for an
// odd count of blocks rather than a lone block, whose 1 x 12 tile is broadcast-bound (hot data,
// Zen 5 at the AVX2 level, K = 16..144: 82-92 GFLOP/s, against 107-114 for 2 x 6 and 3 x 4).
// The channels of a tap run as a plain loop with one pointer step per channel, as the GEMM
// tile's k loop does: with the 8 channels unrolled at fixed offsets (the former form, which also
// recomputed its addresses per block and tap), GCC spilled accumulators, 15 of 16 registers
// being live. Hot 1x1 rows of 96 pixels, 2 blocks, 1 thread, Zen 5 (AVX2 level), speed ratio
// of 31 interleaved rounds (median), unrolled -> loop: K = 16 1.16x, 24 1.16x, 32 1.12x, 64
// 1.11x, 256 1.11x (one block, K = 64: 1.13x); best rounds K = 16 79 -> 94 GFLOP/s, K = 256 97
// -> 107 (FMA peak ~115). Rows of a 3x3: 1.01x (stride 1, 6 columns) to 1.03x (stride 2, 5).
// The accumulators start from the bias; the clamp bounds are broadcast after the k loop.
// An image stem (in_c = 1..4 input channels, planes in_ci_stride apart) runs the same tiles with
// its in_c channels in place of a block's 8.
#include <immintrin.h>

#include "kernels/ukernels/avx2/f32_clamp_tile.h"
#include "kernels/ukernels/f32_conv.h"

namespace kiln::ukernels {
namespace {

constexpr size_t kC = 8;

// The modes of a tile: kNchwc (in_c = 0: c contiguous input channels), or an image stem (in_c =
// 1..4 planes in_ci_stride apart) whose in_ow_stride is 1 or 2 (the mode's value: each broadcast
// then reads a fixed offset from one pointer) or any (kStemAny). kNchwcUnit is kNchwc with
// columns kC floats apart (stride 1) known at compile time, so that a channel's columns are
// displacements from one pointer rather than an offset register each; kPoint is kNchwcUnit with
// one tap (a 1x1), whose loops over taps then go away.
constexpr size_t kNchwc = 0, kStemAny = 3, kNchwcUnit = 4, kPoint = 5;
constexpr bool IsBlocked(size_t mode) { return mode == kNchwc || mode >= kNchwcUnit; }

// n input channels of one tap: acc[o][t] += x[t * ows] * w[o * w_ob][0..kC), then the next
// channel at x + x_step, w + kC.
template <size_t OB, size_t T, size_t kMode>
[[gnu::always_inline]] inline void Channels(__m256 (&acc)[OB][T], const float* x, const float* w,
                                            size_t n, size_t ows_rt, size_t x_step,
                                            size_t w_ob) {
  const size_t ows = kMode >= kNchwcUnit ? kC : kMode == 1 || kMode == 2 ? kMode : ows_rt;
  for (size_t ci = 0; ci < n; ++ci, x += x_step, w += kC) {
    __m256 wz[OB];
#pragma GCC unroll 3
    for (size_t o = 0; o < OB; ++o) wz[o] = _mm256_loadu_ps(w + o * w_ob);
#pragma GCC unroll 12
    for (size_t t = 0; t < T; ++t) {
      const __m256 xv = _mm256_broadcast_ss(x + t * ows);
#pragma GCC unroll 3
      for (size_t o = 0; o < OB; ++o) acc[o][t] = _mm256_fmadd_ps(xv, wz[o], acc[o][t]);
    }
  }
}

template <size_t OB, size_t T, size_t kMode>
[[gnu::always_inline]] inline void TileBody(const F32ConvNchwcParams* p, const float* input,
                                            float* output) {
  __m256 acc[OB][T];
#pragma GCC unroll 3
  for (size_t o = 0; o < OB; ++o) {
    const __m256 b = p->bias ? _mm256_loadu_ps(p->bias + o * kC) : _mm256_setzero_ps();
#pragma GCC unroll 12
    for (size_t t = 0; t < T; ++t) acc[o][t] = b;
  }
  constexpr bool kBlocked = IsBlocked(kMode);
  const size_t cin = kBlocked ? kC : p->in_c;
  const size_t x_step = kBlocked ? 1 : p->in_ci_stride;
  // A partial last input block runs its real channels only (the other weights are zero).
  const size_t last = kBlocked && p->ic_last != 0 ? p->ic_last : cin;
  const size_t kh_n = kMode == kPoint ? 1 : p->kh, kw_n = kMode == kPoint ? 1 : p->kw;
  const size_t ows = p->in_ow_stride, w_ob = p->w_ob_stride;
  for (size_t cb = 0; cb < p->ic_blocks; ++cb) {
    const float* x_cb = input + cb * p->in_cb_stride;
    const float* w_cb = p->weights + cb * p->w_cb_stride;
    const size_t n = cb + 1 == p->ic_blocks ? last : cin;
    for (size_t kh = 0; kh < kh_n; ++kh) {
      for (size_t kw = 0; kw < kw_n; ++kw) {
        Channels<OB, T, kMode>(acc, x_cb + kh * p->in_kh_stride + kw * p->in_kw_stride,
                               w_cb + kh * p->w_kh_stride + kw * cin * kC, n, ows, x_step, w_ob);
      }
    }
  }
  // The parameters are read before the first store (a store may alias *p, and testing them per
  // column reloaded them after each one), each step runs over the whole tile (ClampTile).
  const bool accumulate = p->accumulate != 0;
  const size_t out_ob = p->out_ob_stride;
  if (accumulate) {
#pragma GCC unroll 3
    for (size_t o = 0; o < OB; ++o) {
#pragma GCC unroll 12
      for (size_t t = 0; t < T; ++t) {
        acc[o][t] = _mm256_add_ps(acc[o][t], _mm256_loadu_ps(output + o * out_ob + t * kC));
      }
    }
  }
  avx2::ClampTile(acc, &p->min, &p->max);
#pragma GCC unroll 3
  for (size_t o = 0; o < OB; ++o) {
#pragma GCC unroll 12
    for (size_t t = 0; t < T; ++t) _mm256_storeu_ps(output + o * out_ob + t * kC, acc[o][t]);
  }
}

// The full tiles run inline in their row's loop; the remainder is a call per width.
template <size_t OB, size_t T, size_t kMode>
[[gnu::noinline]] void Tile(const F32ConvNchwcParams* p, const float* input, float* output) {
  TileBody<OB, T, kMode>(p, input, output);
}

template <size_t OB, size_t T, size_t kMode>
void Remainder(const F32ConvNchwcParams* p, size_t j, size_t r) {
  if constexpr (T > 1) {
    if (r == T) return Tile<OB, T, kMode>(p, p->input + j * p->in_ow_stride, p->output + j * kC);
    return Remainder<OB, T - 1, kMode>(p, j, r);
  } else {
    Tile<OB, 1, kMode>(p, p->input + j * p->in_ow_stride, p->output + j * kC);
  }
}

template <size_t OB, size_t kMode>
void Row(const F32ConvNchwcParams* p) {
  constexpr size_t kT = OB == 3 ? 4 : OB == 2 ? 6 : 12;
  if (p->even_cut) {
    // The driver's equal cut in one call: it cost a call through the dispatch and a copy of the
    // parameters per tile (9 tiles of 5-6 columns for a 1x1 over a 7x7 map).
    const size_t ow = p->ow, tiles = (ow + kT - 1) / kT;
    for (size_t i = 0, j = 0; i < tiles; ++i) {
      const size_t end = ow * (i + 1) / tiles;
      if (end - j == kT) {
        TileBody<OB, kT, kMode>(p, p->input + j * p->in_ow_stride, p->output + j * kC);
      } else {
        Remainder<OB, kT - 1, kMode>(p, j, end - j);
      }
      j = end;
    }
    return;
  }
  size_t j = 0;
  for (; j + kT <= p->ow; j += kT) {
    TileBody<OB, kT, kMode>(p, p->input + j * p->in_ow_stride, p->output + j * kC);
  }
  if (j < p->ow) Remainder<OB, kT - 1, kMode>(p, j, p->ow - j);
}

}  // namespace

void f32_conv_nchwc8__avx2_fma(const F32ConvNchwcParams* p) {
  const size_t mode = p->in_c == 0 ? (p->in_ow_stride == kC ? kNchwcUnit : kNchwc)
                      : p->in_ow_stride == 1 || p->in_ow_stride == 2 ? p->in_ow_stride
                                                                     : kStemAny;
  if (p->oc_blocks == 3) {
    if (mode == kNchwcUnit && p->kh == 1 && p->kw == 1) return Row<3, kPoint>(p);
    if (mode == kNchwcUnit) return Row<3, kNchwcUnit>(p);
    if (mode == kNchwc) return Row<3, kNchwc>(p);
    // A stem's 3 blocks run as 2 + 1.
    F32ConvNchwcParams q = *p;
    q.oc_blocks = 2;
    q.oc_last = 0;
    f32_conv_nchwc8__avx2_fma(&q);
    q.oc_blocks = 1;
    q.oc_last = p->oc_last;
    q.weights = p->weights + 2 * p->w_ob_stride;
    q.output = p->output + 2 * p->out_ob_stride;
    q.bias = p->bias ? p->bias + 2 * kC : nullptr;
    return f32_conv_nchwc8__avx2_fma(&q);
  }
  const bool two = p->oc_blocks > 1;
  switch (mode) {
    case kNchwc:
      return two ? Row<2, kNchwc>(p) : Row<1, kNchwc>(p);
    case kNchwcUnit:
      if (p->kh == 1 && p->kw == 1) return two ? Row<2, kPoint>(p) : Row<1, kPoint>(p);
      return two ? Row<2, kNchwcUnit>(p) : Row<1, kNchwcUnit>(p);
    case 1:
      return two ? Row<2, 1>(p) : Row<1, 1>(p);
    case 2:
      return two ? Row<2, 2>(p) : Row<1, 2>(p);
    default:
      return two ? Row<2, kStemAny>(p) : Row<1, kStemAny>(p);
  }
}

}  // namespace kiln::ukernels
