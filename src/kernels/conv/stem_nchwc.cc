// kStemNchwc: an image stem (one group of at most 4 input channels: RGB, RGBA, grey) that reads
// NCHW and writes NCHWc. Where the layout plan keeps the stem's consumer blocked (MobileNetV2/V3
// and EfficientNet: a depthwise conv), this saves the reorder of the stem's output (or the
// depthwise conv's own NCHW-to-NCHWc copy) that kGroupedDirect's NCHW output costs.
//
// The NCHWc direct kernel cannot take the input as it is: in NCHWc the 3 channels would fill a
// block of 8 or 16 with zeros, and every tap would broadcast all of them. Instead the NCHWc
// microkernel reads the NCHW planes in place with in_c = C (f32_conv.h): each tap broadcasts C
// values, one per plane, each into 1 or 2 output blocks. No input copy: the windows are clipped to
// the input. The interior columns of a row, whose windows lie inside the input, are computed once
// and run as one microkernel call; only the few edge columns are clipped one by one (clipping
// every column, two integer divisions each, took a fifth of MobileNetV3's 3->16 stem).
// Weights are [M/c][KH][KW][C][c] (c = the microkernel's block, channels past M zero).
//
// Work items are (image, pair of output blocks, output row).
//
// A model's input arrives from memory more often than not (a serving loop's tensor, written long
// before; kiln profile reuses one across runs), and the stem's rows are short runs in C planes
// that the hardware prefetchers follow poorly: MobileNetV2's stem ran at 80 GFLOP/s in the
// model against 208 on a warm input. Each item pulls into L1 the input rows that the row
// kStemRowsAhead below it adds to its window (see PrefetchRows): kiln profile --threads 1,
// MobileNetV2's stem 0.272 -> 0.131-0.139 ms (of a 2.7-3.1 ms run).
#include <algorithm>
#include <memory>

#include "kernels/conv/conv_ukernels.h"
#include "kernels/conv/drivers.h"

namespace kiln::conv {
namespace {

// The taps [lo, hi) of a window starting at `start` (may be negative) that land in [0, size)
// (as in direct_nchwc.cc).
void ClipTaps(ptrdiff_t start, size_t taps, size_t dilation, size_t size, size_t* lo, size_t* hi) {
  const ptrdiff_t d = static_cast<ptrdiff_t>(dilation), n = static_cast<ptrdiff_t>(size);
  const ptrdiff_t l = start < 0 ? (-start + d - 1) / d : 0;
  ptrdiff_t h = start > n - 1 ? 0 : (n - 1 - start) / d + 1;
  h = std::min<ptrdiff_t>(h, static_cast<ptrdiff_t>(taps));
  *lo = static_cast<size_t>(l);
  *hi = static_cast<size_t>(std::max(h, l));
}

// Output rows ahead whose new input rows an item prefetches. conv::Run, MobileNetV2's 3 -> 32
// stem, inputs and outputs evicted from the caches before each call (kiln profile's state),
// median of 11 interleaved rounds, Zen 5: none 75 GFLOP/s; into L2, 2 rows ahead 97, 4 rows 94,
// the whole window 2 rows ahead 100; into L1 2 rows ahead 124, 4 rows 124 (a warm input: 126).
// Prefetching the output rows ahead with write intent as well gained nothing.
constexpr size_t kStemRowsAhead = 2;

// prefetcht0 of one line, in asm: GCC deletes a loop whose only statements are
// __builtin_prefetch (C++'s -ffinite-loops at -O2, which takes a prefetch for a statement without
// effect), as it did PrefetchRows's.
inline void PrefetchLine(const char* line) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*line));
#else
  __builtin_prefetch(line, 0, 3);
#endif
}

// Pulls into L1 the rows of every input plane that output row `oh` reads and row oh - 1 does not
// (the last stride_h rows of its window, within the input).
void PrefetchRows(const ConvParams& p, const float* x_n, size_t oh) {
  // Padded coordinates: the window covers rows [end - window, end) of the padded input.
  const size_t window = (p.kh - 1) * p.dilation_h + 1;
  const size_t end = oh * p.stride_h + window;
  const size_t first = end - std::min(p.stride_h, window);
  const size_t lo = std::max(first, p.pad_top) - p.pad_top;
  const size_t hi = std::min(end, p.pad_top + p.h) - std::min(end, p.pad_top);
  constexpr size_t kLine = 64;
  for (size_t ci = 0; ci < p.c; ++ci) {
    for (size_t r = lo; r < hi; ++r) {
      const char* row = reinterpret_cast<const char*>(x_n + (ci * p.h + r) * p.w);
      for (size_t b = 0; b < p.w * sizeof(float); b += kLine) PrefetchLine(row + b);
    }
  }
}

}  // namespace

bool StemNchwcSupported(const ConvParams& p) {
  return p.groups == 1 && p.c <= kMaxStemChannels;
}

Status PrepareStemNchwc(const float* weights, PreparedConv* conv) {
  using A = PreparedConvAccess;
  const ConvParams& p = A::params(*conv);
  const size_t c = SelectConvNchwcUkernel(A::isa(*conv)).block;
  const size_t mb_n = (p.m + c - 1) / c, taps = p.kh * p.kw;
  std::shared_ptr<float> w(new float[mb_n * taps * p.c * c](), std::default_delete<float[]>());
  for (size_t m = 0; m < p.m; ++m) {
    for (size_t ci = 0; ci < p.c; ++ci) {
      for (size_t t = 0; t < taps; ++t) {
        w.get()[((m / c * taps + t) * p.c + ci) * c + m % c] = weights[(m * p.c + ci) * taps + t];
      }
    }
  }
  A::weights(*conv) = std::move(w);
  A::block(*conv) = c;
  return Status::Ok();
}

Status RunStemNchwc(const PreparedConv& conv, const float* x, float* y, const RunOptions& o) {
  const ConvParams& p = conv.params();
  const ConvNchwcUkernel& uk = SelectConvNchwcUkernel(conv.isa());
  const size_t c = uk.block;
  if (c != conv.block()) return Status::Error("conv: NCHWc block changed since prepare");
  const size_t mb_n = (p.m + c - 1) / c, oh_n = p.out_h(), ow_n = p.out_w();
  const size_t pairs = (mb_n + uk.max_oc_blocks - 1) / uk.max_oc_blocks;
  const size_t taps = p.kh * p.kw;
  const Clamp clamp = ClampOf(o.epilogue);
  const float* bias = o.epilogue.bias_kind == gemm::BiasKind::kPerRow ? o.epilogue.bias : nullptr;
  const float* weights = PreparedConvAccess::weights(conv);
  const size_t threads = ThreadCount(o.pool);

  ukernels::F32ConvNchwcParams base{};
  base.ic_blocks = 1;
  base.in_c = p.c;
  base.in_ci_stride = p.h * p.w;
  base.in_kh_stride = p.dilation_h * p.w;
  base.in_kw_stride = p.dilation_w;
  base.in_ow_stride = p.stride_w;
  base.w_kh_stride = p.kw * p.c * c;
  base.w_ob_stride = taps * p.c * c;
  base.out_ob_stride = oh_n * ow_n * c;
  base.min = clamp.min;
  base.max = clamp.max;

  // The interior columns [in_lo, in_hi), whose whole window lies inside the input: one run.
  const size_t span = (p.kw - 1) * p.dilation_w;
  const size_t in_lo = std::min(ow_n, (p.pad_left + p.stride_w - 1) / p.stride_w);
  size_t in_hi = in_lo;
  if (p.w - 1 + p.pad_left >= span) {
    in_hi = std::clamp((p.w - 1 + p.pad_left - span) / p.stride_w + 1, in_lo, ow_n);
  }

  const size_t items = p.n * pairs * oh_n;
  ParallelFor(o.pool, std::min(threads, items), [&](size_t t) {
    const size_t n_threads = std::min(threads, items);
    float bias_tail[64];  // bias of a pair of blocks that runs past M, zero-padded
    for (size_t item = items * t / n_threads; item < items * (t + 1) / n_threads; ++item) {
      const size_t oh = item % oh_n, pair = item / oh_n % pairs, n = item / oh_n / pairs;
      const size_t ob0 = pair * uk.max_oc_blocks;
      const size_t nob = std::min(uk.max_oc_blocks, mb_n - ob0);
      ukernels::F32ConvNchwcParams k = base;
      k.oc_blocks = nob;
      k.bias = BlockBias(bias, ob0, nob, c, p.m, bias_tail);
      float* y_row = y + ((n * mb_n + ob0) * oh_n + oh) * ow_n * c;
      const ptrdiff_t ih0 =
          static_cast<ptrdiff_t>(oh * p.stride_h) - static_cast<ptrdiff_t>(p.pad_top);
      size_t kh_lo, kh_hi;
      ClipTaps(ih0, p.kh, p.dilation_h, p.h, &kh_lo, &kh_hi);
      const float* x_n = x + n * p.c * p.h * p.w;
      auto start = [&](size_t col) {
        return static_cast<ptrdiff_t>(col * p.stride_w) - static_cast<ptrdiff_t>(p.pad_left);
      };
      // One run of output columns whose windows keep the taps [kw_lo, kw_hi).
      auto run = [&](size_t ow, size_t end, size_t kw_lo, size_t kw_hi) {
        if (kh_lo == kh_hi || kw_lo == kw_hi) {
          // Windows that miss the input: the bias, clamped.
          for (size_t ob = 0; ob < nob; ++ob) {
            for (size_t j = ow; j < end; ++j) {
              for (size_t co = 0; co < c; ++co) {
                const float v = k.bias ? k.bias[ob * c + co] : 0.0f;
                y_row[ob * base.out_ob_stride + j * c + co] =
                    std::min(std::max(v, clamp.min), clamp.max);
              }
            }
          }
          return;
        }
        const ptrdiff_t ih = ih0 + static_cast<ptrdiff_t>(kh_lo * p.dilation_h);
        const ptrdiff_t iw = start(ow) + static_cast<ptrdiff_t>(kw_lo * p.dilation_w);
        k.input = x_n + static_cast<size_t>(ih) * p.w + static_cast<size_t>(iw);
        k.weights = weights + ob0 * base.w_ob_stride + (kh_lo * p.kw + kw_lo) * p.c * c;
        k.output = y_row + ow * c;
        k.ow = end - ow;
        k.kh = kh_hi - kh_lo;
        k.kw = kw_hi - kw_lo;
        uk.fn(&k);
      };
      // The edge columns [a, b), clipped one by one and merged into runs of equal taps.
      auto edges = [&](size_t a, size_t b) {
        for (size_t ow = a; ow < b;) {
          size_t kw_lo, kw_hi;
          ClipTaps(start(ow), p.kw, p.dilation_w, p.w, &kw_lo, &kw_hi);
          size_t end = ow + 1;
          while (end < b) {
            size_t lo, hi;
            ClipTaps(start(end), p.kw, p.dilation_w, p.w, &lo, &hi);
            if (lo != kw_lo || hi != kw_hi) break;
            ++end;
          }
          run(ow, end, kw_lo, kw_hi);
          ow = end;
        }
      };
      if (oh + kStemRowsAhead < oh_n) PrefetchRows(p, x_n, oh + kStemRowsAhead);
      edges(0, in_lo);
      if (in_lo < in_hi) run(in_lo, in_hi, 0, p.kw);
      edges(in_hi, ow_n);
      for (size_t ob = 0; ob < nob; ++ob) {
        ApplyVectorActivation(o.epilogue, conv.isa(), y_row + ob * base.out_ob_stride, ow_n * c);
      }
    }
  });
  return Status::Ok();
}

}  // namespace kiln::conv
