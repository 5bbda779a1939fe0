// fp32 convolution drivers against the reference convolution (kernels/ref/conv.h) over padding,
// stride, dilation, groups, batch, every algorithm that supports the shape, every epilogue,
// threads 1, 2 and 3, and every ISA level available (KILN_ISA lowers the top one).
#include "kernels/conv/conv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "conv_test_util.h"
#include "kernel_test_util.h"
#include "kernels/conv/conv_ukernels.h"
#include "kernels/conv/layout.h"
#include "kernels/ref/conv.h"
#include "kernels/winograd/winograd.h"
#include "support/cpu.h"
#include "support/thread_pool.h"

namespace kiln::conv {
namespace {

using namespace conv_test;  // NOLINT(build/namespaces): the shared helpers

// The shapes: 1x1 (plain, strided, grouped), 3x3 with channel counts below, at and above the
// NCHWc blocks (8, 16) and output widths below, at and above the microkernel tiles (6, 12, 24),
// asymmetric pads and strides, dilation, windows that miss the input, 5x5/7x7, depthwise.
std::vector<ConvParams> Shapes() {
  return {
      P(1, 3, 5, 7, 5, 1, 1),
      P(1, 17, 9, 9, 33, 1, 1),
      P(2, 32, 6, 5, 24, 1, 1, 1, 0, 1, 2),
      P(1, 24, 11, 11, 20, 1, 1, 2),
      Asym(P(2, 16, 9, 10, 12, 1, 1, 1, 0, 1, 2), 0, 0, 0, 0, 2, 3),  // strided 1x1, grouped
      P(1, 40, 14, 14, 24, 1, 1, 2),
      P(1, 75, 6, 7, 20, 1, 1),       // 1x1 in passes over input blocks, a partial last one
      P(1, 136, 8, 9, 19, 1, 1, 2),   // the same, strided (gathered), three passes at AVX2
      P(1, 8, 7, 7, 16, 3, 3, 1, 1),
      P(1, 16, 13, 30, 32, 3, 3, 1, 1),
      P(1, 19, 6, 27, 31, 3, 3, 1, 1),
      P(2, 33, 9, 14, 40, 3, 3, 2, 1),
      P(1, 12, 1, 1, 8, 3, 3, 1, 1),
      P(1, 16, 8, 26, 17, 3, 3, 1, 0, 2),
      Asym(P(1, 20, 10, 12, 18, 3, 3), 2, 0, 1, 3, 2, 3),
      P(1, 16, 4, 4, 16, 3, 3, 1, 3),  // rows and columns whose window misses the input
      Asym(P(3, 21, 11, 7, 26, 3, 3), 0, 2, 1, 0, 1, 1),  // Winograd: batch, partial tiles
      P(1, 64, 14, 14, 72, 3, 3, 1, 1),                    // Winograd: a ResNet-like layer
      Asym(P(2, 17, 10, 53, 21, 3, 3), 2, 1, 0, 2, 1, 1),  // Winograd: a wide map, partial tiles
      P(1, 24, 12, 12, 9, 5, 5, 1, 2),
      P(1, 3, 23, 23, 16, 7, 7, 2, 3),
      P(1, 3, 64, 61, 8, 7, 7, 2, 3),  // a stem over several im2col column blocks
      P(1, 3, 45, 47, 16, 3, 3, 2, 1),   // 3 column blocks at 2 threads: GEMM split per block
      P(2, 3, 40, 40, 16, 3, 3, 2, 1),   // 2 images of 2 blocks: a block per thread
      Asym(P(1, 4, 9, 20, 6, 3, 5), 0, 4, 0, 1, 1, 3),  // left padding wider than a stride
      P(1, 10, 7, 9, 12, 1, 3, 1, 1),
      P(1, 16, 9, 8, 32, 3, 1, 1, 1),
      P(1, 12, 8, 8, 18, 3, 3, 1, 1, 1, 3),
      P(2, 16, 9, 9, 16, 3, 3, 1, 1, 1, 16),
      P(1, 24, 10, 11, 24, 3, 3, 2, 1, 1, 24),
      P(1, 8, 9, 9, 8, 5, 5, 1, 2, 1, 8),
      P(1, 8, 12, 12, 8, 5, 5, 2, 2, 2, 8),
      // Grouped, few channels per group (kGroupedDirect): RegNet-like 8 per group at stride 1
      // and 2, a flat output run longer than several register runs, chunks of 8 outputs plus a
      // remainder (20 = 8 + 8 + 4 per group), odd group sizes, a 5x5 window, stride 3 with
      // uneven pads, batch 2.
      P(1, 48, 14, 14, 48, 3, 3, 1, 1, 1, 6),
      P(2, 48, 15, 13, 48, 3, 3, 2, 1, 1, 6),
      P(1, 16, 5, 70, 40, 3, 3, 1, 1, 1, 2),
      P(1, 15, 9, 11, 25, 3, 3, 1, 1, 1, 5),
      P(1, 12, 11, 17, 6, 5, 5, 1, 2, 1, 3),
      Asym(P(1, 18, 13, 29, 12, 3, 3, 1, 0, 1, 3), 1, 2, 0, 3, 2, 3),
      Asym(P(1, 21, 9, 13, 21, 3, 3, 1, 0, 1, 21), 0, 2, 1, 0, 2, 1),  // odd depthwise, asym
      P(2, 32, 7, 7, 32, 7, 7, 1, 3, 1, 32),                            // the largest blocked dw
      P(1, 16, 13, 15, 20, 1, 1),  // a 1x1 over more pixels than one NCHWc chunk (96)
      // Partial last blocks (the kernels skip the zero lanes): 24 = 16 + 8 in and out (a pair
      // whose second block is half), 40 = 32 + 8 (a lone full block, then a pair with the half
      // one), 20 = 16 + 4, 7 (one partial block), as 1x1 over pixels and as a padded 3x3.
      P(1, 24, 9, 11, 40, 1, 1),
      P(2, 40, 7, 8, 24, 1, 1),
      P(1, 7, 5, 31, 20, 1, 1),
      P(1, 20, 6, 13, 7, 1, 1),
      P(1, 24, 7, 9, 40, 3, 3, 1, 1),
      P(1, 16, 6, 7, 72, 1, 1),  // 72 = 4.5 blocks: the lone block leads, the half one pairs
      // Calls of up to 4 blocks on a 1x1 over pixels (AVX-512): 88 = 4 + 1.5 blocks, 136 = 1 +
      // 4 + 3.5 (the lone block leads), 64 = 4.
      P(1, 16, 5, 9, 88, 1, 1),
      P(2, 24, 4, 11, 136, 1, 1),
      P(1, 32, 7, 7, 64, 1, 1),
      // The same past K = 64 (AVX-512's plain 4-block row, PointRowN): 5 input blocks, and
      // 4.5 (a last block of 8) under 4 + 1.5 output blocks.
      P(1, 80, 5, 9, 64, 1, 1),
      P(2, 72, 4, 5, 88, 1, 1),
      // Its 2-block row (12-column tiles): 99 pixels = a chunk of 8 tiles + 3 columns, 4.5
      // input blocks over 35 pixels, 28 = 16 + 12 output channels (the last block full width).
      P(1, 80, 9, 11, 32, 1, 1),
      P(2, 72, 5, 7, 32, 1, 1),
      P(1, 96, 6, 17, 28, 1, 1),
      // Chunks of a 1x1 over pixels grown past 96 columns while enough work items remain: 1517
      // pixels in chunks of 192 on one thread.
      P(1, 24, 37, 41, 40, 1, 1),
      // 7x7 maps of a 1x1 cut evenly inside one call (even_cut): 49 columns as tiles of 5 and 6
      // (4 blocks), of 9 and 10 (2 blocks), at short K with the next group's weights pulled
      // (48 input channels, 10 output blocks at 16) and at long K; then the same with a last
      // input block of 8 channels (24 = 16 + 8, 72 = 4 x 16 + 8).
      P(1, 48, 7, 7, 160, 1, 1),
      P(1, 160, 7, 7, 64, 1, 1),
      P(1, 96, 7, 7, 32, 1, 1),
      P(1, 24, 7, 7, 64, 1, 1),
      P(1, 72, 7, 7, 32, 1, 1),
      // Small padded maps: kDirectNchwc convolves a zero-padded copy of the input, one run of
      // tiles per row (1x1, 2x2, 4x4, 7x7 maps; stride 2 onto 7x7; odd widths; batch 2;
      // M past a pair of blocks and a lone last block; a padded 1x1, plain and strided).
      P(1, 20, 1, 1, 40, 3, 3, 1, 1),
      P(2, 24, 2, 2, 20, 3, 3, 1, 1),
      P(1, 32, 4, 4, 48, 3, 3, 1, 1),
      P(2, 24, 7, 7, 56, 3, 3, 1, 1),
      P(1, 40, 14, 14, 32, 3, 3, 2, 1),
      P(2, 17, 13, 13, 24, 3, 3, 2, 1),
      P(1, 16, 5, 5, 16, 3, 3, 2, 1),
      Asym(P(1, 16, 7, 9, 36, 3, 3), 1, 0, 2, 1, 2, 1),
      P(1, 24, 7, 7, 24, 5, 5, 1, 2),
      P(1, 16, 9, 29, 32, 3, 3, 1, 1),  // rows of 29: tiles of 10, 10 and 9 (AVX-512)
      // A left strip of the padded input (only the left padding is read; the first tile of a
      // row reads the strip, the rest the input): groups of 3 and 2 blocks, a partial input
      // block, a half last output block, batch 2, dilation, padding rows at the top only.
      P(1, 24, 10, 40, 48, 3, 3, 2, 1),
      P(2, 17, 9, 52, 40, 3, 3, 2, 1),
      Asym(P(1, 16, 12, 50, 32, 3, 3, 1, 0, 2), 1, 2, 1, 0, 2, 2),
      Asym(P(1, 32, 7, 44, 24, 3, 5), 2, 2, 0, 0, 1, 2),
      Asym(P(1, 16, 5, 24, 80, 3, 10), 1, 9, 1, 0, 1, 1),  // groups' first tiles of 12 and 8
      P(1, 16, 2, 60, 64, 3, 3, 2, 1),  // one output row: the 1x1's groups, no strip
      // Strided rows of at least 24 columns in groups of 4 blocks (AVX-512): a lone half block
      // leading, a partial input block, batch 2.
      P(1, 32, 10, 52, 64, 3, 3, 2, 1),
      P(2, 40, 7, 50, 72, 3, 3, 2, 1),
      // Groups of 3 blocks on AVX-512 rows: 4 blocks run as 2 + 2, 7 as 2 + 2 + 3, 17 as 5 x 3 + 2.
      P(1, 16, 6, 9, 64, 3, 3, 1, 1),
      P(1, 16, 5, 11, 112, 3, 3, 2, 1),
      // Groups whose 3 blocks of weights pass half of L2 (21 input blocks of a 3x3: 756 KiB, on
      // the 1 MiB L2 of the machines measured) run as pairs: 3.5 blocks as 2 + 1.5.
      P(1, 336, 5, 6, 56, 3, 3, 1, 1),
      P(1, 16, 5, 6, 24, 1, 1, 1, 1),
      Asym(P(1, 16, 5, 7, 20, 1, 1), 1, 0, 0, 1, 2, 2),
      // Unpadded strided 1x1s (direct_nchwc gathers each chunk's pixels per thread): a partial
      // input block, two images, unequal strides; 2 images of 15x15 = 225 pixels in chunks of
      // 96 (a chunk crosses rows; at 2 and 3 threads, one thread's items start mid-chunk).
      P(2, 24, 9, 11, 40, 1, 1, 2),
      P(1, 16, 28, 28, 256, 1, 1, 2),  // 196 pixels: 96 + 96 + 4, at 2 threads 66 + 66 + 64
      P(1, 80, 14, 14, 112, 1, 1),  // groups of 4 + 3 blocks: at 2 threads, items by chunk
      Asym(P(1, 20, 7, 9, 36, 1, 1), 0, 0, 0, 0, 3, 2),
      P(2, 40, 29, 30, 72, 1, 1, 2),
      // Stems (C <= 4; kStemNchwc, kGroupedDirect) besides the ones above: grey at stride 2 with
      // M = 24 (a pair of blocks past M at 16, one block and a pair at 8), RGBA 7x7 s2 at
      // batch 2, rows wider than two tiles, a dilated window at stride 1, windows that miss
      // the input, and windows wider than the input (no column sees the whole window).
      P(1, 1, 31, 50, 24, 3, 3, 2, 1),
      P(2, 4, 37, 29, 40, 7, 7, 2, 3),
      P(1, 3, 9, 113, 16, 3, 3, 2, 1),
      P(1, 2, 20, 19, 16, 3, 3, 1, 2, 2),
      P(1, 3, 4, 4, 16, 3, 3, 1, 3),
      P(1, 2, 2, 2, 16, 5, 5, 1, 2),
      // Stems whose rows are wider than a register run, stored straight into y: SqueezeNet's
      // unpadded 3x3 s2, a 7x7 s2 over several rows, rows of exactly 32 and of 16 + 1.
      P(1, 3, 35, 75, 24, 3, 3, 2, 0),
      P(1, 3, 30, 70, 16, 7, 7, 2, 3),
      P(1, 3, 9, 64, 8, 3, 3, 2, 1),
      P(1, 3, 11, 34, 12, 3, 3, 2, 1),
      // Rows that round up to whole vectors within the pitch run row by row (f32_gconv's row
      // mode): 48 columns (whole tiles at 16 and 8 lanes), 45 (a cut last vector, 7x7 s2),
      // 60 (a tile of two vectors, the second cut, 5x5 s1), and grouped with 44 columns.
      P(1, 3, 10, 96, 16, 3, 3, 2, 1),
      P(1, 3, 21, 90, 24, 7, 7, 2, 3),
      P(1, 3, 7, 60, 12, 5, 5, 1, 2),
      P(1, 8, 5, 44, 12, 5, 5, 1, 2, 1, 2),
      // AVX2's row mode runs 8 outputs as 4 + 4 (tiles of 3 vectors): 15 = 8 + 7 (4 + 3) over
      // 40 columns, 5 = 4 + 1 over 44.
      P(1, 3, 6, 80, 15, 3, 3, 2, 1),
      P(1, 2, 5, 44, 5, 5, 5, 1, 2),
      // Outputs wider than 32 with few output channels clip the window in place instead (runs
      // of columns with the same taps; rows and columns that miss the input; a padded 1x1),
      // and with many output channels copy again.
      P(1, 16, 5, 40, 16, 3, 3, 1, 1),
      P(1, 16, 6, 70, 8, 3, 3, 2, 1),
      P(2, 16, 2, 40, 16, 3, 3, 1, 3),
      P(1, 16, 3, 40, 16, 1, 1, 1, 1),
      P(1, 16, 3, 36, 272, 3, 3, 1, 1),
  };
}

struct Case {
  ConvParams p;
  Algorithm algo = Algorithm::kAuto;
  IsaLevel isa = IsaLevel::kScalar;
  size_t threads = 1;
  bool bias = false;
  gemm::Activation act = gemm::Activation::kNone;
  Layout layout = Layout::kNchw;  // kNchwc: a blocked depthwise or Winograd
  bool accumulate = false;        // Y starts as a random residual: Y = act(conv + bias + Y)

  std::string Describe() const {
    return StrCat(p.Describe(), " algo=", AlgorithmName(algo), " isa=", IsaName(isa),
                  layout == Layout::kNchwc ? " blocked" : "", accumulate ? " accumulate" : "",
                  " threads=", threads, " bias=", bias, " act=", gemm::ActivationName(act));
  }
};

// Runs one case against ref::Conv. Tolerance: the products are summed in a different order, so
// each output may differ by eps * (K + 1) * max|x| * max|w| (K = C/groups * KH * KW; inputs lie in
// [-1, 1]; doubled for safety), plus eps-sized terms for the bias, plus 1e-6 * (1 + |ref|) for
// the vectorized exp/erf of SiLU and GELU. kWinograd: the bound of winograd.h instead
// (kErrorFactor * eps * K), times 1.5 for HardSwish's slope.
void RunCase(const Case& tc) {
  SCOPED_TRACE(tc.Describe());
  const ConvParams& p = tc.p;
  ASSERT_TRUE(ValidateParams(p).ok()) << ValidateParams(p).message();
  const size_t oh = p.out_h(), ow = p.out_w(), k = p.c / p.groups * p.kh * p.kw;
  std::mt19937 rng(kSeed + static_cast<uint32_t>(p.c * 131 + p.m * 17 + p.kh));
  const std::vector<float> x = Random(p.n * p.c * p.h * p.w, rng);
  const std::vector<float> w = Random(p.m * k, rng);
  const std::vector<float> bias = Random(p.m, rng);

  PrepareOptions po;
  po.algorithm = tc.algo;
  po.isa = tc.isa;
  po.layout = tc.layout;
  Expected<PreparedConv> conv = PrepareConv(p, w.data(), po);
  ASSERT_TRUE(conv.ok()) << conv.status().message();
  EXPECT_EQ(conv->isa(), tc.isa);
  if (tc.algo != Algorithm::kAuto) {
    EXPECT_EQ(conv->algorithm(), tc.algo);
  }
  if (tc.layout == Layout::kNchwc) {
    EXPECT_EQ(conv->block(), SelectConvNchwcUkernel(tc.isa).block);
  }

  RunOptions ro;
  ro.pool = PoolOf(tc.threads);
  ro.epilogue.bias_kind = tc.bias ? gemm::BiasKind::kPerRow : gemm::BiasKind::kNone;
  ro.epilogue.bias = tc.bias ? bias.data() : nullptr;
  ro.epilogue.activation = tc.act;
  ro.epilogue.clip_min = -0.25f;
  ro.epilogue.clip_max = 0.5f;
  // NaN scratch: a driver must not rely on a zeroed workspace (the runtime reuses its arena).
  std::vector<float> ws(conv->WorkspaceSize(tc.threads), std::numeric_limits<float>::quiet_NaN());
  ro.workspace = ws.empty() ? nullptr : ws.data();

  // Without accumulate Y's old contents must not matter: NaN would show through.
  std::vector<float> y(p.n * p.m * oh * ow, std::numeric_limits<float>::quiet_NaN());
  const std::vector<float> residual = tc.accumulate ? Random(y.size(), rng) : std::vector<float>{};
  if (tc.accumulate) y = residual;
  ro.accumulate = tc.accumulate;
  if (conv->layout() == Layout::kNchwc) {
    // kStemNchwc reads NCHW and writes NCHWc; the others take NCHWc on both sides.
    const size_t cb = conv->block();
    std::vector<float> xc = x;
    if (conv->input_layout() == Layout::kNchwc) {
      xc.assign(NchwcSize(p.n, p.c, p.h, p.w, cb), 0.0f);
      NchwToNchwc(p.n, p.c, p.h, p.w, cb, x.data(), xc.data(), ro.pool);
    }
    std::vector<float> yc(NchwcSize(p.n, p.m, oh, ow, cb), std::numeric_limits<float>::quiet_NaN());
    if (tc.accumulate) NchwToNchwc(p.n, p.m, oh, ow, cb, residual.data(), yc.data(), ro.pool);
    const Status st = conv::Run(*conv, xc.data(), yc.data(), ro);
    ASSERT_TRUE(st.ok()) << st.message();
    NchwcToNchw(p.n, p.m, oh, ow, cb, yc.data(), y.data(), ro.pool);
  } else {
    const Status st = conv::Run(*conv, x.data(), y.data(), ro);
    ASSERT_TRUE(st.ok()) << st.message();
  }

  ref::ConvGeometry g;
  g.batch = static_cast<int64_t>(p.n);
  g.in_channels = static_cast<int64_t>(p.c);
  g.out_channels = static_cast<int64_t>(p.m);
  g.group = static_cast<int64_t>(p.groups);
  g.in = {1, static_cast<int64_t>(p.h), static_cast<int64_t>(p.w)};
  g.out = {1, static_cast<int64_t>(oh), static_cast<int64_t>(ow)};
  g.kernel = {1, static_cast<int64_t>(p.kh), static_cast<int64_t>(p.kw)};
  g.stride = {1, static_cast<int64_t>(p.stride_h), static_cast<int64_t>(p.stride_w)};
  g.dilation = {1, static_cast<int64_t>(p.dilation_h), static_cast<int64_t>(p.dilation_w)};
  g.pad_begin = {0, static_cast<int64_t>(p.pad_top), static_cast<int64_t>(p.pad_left)};
  std::vector<float> want(y.size());
  ref::Conv<float>(g, x.data(), w.data(), tc.bias ? bias.data() : nullptr, want.data());

  const double eps = std::numeric_limits<float>::epsilon();
  size_t bad = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const float expect = Activate(want[i] + (tc.accumulate ? residual[i] : 0.0f), ro.epilogue);
    const double sum_err = conv->algorithm() == Algorithm::kWinograd
                               ? 1.5 * winograd::kErrorFactor * eps * static_cast<double>(k)
                               : 2.0 * eps * static_cast<double>(k + 1);
    const double tol = 1.2 * (sum_err + 4.0 * eps) + 1e-6 * (1.0 + std::fabs(expect));
    if (!(std::fabs(y[i] - expect) <= tol) && ++bad <= 5) {
      ADD_FAILURE() << "y[" << i << "] = " << y[i] << ", want " << expect << " (tol " << tol << ")";
    }
  }
}

TEST(Conv, EveryAlgorithmShapeIsaAndThreadCount) {
  size_t variant = 0;
  for (const ConvParams& p : Shapes()) {
    for (Algorithm algo : kAlgorithms) {
      if (!Supports(algo, p)) continue;
      for (IsaLevel isa : IsaLevels()) {
        for (Layout layout : {Layout::kNchw, Layout::kNchwc}) {
          if (layout == Layout::kNchwc &&
              ((algo != Algorithm::kDepthwise && algo != Algorithm::kWinograd) ||
               !SupportsBlocked(algo, p, isa)))
            continue;
          for (size_t threads : {1, 2, 3}) {
            Case tc;
            tc.p = p;
            tc.algo = algo;
            tc.isa = isa;
            tc.threads = threads;
            tc.layout = layout;
            tc.bias = variant % 3 != 0;
            tc.act = kActivations[variant % std::size(kActivations)];
            ++variant;
            RunCase(tc);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

// A 1x1 over pixels whose input plane is larger than this CPU's L2 runs its items chunk by
// chunk (direct_nchwc's streams_once), 5 output blocks at 16 (a lone block, then 4) or 10
// at 8, with 2 threads as well, and on a 32 KiB L1d in passes over the input blocks
// (ConvNchwcUkernel::pointwise_passes_past_l2): 200 input channels make 12.5 blocks at 16
// (passes of 8 + 4.5, the last block partial) and 25 at 8. Sized from the L2 that cpuinfo
// reports, so the rules apply wherever the test runs.
TEST(Conv, DirectNchwcPlaneOverL2ByChunk) {
  const size_t l2 = GetCpuInfo().l2_bytes, c = 200, in_pixel = c * sizeof(float);
  const size_t side = static_cast<size_t>(std::sqrt(static_cast<double>(l2 / in_pixel))) + 3;
  for (IsaLevel isa : IsaLevels()) {
    for (size_t threads : {1, 2}) {
      Case tc;
      tc.p = P(1, c, side, side + 1, 80, 1, 1);
      tc.algo = Algorithm::kDirectNchwc;
      tc.isa = isa;
      tc.threads = threads;
      tc.bias = threads == 1;
      tc.act = threads == 1 ? gemm::Activation::kNone : gemm::Activation::kRelu;
      RunCase(tc);
      if (HasFatalFailure()) return;
    }
  }
}

// A 1x1 over pixels whose calls' weights are larger than this CPU's L1d even in calls of 2
// output blocks, which some cores' table rows then run in passes over the input blocks
// (ConvNchwcUkernel::pointwise_passes_past_l1; those rows take 2-block calls there,
// pointwise_tall_in_half_l1): a last input block of 8 channels, 5 output blocks at 16, with a
// bias and ReLU on one thread, a residual on two. Sized from the L1d that cpuinfo reports.
TEST(Conv, DirectNchwcWeightsOverL1InPasses) {
  const size_t blocks = GetCpuInfo().l1d_bytes / (2 * 16 * 16 * sizeof(float)) + 2;
  for (IsaLevel isa : IsaLevels()) {
    for (size_t threads : {1, 2}) {
      Case tc;
      tc.p = P(1, 16 * blocks + 8, 9, 11, 80, 1, 1);
      tc.algo = Algorithm::kDirectNchwc;
      tc.isa = isa;
      tc.threads = threads;
      tc.bias = threads == 1;
      tc.act = threads == 1 ? gemm::Activation::kRelu : gemm::Activation::kNone;
      tc.accumulate = threads == 2;
      RunCase(tc);
      if (HasFatalFailure()) return;
    }
  }
}

// Residual adds fused into the conv (runtime conv2d steps with a residual input): every algorithm
// that supports accumulate, every ISA, on all shapes, with the activations in turn.
TEST(Conv, AccumulateOntoTheOutput) {
  size_t variant = 0;
  for (const ConvParams& p : Shapes()) {
    for (Algorithm algo : kAlgorithms) {
      if (!Supports(algo, p) || !SupportsAccumulate(algo)) continue;
      for (IsaLevel isa : IsaLevels()) {
        Case tc;
        tc.p = p;
        tc.algo = algo;
        tc.isa = isa;
        tc.threads = 1 + variant % 3;
        tc.bias = variant % 2 == 0;
        tc.act = kActivations[variant % std::size(kActivations)];
        tc.accumulate = true;
        ++variant;
        RunCase(tc);
        if (HasFatalFailure()) return;
      }
    }
  }
  // The others refuse rather than overwrite.
  const ConvParams p = P(1, 64, 14, 14, 72, 3, 3, 1, 1);
  std::mt19937 rng(kSeed);
  const std::vector<float> x = Random(p.n * p.c * p.h * p.w, rng);
  const std::vector<float> w = Random(p.m * p.c * 9, rng);
  PrepareOptions po;
  po.algorithm = Algorithm::kWinograd;
  Expected<PreparedConv> conv = PrepareConv(p, w.data(), po);
  ASSERT_TRUE(conv.ok()) << conv.status().message();
  std::vector<float> y(p.m * p.out_h() * p.out_w(), 1.0f);
  RunOptions ro;
  ro.accumulate = true;
  const Status st = conv::Run(*conv, x.data(), y.data(), ro);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("accumulate"), std::string::npos) << st.message();
  EXPECT_EQ(y[0], 1.0f);
}

TEST(Conv, EveryActivationOnEachAlgorithm) {
  const ConvParams shapes[] = {P(1, 16, 7, 9, 20, 1, 1), P(1, 16, 7, 9, 20, 3, 3, 1, 1),
                               P(1, 8, 7, 9, 8, 3, 3, 1, 1, 1, 8),
                               P(1, 3, 15, 17, 24, 3, 3, 2, 1)};  // a stem
  for (const ConvParams& p : shapes) {
    for (Algorithm algo : kAlgorithms) {
      if (!Supports(algo, p)) continue;
      for (gemm::Activation act : kActivations) {
        for (Layout layout : {Layout::kNchw, Layout::kNchwc}) {
          if (layout == Layout::kNchwc && algo != Algorithm::kDepthwise &&
              algo != Algorithm::kWinograd)
            continue;
          Case tc;
          tc.p = p;
          tc.algo = algo;
          tc.isa = ActiveIsa();
          tc.bias = true;
          tc.act = act;
          tc.layout = layout;
          RunCase(tc);
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln::conv
