// kGemm1x1 and kIm2colGemm: the convolution as W[M/g x K] * columns[K x OH*OW] per image and
// group, K = C/g * KH * KW, with W prepacked once by gemm::PackA.
//
// 1x1 with stride 1 and no padding reads the input in place as the [C/g x H*W] right-hand side.
// Otherwise im2col builds the columns a block of output positions at a time, so that a block
// (K x nb floats) stays in L2 while the GEMM packs it; threads take whole blocks when there are
// enough of them, else the GEMM splits each block over the pool.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "kernels/conv/drivers.h"

namespace kiln::conv {
namespace {

size_t GemmK(const ConvParams& p) { return p.c / p.groups * p.kh * p.kw; }

size_t ColumnBlock(const PreparedConv& conv) {
  const ConvParams& p = conv.params();
  const size_t ohw = p.out_h() * p.out_w();
  size_t nb = GetCpuInfo().l2_bytes / 2 / (sizeof(float) * GemmK(p));
  nb = std::clamp<size_t>(nb / 64 * 64, 256, 4096);
  return std::min(nb, ohw);
}

gemm::Options GroupOptions(const RunOptions& o, size_t group, size_t mg, ThreadPool* pool) {
  gemm::Options g;
  g.epilogue = o.epilogue;
  if (g.epilogue.bias) g.epilogue.bias += group * mg;
  g.pool = pool;
  return g;
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
            const ptrdiff_t off =
                static_cast<ptrdiff_t>(kw * p.dilation_w) - static_cast<ptrdiff_t>(p.pad_left);
            const ptrdiff_t sw = static_cast<ptrdiff_t>(p.stride_w);
            const ptrdiff_t w = static_cast<ptrdiff_t>(p.w);
            for (size_t ow = ow0; ow < ow1; ++ow) {
              const ptrdiff_t iw = static_cast<ptrdiff_t>(ow) * sw + off;
              d[ow - ow0] = iw >= 0 && iw < w ? row[iw] : 0.0f;
            }
          }
          j += ow1 - ow0;
        }
      }
    }
  }
}

}  // namespace

Status PrepareGemm(const float* weights, PreparedConv* conv) {
  using A = PreparedConvAccess;
  const ConvParams& p = A::params(*conv);
  const size_t mg = p.m / p.groups, k = GemmK(p);
  A::packed(*conv).clear();
  for (size_t g = 0; g < p.groups; ++g) {
    KILN_ASSIGN_OR_RETURN(gemm::PackedMatrix packed,
                          gemm::PackA(mg, k, weights + g * mg * k, k, false, A::isa(*conv)));
    A::packed(*conv).push_back(std::move(packed));
  }
  return Status::Ok();
}

Status RunGemm1x1(const PreparedConv& conv, const float* x, float* y, const RunOptions& o) {
  const ConvParams& p = conv.params();
  const size_t cg = p.c / p.groups, mg = p.m / p.groups, hw = p.h * p.w;
  const auto& packed = PreparedConvAccess::packed(conv);
  for (size_t n = 0; n < p.n; ++n) {
    for (size_t g = 0; g < p.groups; ++g) {
      KILN_RETURN_IF_ERROR(gemm::SgemmPackedA(packed[g], hw, x + (n * p.c + g * cg) * hw, hw,
                                              y + (n * p.m + g * mg) * hw, hw,
                                              GroupOptions(o, g, mg, o.pool)));
    }
  }
  return Status::Ok();
}

size_t Im2colWorkspace(const PreparedConv& conv, size_t threads) {
  return threads * GemmK(conv.params()) * ColumnBlock(conv);
}

Status RunIm2colGemm(const PreparedConv& conv, const float* x, float* y, const RunOptions& o,
                     float* workspace) {
  const ConvParams& p = conv.params();
  const size_t cg = p.c / p.groups, mg = p.m / p.groups, k = GemmK(p);
  const size_t ohw = p.out_h() * p.out_w(), nb = ColumnBlock(conv);
  const size_t blocks = (ohw + nb - 1) / nb, items = p.n * p.groups * blocks;
  const auto& packed = PreparedConvAccess::packed(conv);
  const size_t threads = ThreadCount(o.pool);
  // Whole blocks per thread when there are enough to balance; else one at a time, GEMM threaded.
  const bool by_item = threads == 1 || items >= 4 * threads;
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
  ParallelFor(o.pool, threads, [&](size_t t) {
    float* col = workspace + t * k * nb;
    for (size_t i = items * t / threads; i < items * (t + 1) / threads; ++i) {
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
