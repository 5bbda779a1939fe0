// Direct convolution on NCHW8c, AVX2 + FMA. Register budget (16 ymm): a tile of 6 output columns
// x 2 output channel blocks = 12 accumulators, 2 weight vectors, 1 broadcast input. Each
// broadcast feeds 2 FMAs and each weight load 6, so loads stay under the 2 per cycle that keep
// both FMA pipes busy.
// An image stem (in_c = 1..4 input channels, planes in_ci_stride apart) runs the same tiles with
// a loop over its in_c channels instead of the unrolled c.
#include <immintrin.h>

#include "kernels/ukernels/f32_conv.h"

namespace kiln::ukernels {
namespace {

constexpr size_t kC = 8;

// The modes of a tile: kNchwc (in_c = 0: c contiguous input channels, unrolled), or an image
// stem (in_c = 1..4 planes in_ci_stride apart) whose in_ow_stride is 1 or 2 (the mode's value:
// each broadcast then reads a fixed offset from one pointer) or any (kStemAny). kNchwcUnit is
// kNchwc with columns kC floats apart (stride 1) known at compile time, so that a channel's
// columns are displacements from one pointer rather than an offset register each (as in the
// AVX-512 kernel).
constexpr size_t kNchwc = 0, kStemAny = 3, kNchwcUnit = 4;

// One input channel: acc[o][t] += x[t * ows] * w[o * w_ob_stride][0..kC).
template <size_t OB, size_t T>
__attribute__((always_inline)) inline void Channel(__m256 (&acc)[OB][T], const float* x,
                                                   const float* w, size_t ows,
                                                   size_t w_ob_stride) {
  const __m256 w0 = _mm256_loadu_ps(w);
  __m256 w1 = w0;
  if constexpr (OB > 1) w1 = _mm256_loadu_ps(w + w_ob_stride);
#pragma GCC unroll 16
  for (size_t t = 0; t < T; ++t) {
    const __m256 xv = _mm256_broadcast_ss(x + t * ows);
    acc[0][t] = _mm256_fmadd_ps(xv, w0, acc[0][t]);
    if constexpr (OB > 1) acc[OB - 1][t] = _mm256_fmadd_ps(xv, w1, acc[OB - 1][t]);
  }
}

template <size_t OB, size_t T, size_t kMode>
void Tile(const F32ConvNchwcParams* p, const float* input, float* output) {
  // The accumulators start from the bias.
  __m256 acc[OB][T];
  __m256 bias[OB];
#pragma GCC unroll 2
  for (size_t o = 0; o < OB; ++o) {
    bias[o] = p->bias ? _mm256_loadu_ps(p->bias + o * kC) : _mm256_setzero_ps();
  }
#pragma GCC unroll 16
  for (size_t t = 0; t < T; ++t) {
#pragma GCC unroll 2
    for (size_t o = 0; o < OB; ++o) acc[o][t] = bias[o];
  }
  constexpr bool kBlocked = kMode == kNchwc || kMode == kNchwcUnit;
  const size_t ows = kMode == kNchwcUnit ? kC : p->in_ow_stride;
  const size_t cin = kBlocked ? kC : p->in_c;
  // A partial last input block runs its real channels only (the other weights are zero).
  const size_t last = kBlocked && p->ic_last != 0 ? p->ic_last : kC;
  for (size_t cb = 0; cb < p->ic_blocks; ++cb) {
    const float* x_cb = input + cb * p->in_cb_stride;
    const float* w_cb = p->weights + cb * p->w_cb_stride;
    const size_t n = cb + 1 == p->ic_blocks ? last : kC;
    for (size_t kh = 0; kh < p->kh; ++kh) {
      for (size_t kw = 0; kw < p->kw; ++kw) {
        const float* x = x_cb + kh * p->in_kh_stride + kw * p->in_kw_stride;
        const float* w = w_cb + kh * p->w_kh_stride + kw * cin * kC;
        if constexpr (kBlocked) {
          if (n == kC) {
            const float* xt = x;
            if constexpr (kMode == kNchwcUnit) asm("" : "+r"(xt));  // kept opaque to GCC
#pragma GCC unroll 8
            for (size_t ci = 0; ci < kC; ++ci) {
              Channel(acc, xt + ci, w + ci * kC, ows, p->w_ob_stride);
            }
          } else {
            for (size_t ci = 0; ci < n; ++ci) {
              Channel(acc, x + ci, w + ci * kC, ows, p->w_ob_stride);
            }
          }
        } else {
          const size_t step = kMode == kStemAny ? ows : kMode;
          for (size_t ci = 0; ci < cin; ++ci) {
            Channel(acc, x + ci * p->in_ci_stride, w + ci * kC, step, p->w_ob_stride);
          }
        }
      }
    }
  }
  // The parameters are read before the first store (a store may alias *p, and testing them per
  // column reloaded them after each one), each step runs over the whole tile, and a clamp bound
  // at infinity is skipped.
  const bool accumulate = p->accumulate != 0;
  const float min = p->min, max = p->max;
  const size_t out_ob_stride = p->out_ob_stride;
  if (accumulate) {
#pragma GCC unroll 2
    for (size_t o = 0; o < OB; ++o) {
#pragma GCC unroll 16
      for (size_t t = 0; t < T; ++t) {
        acc[o][t] = _mm256_add_ps(acc[o][t], _mm256_loadu_ps(output + o * out_ob_stride + t * kC));
      }
    }
  }
  // The bound first: vmaxps/vminps return the second operand where either is NaN (a NaN stays).
  if (min > -__builtin_inff()) {
    const __m256 v = _mm256_set1_ps(min);
#pragma GCC unroll 2
    for (size_t o = 0; o < OB; ++o) {
#pragma GCC unroll 16
      for (size_t t = 0; t < T; ++t) acc[o][t] = _mm256_max_ps(v, acc[o][t]);
    }
  }
  if (max < __builtin_inff()) {
    const __m256 v = _mm256_set1_ps(max);
#pragma GCC unroll 2
    for (size_t o = 0; o < OB; ++o) {
#pragma GCC unroll 16
      for (size_t t = 0; t < T; ++t) acc[o][t] = _mm256_min_ps(v, acc[o][t]);
    }
  }
#pragma GCC unroll 2
  for (size_t o = 0; o < OB; ++o) {
#pragma GCC unroll 16
    for (size_t t = 0; t < T; ++t) _mm256_storeu_ps(output + o * out_ob_stride + t * kC, acc[o][t]);
  }
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
  constexpr size_t kT = OB > 1 ? 6 : 12;
  size_t j = 0;
  for (; j + kT <= p->ow; j += kT) {
    Tile<OB, kT, kMode>(p, p->input + j * p->in_ow_stride, p->output + j * kC);
  }
  if (j < p->ow) Remainder<OB, kT - 1, kMode>(p, j, p->ow - j);
}

}  // namespace

void f32_conv_nchwc8__avx2_fma(const F32ConvNchwcParams* p) {
  const size_t mode = p->in_c == 0 ? (p->in_ow_stride == kC ? kNchwcUnit : kNchwc)
                      : p->in_ow_stride == 1 || p->in_ow_stride == 2 ? p->in_ow_stride
                                                                     : kStemAny;
  const bool two = p->oc_blocks > 1;
  switch (mode) {
    case kNchwc:
      return two ? Row<2, kNchwc>(p) : Row<1, kNchwc>(p);
    case kNchwcUnit:
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
