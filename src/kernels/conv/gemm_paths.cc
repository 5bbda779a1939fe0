// kGemm1x1 and kIm2colGemm: the convolution as W[M/g x K] * columns[K x OH*OW] per image and
// group, K = C/g * KH * KW, with W prepacked once by gemm::PackA.
//
// 1x1 with stride 1 and no padding reads the input in place as the [C/g x H*W] right-hand side;
// a strided 1x1 (no padding) is the same product on the subsampled input, which is gathered into
// the workspace first (C/g x OH*OW floats, a fraction of the GEMM's work: each is used M/g times),
// rather than through im2col's general per-element loop and column blocks.
// Otherwise im2col builds the columns a block of output positions at a time, so that a block
// (K x nb floats) stays in L2 while the GEMM packs it; threads take whole blocks when there are
// enough of them, else the GEMM splits each block over the pool.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "kernels/conv/drivers.h"

namespace kiln::conv {
namespace {

size_t GemmK(const ConvParams& p) { return p.c / p.groups * p.kh * p.kw; }

// Output positions per column block. With several threads the blocks are made small enough
// that there are about four per thread (not below 256 columns): each thread then builds its own
// columns. With one block per GEMM split over the threads instead, the im2col of each block ran
// on the calling thread alone, and a 3x3 stem (K = 27, so the copy is a large share of the work)
// gained nothing from a second thread.
size_t ColumnBlock(const PreparedConv& conv, size_t threads) {
  const ConvParams& p = conv.params();
  const size_t ohw = p.out_h() * p.out_w();
  size_t nb = GetCpuInfo().l2_bytes / 2 / (sizeof(float) * GemmK(p));
  nb = std::clamp<size_t>(nb / 64 * 64, 256, 4096);
  if (threads > 1) {
    const size_t per_image = p.n * p.groups;
    const size_t want_blocks = (4 * threads + per_image - 1) / per_image;
    const size_t small = (ohw + want_blocks - 1) / want_blocks;
    nb = std::min(nb, std::max<size_t>(256, (small + 63) / 64 * 64));
  }
  return std::min(nb, ohw);
}

gemm::Options GroupOptions(const RunOptions& o, size_t group, size_t mg, ThreadPool* pool) {
  gemm::Options g;
  g.epilogue = o.epilogue;
  if (g.epilogue.bias) g.epilogue.bias += group * mg;
  g.pool = pool;
  g.accumulate = o.accumulate;
  return g;
}

// The first output column whose input column ow * sw + off - pad lies at or right of 0.
size_t ValidFrom(size_t off, size_t pad, size_t sw) {
  return off >= pad ? 0 : (pad - off + sw - 1) / sw;
}
// One past the last output column whose input column lies left of w (0 if none does).
size_t ValidTo(size_t off, size_t pad, size_t sw, size_t w) {
  return w + pad <= off ? 0 : (w + pad - off - 1) / sw + 1;
}

// col[k][j - j0] for j in [j0, j0 + nb): output position j = oh * OW + ow, k = (ci, kh, kw).
void Im2colBlock(const ConvParams& p, const float* x, size_t j0, size_t nb, float* col) {
  const size_t cg = p.c / p.groups, ow_n = p.out_w();
  for (size_t ci = 0; ci < cg; ++ci) {
    const float* xc = x + ci * p.h * p.w;
    for (size_t kh = 0; kh < p.kh; ++kh) {
      for (size_t kw = 0; kw < p.kw; ++kw) {
        float* dst = col + ((ci * p.kh + kh) * p.kw + kw) * nb;
        // Walk the block one output row segment at a time.
        size_t j = j0;
        while (j < j0 + nb) {
          const size_t oh = j / ow_n, ow0 = j % ow_n;
          const size_t ow1 = std::min(ow_n, ow0 + (j0 + nb - j));
          float* d = dst + (j - j0);
          const ptrdiff_t ih = static_cast<ptrdiff_t>(oh * p.stride_h + kh * p.dilation_h) -
                               static_cast<ptrdiff_t>(p.pad_top);
          if (ih < 0 || ih >= static_cast<ptrdiff_t>(p.h)) {
            std::fill(d, d + (ow1 - ow0), 0.0f);
          } else {
            const float* row = xc + static_cast<size_t>(ih) * p.w;
            // Columns [lo, hi) read inside the row, the rest are padding: the copy in between
            // runs without a per-element bounds check (with it, a 3x3 64@56x56 conv took 25%
            // longer and the 7x7 s2 ResNet stem 10%).
            const size_t off = kw * p.dilation_w, sw = p.stride_w;
            const size_t lo = std::clamp(ValidFrom(off, p.pad_left, sw), ow0, ow1);
            const size_t hi = std::clamp(ValidTo(off, p.pad_left, sw, p.w), lo, ow1);
            std::fill(d, d + (lo - ow0), 0.0f);
            if (hi > lo) {  // lo >= ValidFrom here, so the offset below does not wrap
              const float* src = row + (lo * sw + off - p.pad_left);
              float* dd = d + (lo - ow0);
              if (sw == 1) {
                std::memcpy(dd, src, (hi - lo) * sizeof(float));
              } else if (sw == 2) {  // a constant stride lets the compiler vectorize
                for (size_t i = 0; i < hi - lo; ++i) dd[i] = src[2 * i];
              } else {
                for (size_t i = 0; i < hi - lo; ++i) dd[i] = src[i * sw];
              }
            }
            std::fill(d + (hi - ow0), d + (ow1 - ow0), 0.0f);
          }
          j += ow1 - ow0;
        }
      }
    }
  }
}

// dst[ci][oh * OW + ow] = x[ci][oh * stride_h][ow * stride_w] for the cg channels at x.
void Subsample(const ConvParams& p, size_t cg, const float* x, float* dst) {
  const size_t oh_n = p.out_h(), ow_n = p.out_w(), sh = p.stride_h, sw = p.stride_w;
  for (size_t ci = 0; ci < cg; ++ci) {
    const float* xc = x + ci * p.h * p.w;
    for (size_t oh = 0; oh < oh_n; ++oh, dst += ow_n) {
      const float* row = xc + oh * sh * p.w;
      if (sw == 1) {
        std::memcpy(dst, row, ow_n * sizeof(float));
      } else if (sw == 2) {  // a constant stride lets the compiler vectorize
        for (size_t ow = 0; ow < ow_n; ++ow) dst[ow] = row[2 * ow];
      } else {
        for (size_t ow = 0; ow < ow_n; ++ow) dst[ow] = row[ow * sw];
      }
    }
  }
}

}  // namespace

bool Gemm1x1Strided(const ConvParams& p) { return p.stride_h != 1 || p.stride_w != 1; }

size_t Gemm1x1Workspace(const PreparedConv& conv) {
  const ConvParams& p = conv.params();
  return Gemm1x1Strided(p) ? p.c / p.groups * p.out_h() * p.out_w() : 0;
}

Status PrepareGemm(const float* weights, PreparedConv* conv) {
  using A = PreparedConvAccess;
  const ConvParams& p = A::params(*conv);
  const size_t mg = p.m / p.groups, k = GemmK(p);
  // The N of each product: all output pixels (1x1) or a column block (im2col). Few or odd pixel
  // counts (7x7 = 49 = 32 + 17) get panels for the transposed product, whose vector lanes lie
  // along the output channels instead. (The thread count is not known here; several threads
  // take smaller blocks, but never below 256 columns, so the choice holds.)
  const size_t n_hint = A::algorithm(*conv) == Algorithm::kGemm1x1 ? p.out_h() * p.out_w()
                                                                   : ColumnBlock(*conv, 1);
  A::packed(*conv).clear();
  for (size_t g = 0; g < p.groups; ++g) {
    KILN_ASSIGN_OR_RETURN(gemm::PackedMatrix packed, gemm::PackA(mg, k, weights + g * mg * k, k,
                                                                 false, A::isa(*conv), n_hint));
    A::packed(*conv).push_back(std::move(packed));
  }
  return Status::Ok();
}

Status RunGemm1x1(const PreparedConv& conv, const float* x, float* y, const RunOptions& o,
                  float* workspace) {
  const ConvParams& p = conv.params();
  const size_t cg = p.c / p.groups, mg = p.m / p.groups, hw = p.h * p.w;
  const size_t ohw = p.out_h() * p.out_w();
  const bool strided = Gemm1x1Strided(p);
  const auto& packed = PreparedConvAccess::packed(conv);
  for (size_t n = 0; n < p.n; ++n) {
    for (size_t g = 0; g < p.groups; ++g) {
      const float* b = x + (n * p.c + g * cg) * hw;
      if (strided) {
        Subsample(p, cg, b, workspace);
        b = workspace;
      }
      KILN_RETURN_IF_ERROR(gemm::SgemmPackedA(packed[g], ohw, b, ohw,
                                              y + (n * p.m + g * mg) * ohw, ohw,
                                              GroupOptions(o, g, mg, o.pool)));
    }
  }
  return Status::Ok();
}

size_t Im2colWorkspace(const PreparedConv& conv, size_t threads) {
  return threads * GemmK(conv.params()) * ColumnBlock(conv, threads);
}

Status RunIm2colGemm(const PreparedConv& conv, const float* x, float* y, const RunOptions& o,
                     float* workspace) {
  const ConvParams& p = conv.params();
  const size_t cg = p.c / p.groups, mg = p.m / p.groups, k = GemmK(p);
  const size_t threads = ThreadCount(o.pool);
  const size_t ohw = p.out_h() * p.out_w(), nb = ColumnBlock(conv, threads);
  const size_t blocks = (ohw + nb - 1) / nb, items = p.n * p.groups * blocks;
  const auto& packed = PreparedConvAccess::packed(conv);
  // Whole blocks per thread when there are enough to balance (or they divide evenly); else one
  // at a time, GEMM threaded.
  const bool by_item =
      threads == 1 || items >= 4 * threads || (items >= threads && items % threads == 0);
  auto run_item = [&](size_t item, float* col, ThreadPool* pool) -> Status {
    const size_t b = item % blocks, g = item / blocks % p.groups, n = item / blocks / p.groups;
    const size_t j0 = b * nb, cols = std::min(nb, ohw - j0);
    Im2colBlock(p, x + (n * p.c + g * cg) * p.h * p.w, j0, cols, col);
    return gemm::SgemmPackedA(packed[g], cols, col, cols, y + (n * p.m + g * mg) * ohw + j0, ohw,
                              GroupOptions(o, g, mg, pool));
  };
  if (!by_item) {
    for (size_t i = 0; i < items; ++i) KILN_RETURN_IF_ERROR(run_item(i, workspace, o.pool));
    return Status::Ok();
  }
  // The first error, if any; kept without a per-thread vector so a run allocates nothing.
  std::mutex mu;
  Status first;
  // Each pool index owns one column buffer and claims items until none are left, so a thread
  // that starts late (or is descheduled) leaves its items to the others rather than holding a
  // fixed share. Which buffer an item is built in does not change its result.
  std::atomic<size_t> next{0};
  ParallelFor(o.pool, threads, [&](size_t t) {
    float* col = workspace + t * k * nb;
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < items;) {
      Status s = run_item(i, col, nullptr);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first.ok()) first = s;
        return;
      }
    }
  });
  return first;
}

}  // namespace kiln::conv
