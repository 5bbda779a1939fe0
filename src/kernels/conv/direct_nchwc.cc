// kDirectNchwc: direct convolution on NCHWc (groups == 1). Work items are (image, pair of output
// channel blocks, output row, chunk of the row); each item clips the window to the input once for its row and
// once per run of output columns with the same clipped taps (the interior is one run), so the
// microkernel never reads padding and the input needs no padded copy.
#include <algorithm>
#include <memory>

#include "kernels/conv/conv_ukernels.h"
#include "kernels/conv/drivers.h"

namespace kiln::conv {
namespace {

// The taps [lo, hi) of a window starting at `start` (may be negative) that land in [0, size).
void ClipTaps(ptrdiff_t start, size_t taps, size_t dilation, size_t size, size_t* lo, size_t* hi) {
  const ptrdiff_t d = static_cast<ptrdiff_t>(dilation), n = static_cast<ptrdiff_t>(size);
  ptrdiff_t l = start < 0 ? (-start + d - 1) / d : 0;
  ptrdiff_t h = start > n - 1 ? 0 : (n - 1 - start) / d + 1;
  h = std::min<ptrdiff_t>(h, static_cast<ptrdiff_t>(taps));
  *lo = static_cast<size_t>(l);
  *hi = static_cast<size_t>(std::max(h, l));
}

// Outputs whose window misses the input entirely: the bias, clamped.
void FillEmpty(const float* bias, size_t nob, size_t c, size_t cols, size_t ob_stride,
               const Clamp& clamp, float* out) {
  for (size_t ob = 0; ob < nob; ++ob) {
    for (size_t j = 0; j < cols; ++j) {
      for (size_t co = 0; co < c; ++co) {
        const float v = bias ? bias[ob * c + co] : 0.0f;
        out[ob * ob_stride + j * c + co] = std::min(std::max(v, clamp.min), clamp.max);
      }
    }
  }
}

}  // namespace

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

Status RunDirectNchwc(const PreparedConv& conv, const float* x, float* y, const RunOptions& o) {
  ConvParams p = conv.params();
  const ConvNchwcUkernel& uk = SelectConvNchwcUkernel(conv.isa());
  const size_t c = uk.block;
  if (c != conv.block()) return Status::Error("conv: NCHWc block changed since prepare");
  // An unpadded 1x1 at stride 1 is a GEMM over the pixels: its input and output planes are one
  // row of H * W pixels each, so a tile fills its 12 or 24 columns even on 7x7 planes (a row of
  // 7 would leave most of the tile empty), cut into chunks of whole tiles for the threads.
  size_t chunk_w = 0;  // 0: one work item per output row
  if (p.kh == 1 && p.kw == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_top == 0 &&
      p.pad_left == 0 && p.pad_bottom == 0 && p.pad_right == 0) {
    p.w *= p.h;
    p.h = 1;
    chunk_w = 96;
  }
  const size_t cb_n = (p.c + c - 1) / c, mb_n = (p.m + c - 1) / c;
  const size_t oh_n = p.out_h(), ow_n = p.out_w();
  const size_t chunk = chunk_w == 0 ? ow_n : std::min(chunk_w, ow_n);
  const size_t chunks = (ow_n + chunk - 1) / chunk;
  const size_t pairs = (mb_n + uk.max_oc_blocks - 1) / uk.max_oc_blocks;
  const size_t items = p.n * pairs * oh_n * chunks;
  const Clamp clamp = ClampOf(o.epilogue);
  const float* bias = o.epilogue.bias_kind == gemm::BiasKind::kPerRow ? o.epilogue.bias : nullptr;
  const float* weights = PreparedConvAccess::weights(conv);

  ukernels::F32ConvNchwcParams base{};
  base.ic_blocks = cb_n;
  base.in_cb_stride = p.h * p.w * c;
  base.in_kh_stride = p.dilation_h * p.w * c;
  base.in_kw_stride = p.dilation_w * c;
  base.in_ow_stride = p.stride_w * c;
  base.w_cb_stride = p.kh * p.kw * c * c;
  base.w_kh_stride = p.kw * c * c;
  base.w_ob_stride = cb_n * base.w_cb_stride;
  base.out_ob_stride = oh_n * ow_n * c;
  base.min = clamp.min;
  base.max = clamp.max;

  const size_t threads = ThreadCount(o.pool);
  ParallelFor(o.pool, threads, [&](size_t t) {
    float bias_tail[64];  // bias of a pair of blocks that runs past M, zero-padded
    for (size_t item = items * t / threads; item < items * (t + 1) / threads; ++item) {
      const size_t part = item % chunks, oh = item / chunks % oh_n;
      const size_t pair = item / chunks / oh_n % pairs, n = item / chunks / oh_n / pairs;
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
      float* y_row = y + ((n * mb_n + ob0) * oh_n + oh) * ow_n * c;
      const ptrdiff_t ih0 =
          static_cast<ptrdiff_t>(oh * p.stride_h) - static_cast<ptrdiff_t>(p.pad_top);
      size_t kh_lo, kh_hi;
      ClipTaps(ih0, p.kh, p.dilation_h, p.h, &kh_lo, &kh_hi);
      const float* x_n = x + n * cb_n * p.h * p.w * c;
      const size_t ow0 = part * chunk, ow1 = std::min(ow_n, ow0 + chunk);
      size_t ow = ow0;
      while (ow < ow1) {
        auto start = [&](size_t col) {
          return static_cast<ptrdiff_t>(col * p.stride_w) - static_cast<ptrdiff_t>(p.pad_left);
        };
        size_t kw_lo, kw_hi;
        ClipTaps(start(ow), p.kw, p.dilation_w, p.w, &kw_lo, &kw_hi);
        size_t end = ow + 1;
        while (end < ow1) {
          size_t lo, hi;
          ClipTaps(start(end), p.kw, p.dilation_w, p.w, &lo, &hi);
          if (lo != kw_lo || hi != kw_hi) break;
          ++end;
        }
        if (kh_lo == kh_hi || kw_lo == kw_hi) {
          FillEmpty(k.bias, nob, c, end - ow, base.out_ob_stride, clamp, y_row + ow * c);
        } else {
          const ptrdiff_t ih = ih0 + static_cast<ptrdiff_t>(kh_lo * p.dilation_h);
          const ptrdiff_t iw = start(ow) + static_cast<ptrdiff_t>(kw_lo * p.dilation_w);
          k.input = x_n + (static_cast<size_t>(ih) * p.w + static_cast<size_t>(iw)) * c;
          k.weights = weights + ob0 * base.w_ob_stride + (kh_lo * p.kw + kw_lo) * c * c;
          k.output = y_row + ow * c;
          k.ow = end - ow;
          k.kh = kh_hi - kh_lo;
          k.kw = kw_hi - kw_lo;
          uk.fn(&k);
        }
        ow = end;
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
