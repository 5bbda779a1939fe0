// kDirectNchwc: direct convolution on NCHWc (groups == 1). A padded layer first copies its input
// into a zero-padded buffer in the workspace, so that every output row is one run of the
// microkernel with all the taps of the window. Clipping the window at the borders instead (no
// copy) splits each row into runs with the same clipped taps: on a 7x7 map with pad 1 that is
// runs of 1, 5 and 1 columns, and a 1-column run keeps 2 accumulators, latency-bound; the copy
// costs one pass over the input against C_out * KH * KW multiplies per input value (bench_conv
// --set 3x3 --blocked, 1 thread, Zen 4: 512->512 at 7x7 74 -> 99 GFLOP/s, 3x3 s2 512->512 at
// 14x14 78 -> 95, 56x56 maps unchanged). Work items are (image, pair of output channel blocks,
// output row, chunk of the row); a row is cut into tiles of equal width.
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

  const size_t threads = ThreadCount(o.pool);
  ParallelFor(o.pool, threads, [&](size_t t) {
    float bias_tail[64];  // bias of a pair of blocks that runs past M, zero-padded
    for (size_t item = items * t / threads; item < items * (t + 1) / threads; ++item) {
      const size_t part = item % chunks, oh = item / chunks % rows;
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
      k.weights = weights + ob0 * base.w_ob_stride;
      float* y_row = y + ((n * mb_n + ob0) * rows + oh) * cols * c;
      const float* x_row = x + (n * cb_n * p.h + oh * p.stride_h) * p.w * c;
      const size_t ow0 = part * chunk, ow1 = std::min(cols, ow0 + chunk);
      // Tiles of equal width: the microkernel's own cut (whole tiles, then the rest) runs a row
      // of 14 as 12 + 2, and the 2-column tile is latency-bound.
      const size_t tile = nob > 1 ? uk.tile : 2 * uk.tile;
      const size_t tiles = tile == 0 ? 1 : (ow1 - ow0 + tile - 1) / tile;
      for (size_t i = 0; i < tiles; ++i) {
        const size_t j0 = ow0 + (ow1 - ow0) * i / tiles, j1 = ow0 + (ow1 - ow0) * (i + 1) / tiles;
        k.input = x_row + j0 * base.in_ow_stride;
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
