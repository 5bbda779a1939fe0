// kDirectNchwc: direct convolution on NCHWc (groups == 1). A padded layer first copies its input
// into a zero-padded buffer in the workspace, so that the tiles of an output row are cut freely
// and each reads its window at fixed offsets. Clipping the window at the borders instead (no
// copy) split each row into runs with the same clipped taps: on a 7x7 map with pad 1, runs of
// 1, 5 and 1 columns, and a 1-column run keeps 2 accumulators, latency-bound. The copy costs one
// pass over the input against C_out * KH * KW multiplies per input value. Taps that read only
// padding for a whole row or a whole tile are still skipped (a third of the work of the first
// and last rows of a 7x7 map). bench_conv --set 3x3 --blocked, 1 thread, Zen 4, AVX-512:
// 3x3 512->512 at 7x7 3.2 -> 2.04 ms, GoogLeNet's 7x7 layers 0.456 -> 0.378 ms, 3x3 s2 512->512
// at 14x14 3.1 -> 2.2 ms; 56x56 maps unchanged. Work items are (image, pair of output channel
// blocks, output row, chunk of the row).
#include <algorithm>
#include <cstring>
#include <memory>

#include "kernels/conv/conv_ukernels.h"
#include "kernels/conv/drivers.h"

namespace kiln::conv {

Status PrepareDirectNchwc(const float* weights, PreparedConv* conv) {
  using A = PreparedConvAccess;
  const ConvParams& p = A::params(*conv);
  const ConvNchwcUkernel& uk = SelectConvNchwcUkernel(A::isa(*conv));
  const size_t c = uk.block, cb_n = (p.c + c - 1) / c, mb_n = (p.m + c - 1) / c;
  const size_t taps = p.kh * p.kw;
  const size_t size = mb_n * cb_n * taps * c * c;
  std::shared_ptr<float> w(new float[size](), std::default_delete<float[]>());
  for (size_t m = 0; m < p.m; ++m) {
    for (size_t ci = 0; ci < p.c; ++ci) {
      for (size_t t = 0; t < taps; ++t) {
        const size_t dst = (((m / c * cb_n + ci / c) * taps + t) * c + ci % c) * c + m % c;
        w.get()[dst] = weights[(m * p.c + ci) * taps + t];
      }
    }
  }
  A::weights(*conv) = std::move(w);
  A::block(*conv) = c;
  return Status::Ok();
}

namespace {

// The zero-padded copy of the input: n * ceil(C/c) planes of hp x wp pixels (no copy: floats 0).
struct Padded {
  size_t hp = 0, wp = 0;
  size_t floats = 0;
};

Padded PaddedOf(const ConvParams& p, size_t c) {
  Padded g;
  if (!(p.pad_top || p.pad_left || p.pad_bottom || p.pad_right)) return g;
  g.hp = p.h + p.pad_top + p.pad_bottom;
  g.wp = p.w + p.pad_left + p.pad_right;
  g.floats = p.n * ((p.c + c - 1) / c) * g.hp * g.wp * c;
  return g;
}

// Copies x (NCHWc: n * ceil(C/c) planes of h x w) into `dst` inside its zero border.
void PadInput(const ConvParams& p, const Padded& g, size_t c, const float* x, float* dst,
              ThreadPool* pool) {
  const size_t rows = p.n * ((p.c + c - 1) / c) * g.hp;
  const size_t threads = std::min(ThreadCount(pool), rows);
  ParallelFor(pool, threads, [&](size_t t) {
    for (size_t r = rows * t / threads; r < rows * (t + 1) / threads; ++r) {
      const size_t plane = r / g.hp, row = r % g.hp;
      float* d = dst + r * g.wp * c;
      if (row < p.pad_top || row >= p.pad_top + p.h) {
        std::fill_n(d, g.wp * c, 0.0f);
        continue;
      }
      std::fill_n(d, p.pad_left * c, 0.0f);
      std::memcpy(d + p.pad_left * c, x + (plane * p.h + row - p.pad_top) * p.w * c,
                  p.w * c * sizeof(float));
      std::fill_n(d + (p.pad_left + p.w) * c, p.pad_right * c, 0.0f);
    }
  });
}

// The taps [lo, hi) of output position `o`'s window (in the padded input: taps starting at
// o * stride, dilation apart) that land in the input [pad, pad + size); all taps when none do
// (the output is then the bias, and the padding the taps read is zero).
void ClipRange(size_t o, size_t taps, size_t dilation, size_t pad, size_t size, size_t stride,
               size_t* lo, size_t* hi) {
  const size_t start = o * stride;
  size_t l = 0;
  while (l < taps && start + l * dilation < pad) ++l;
  size_t h = l;
  while (h < taps && start + h * dilation < pad + size) ++h;
  if (l == h) {
    l = 0;
    h = taps;
  }
  *lo = l;
  *hi = h;
}

}  // namespace

size_t DirectNchwcWorkspace(const PreparedConv& conv, size_t /*threads*/) {
  return PaddedOf(conv.params(), conv.block()).floats;
}

Status RunDirectNchwc(const PreparedConv& conv, const float* x, float* y, const RunOptions& o,
                      float* workspace) {
  ConvParams p = conv.params();
  const ConvNchwcUkernel& uk = SelectConvNchwcUkernel(conv.isa());
  const size_t c = uk.block;
  if (c != conv.block()) return Status::Error("conv: NCHWc block changed since prepare");
  const size_t oh_n = p.out_h(), ow_n = p.out_w();
  const Padded pad = PaddedOf(p, c);
  if (pad.floats > 0) {
    if (!workspace) return Status::Error("conv: direct_nchwc needs its workspace");
    PadInput(p, pad, c, x, workspace, o.pool);
    // From here on the layer is the unpadded one over the copy, with the same output size.
    x = workspace;
    p.h = pad.hp;
    p.w = pad.wp;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 0;
  }
  const ConvParams& q = conv.params();
  bool clip = pad.floats > 0;  // skip the taps that read only padding
  // An unpadded 1x1 at stride 1 is a GEMM over the pixels: its input and output planes are one
  // row of H * W pixels each, so a tile fills its 12 or 24 columns even on 7x7 planes (a row of
  // 7 would leave most of the tile empty), cut into chunks of whole tiles for the threads.
  size_t rows = oh_n, cols = ow_n;
  size_t chunk_w = 0;  // 0: one work item per output row
  if (p.kh == 1 && p.kw == 1 && p.stride_h == 1 && p.stride_w == 1) {
    p.w *= p.h;
    p.h = 1;
    cols *= rows;
    rows = 1;
    chunk_w = 96;
    clip = false;  // a padded 1x1: the rows of the padded plane run as one
  }
  const size_t cb_n = (p.c + c - 1) / c, mb_n = (p.m + c - 1) / c;
  const size_t chunk = chunk_w == 0 ? cols : std::min(chunk_w, cols);
  const size_t chunks = (cols + chunk - 1) / chunk;
  const size_t pairs = (mb_n + uk.max_oc_blocks - 1) / uk.max_oc_blocks;
  const size_t items = p.n * pairs * rows * chunks;
  const Clamp clamp = ClampOf(o.epilogue);
  const float* bias = o.epilogue.bias_kind == gemm::BiasKind::kPerRow ? o.epilogue.bias : nullptr;
  const float* weights = PreparedConvAccess::weights(conv);

  ukernels::F32ConvNchwcParams base{};
  base.ic_blocks = cb_n;
  base.kh = p.kh;
  base.kw = p.kw;
  base.in_cb_stride = p.h * p.w * c;
  base.in_kh_stride = p.dilation_h * p.w * c;
  base.in_kw_stride = p.dilation_w * c;
  base.in_ow_stride = p.stride_w * c;
  base.w_cb_stride = p.kh * p.kw * c * c;
  base.w_kh_stride = p.kw * c * c;
  base.w_ob_stride = cb_n * base.w_cb_stride;
  base.out_ob_stride = rows * cols * c;
  base.min = clamp.min;
  base.max = clamp.max;
  base.accumulate = o.accumulate ? 1 : 0;

  const size_t threads = ThreadCount(o.pool);
  ParallelFor(o.pool, threads, [&](size_t t) {
    float bias_tail[64];  // bias of a pair of blocks that runs past M, zero-padded
    for (size_t item = items * t / threads; item < items * (t + 1) / threads; ++item) {
      // With clipping, the rows of a pair start in the middle: the first row of a pair pulls its
      // weights from L3, and a full-window row reads them in one sequential stream, where a
      // clipped row skips every third tap and leaves the rest to the next row (ResNet's
      // 512->512 at 7x7, 2.4 ms starting at row 0 against 2.04 ms).
      const size_t part = item % chunks, oh = (item / chunks + (clip ? rows / 2 : 0)) % rows;
      const size_t pair = item / chunks / rows % pairs, n = item / chunks / rows / pairs;
      const size_t ob0 = pair * uk.max_oc_blocks;
      const size_t nob = std::min(uk.max_oc_blocks, mb_n - ob0);
      ukernels::F32ConvNchwcParams k = base;
      k.oc_blocks = nob;
      k.bias = bias ? bias + ob0 * c : nullptr;
      if (bias && (ob0 + nob) * c > p.m) {
        for (size_t i = 0; i < nob * c; ++i) {
          bias_tail[i] = ob0 * c + i < p.m ? bias[ob0 * c + i] : 0.0f;
        }
        k.bias = bias_tail;
      }
      const float* w_pair = weights + ob0 * base.w_ob_stride;
      float* y_row = y + ((n * mb_n + ob0) * rows + oh) * cols * c;
      const float* x_row = x + (n * cb_n * p.h + oh * p.stride_h) * p.w * c;
      const size_t ow0 = part * chunk, ow1 = std::min(cols, ow0 + chunk);
      // Tiles of equal width: the microkernel's own cut (whole tiles, then the rest) runs a row
      // of 14 as 12 + 2 at AVX-512, and the 2-column tile is slow. Not where that makes every
      // tile too narrow: 7 columns at AVX2 run faster as 6 + 1 than as 3 + 4 (bench_conv
      // KILN_ISA=avx2, 3x3 s2 512->512 at 14x14: 3.4 against 3.7 ms).
      const size_t span = ow1 - ow0, tile = uk.tile * (nob > 1 ? 1 : 2);
      const size_t tiles = tile == 0 ? 1 : (span + tile - 1) / tile;
      const bool equal = tile == 0 || span / tiles >= uk.tile_min * (nob > 1 ? 1 : 2);
      // Taps that read only padding for the whole row, or the whole tile, are skipped: on a 7x7
      // map with pad 1, a third of the taps of the first and last rows.
      size_t kh_lo = 0, kh_hi = p.kh;
      if (clip) ClipRange(oh, q.kh, q.dilation_h, q.pad_top, q.h, q.stride_h, &kh_lo, &kh_hi);
      for (size_t i = 0; i < tiles; ++i) {
        const size_t j0 = equal ? ow0 + span * i / tiles : ow0 + i * tile;
        const size_t j1 = equal ? ow0 + span * (i + 1) / tiles : std::min(ow1, j0 + tile);
        size_t kw_lo = 0, kw_hi = p.kw;
        if (clip) {
          // The union of the columns' taps: the window moves right by a stride per column, so
          // the last column has the lowest first tap and the first column the highest last one.
          size_t lo_a, hi_a, lo_b, hi_b;
          ClipRange(j1 - 1, q.kw, q.dilation_w, q.pad_left, q.w, q.stride_w, &lo_a, &hi_a);
          ClipRange(j0, q.kw, q.dilation_w, q.pad_left, q.w, q.stride_w, &lo_b, &hi_b);
          kw_lo = std::min(lo_a, lo_b);
          kw_hi = std::max(hi_a, hi_b);
        }
        k.input = x_row + j0 * base.in_ow_stride + kh_lo * base.in_kh_stride +
                  kw_lo * base.in_kw_stride;
        k.weights = w_pair + (kh_lo * p.kw + kw_lo) * c * c;
        k.kh = kh_hi - kh_lo;
        k.kw = kw_hi - kw_lo;
        k.output = y_row + j0 * c;
        k.ow = j1 - j0;
        uk.fn(&k);
      }
      for (size_t ob = 0; ob < nob; ++ob) {
        ApplyVectorActivation(o.epilogue, conv.isa(),
                              y_row + ob * base.out_ob_stride + ow0 * c, (ow1 - ow0) * c);
      }
    }
  });
  return Status::Ok();
}

}  // namespace kiln::conv
