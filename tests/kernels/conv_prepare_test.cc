// Convolution preparation and its views against what was prepared: algorithm names, the cost
// model's picks, prepared parts read back (Winograd, blocked depthwise, stems) with hostile
// parts refused, the measured choice and its cache, the NCHW <-> NCHWc layouts, and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "conv_test_util.h"
#include "kernel_test_util.h"
#include "kernels/conv/conv.h"
#include "kernels/conv/conv_ukernels.h"
#include "kernels/conv/layout.h"
#include "kernels/winograd/winograd.h"
#include "support/cpu.h"
#include "support/thread_pool.h"

namespace kiln::conv {
namespace {

using namespace conv_test;  // NOLINT(build/namespaces): the shared helpers
using kernel_test::Random;
using kernel_test::TwoThreads;

TEST(Conv, AlgorithmNamesRoundTrip) {
  for (Algorithm a : kAlgorithms) EXPECT_EQ(AlgorithmFromName(AlgorithmName(a)), a);
  EXPECT_EQ(AlgorithmFromName("Winograd"), std::nullopt);
  EXPECT_EQ(AlgorithmFromName(""), std::nullopt);
}

TEST(Conv, CostModelPicks) {
  EXPECT_EQ(ChooseAlgorithm(P(1, 64, 56, 56, 64, 1, 1), IsaLevel::kAvx2), Algorithm::kGemm1x1);
  EXPECT_EQ(ChooseAlgorithm(P(1, 256, 56, 56, 512, 1, 1, 2), IsaLevel::kAvx2),
            Algorithm::kGemm1x1);
  EXPECT_EQ(ChooseAlgorithm(P(1, 64, 56, 56, 64, 3, 3, 1, 1), IsaLevel::kAvx2),
            Algorithm::kWinograd);
  EXPECT_EQ(ChooseAlgorithm(P(1, 512, 7, 7, 512, 3, 3, 1, 1), IsaLevel::kAvx512),
            Algorithm::kDirectNchwc);
  EXPECT_EQ(ChooseAlgorithm(P(1, 128, 28, 28, 32, 3, 3, 1, 1), IsaLevel::kAvx512),
            Algorithm::kWinograd);
  EXPECT_EQ(ChooseAlgorithm(P(1, 16, 28, 28, 32, 3, 3, 1, 1), IsaLevel::kAvx512),
            Algorithm::kDirectNchwc);
  EXPECT_EQ(ChooseAlgorithm(P(1, 128, 14, 14, 32, 3, 3, 1, 1), IsaLevel::kAvx512),
            Algorithm::kDirectNchwc);
  EXPECT_EQ(ChooseAlgorithm(P(1, 128, 14, 14, 32, 3, 3, 1, 1), IsaLevel::kAvx2),
            Algorithm::kWinograd);
  EXPECT_EQ(ChooseAlgorithm(P(1, 128, 28, 28, 128, 3, 3, 2, 1), IsaLevel::kAvx512),
            Algorithm::kDirectNchwc);
  // SqueezeNet's expands: 13x13 maps, and 16 input channels with M >= 64 at AVX-512 only.
  EXPECT_EQ(ChooseAlgorithm(P(1, 64, 13, 13, 256, 3, 3, 1, 1), IsaLevel::kAvx2),
            Algorithm::kWinograd);
  EXPECT_EQ(ChooseAlgorithm(P(1, 16, 55, 55, 64, 3, 3, 1, 1), IsaLevel::kAvx512),
            Algorithm::kWinograd);
  EXPECT_EQ(ChooseAlgorithm(P(1, 16, 55, 55, 64, 3, 3, 1, 1), IsaLevel::kAvx2),
            Algorithm::kDirectNchwc);
  EXPECT_EQ(ChooseAlgorithm(P(1, 16, 14, 14, 48, 3, 3, 1, 1), IsaLevel::kAvx512),
            Algorithm::kDirectNchwc);
  EXPECT_EQ(ChooseAlgorithm(P(1, 64, 56, 56, 64, 3, 3, 1, 1), IsaLevel::kScalar),
            Algorithm::kIm2colGemm);
  // Image stems (C <= 4) run the grouped direct kernel as one group; not on scalar code.
  EXPECT_EQ(ChooseAlgorithm(P(1, 3, 224, 224, 64, 7, 7, 2, 3), IsaLevel::kAvx2),
            Algorithm::kGroupedDirect);
  EXPECT_EQ(ChooseAlgorithm(P(1, 3, 224, 224, 64, 7, 7, 2, 3), IsaLevel::kScalar),
            Algorithm::kIm2colGemm);
  EXPECT_EQ(ChooseAlgorithm(P(1, 16, 28, 28, 32, 3, 3, 1, 1), IsaLevel::kAvx512),
            Algorithm::kDirectNchwc);
  EXPECT_EQ(ChooseAlgorithm(P(1, 32, 112, 112, 32, 3, 3, 1, 1, 1, 32), IsaLevel::kAvx2),
            Algorithm::kDepthwise);
  EXPECT_EQ(ChooseAlgorithm(P(1, 104, 28, 28, 104, 3, 3, 1, 1, 1, 13), IsaLevel::kAvx2),
            Algorithm::kGroupedDirect);
  EXPECT_EQ(ChooseAlgorithm(P(1, 104, 28, 28, 104, 3, 3, 1, 1, 1, 13), IsaLevel::kScalar),
            Algorithm::kIm2colGemm);
  EXPECT_EQ(ChooseAlgorithm(P(1, 128, 28, 28, 128, 3, 3, 1, 1, 1, 2), IsaLevel::kAvx2),
            Algorithm::kIm2colGemm);
}

// kWinograd's packed U matrices, copied into one buffer (as a compiled module stores them) and
// viewed again: the view runs like the original; parts that lie are refused, not run.
TEST(Conv, WinogradViewRoundTripAndHostileParts) {
  const ConvParams p = Asym(P(2, 13, 9, 11, 19, 3, 3), 1, 0, 2, 1, 1, 1);
  std::mt19937 rng(kSeed + 5);
  const std::vector<float> w = Random(p.m * p.c * 9, rng);
  const std::vector<float> x = Random(p.n * p.c * p.h * p.w, rng);
  const std::vector<float> bias = Random(p.m, rng);
  for (IsaLevel isa : IsaLevels()) {
    SCOPED_TRACE(IsaName(isa));
    PrepareOptions po;
    po.algorithm = Algorithm::kWinograd;
    po.isa = isa;
    Expected<PreparedConv> conv = PrepareConv(p, w.data(), po);
    ASSERT_TRUE(conv.ok()) << conv.status().message();
    ASSERT_EQ(conv->packed().size(), kWinogradMatrices);
    EXPECT_EQ(conv->layout(), Layout::kNchw);
    const gemm::PackedMatrix& first = conv->packed().front();
    const size_t bytes = first.size_bytes();
    auto store = std::make_shared<std::vector<float>>(kWinogradMatrices * bytes / sizeof(float));
    for (size_t i = 0; i < kWinogradMatrices; ++i) {
      std::copy_n(conv->packed()[i].data(), bytes / sizeof(float),
                  store->data() + i * bytes / sizeof(float));
    }
    auto parts_of = [&](size_t count) {
      PreparedConvParts parts;
      parts.params = p;
      parts.algorithm = Algorithm::kWinograd;
      parts.isa = conv->isa();
      for (size_t i = 0; i < count; ++i) {
        auto view = gemm::PackedMatrix::View(true, p.m, p.c, first.panel_width(), first.isa(),
                                             store->data() + i * bytes / sizeof(float), bytes,
                                             store);
        EXPECT_TRUE(view.ok()) << view.status().message();
        if (view.ok()) parts.packed.push_back(std::move(view).value());
      }
      return parts;
    };
    Expected<PreparedConv> viewed = ViewPreparedConv(parts_of(kWinogradMatrices), store);
    ASSERT_TRUE(viewed.ok()) << viewed.status().message();
    EXPECT_EQ(viewed->algorithm(), Algorithm::kWinograd);
    EXPECT_EQ(viewed->packed().front().data(), store->data());  // a view, not a copy
    for (size_t threads : {1, 2}) {
      RunOptions ro;
      ro.pool = threads > 1 ? TwoThreads() : nullptr;
      ro.epilogue.bias_kind = gemm::BiasKind::kPerRow;
      ro.epilogue.bias = bias.data();
      ro.epilogue.activation = gemm::Activation::kRelu;
      std::vector<float> ws(viewed->WorkspaceSize(threads));
      EXPECT_EQ(ws.size(), conv->WorkspaceSize(threads));
      EXPECT_GT(ws.size(), 0u);
      ro.workspace = ws.data();
      std::vector<float> y0(p.n * p.m * p.out_h() * p.out_w()), y1(y0.size(), 1.0f);
      ASSERT_TRUE(conv::Run(*conv, x.data(), y0.data(), ro).ok());
      ASSERT_TRUE(conv::Run(*viewed, x.data(), y1.data(), ro).ok());
      EXPECT_EQ(y0, y1);
    }
    // Parts that lie.
    EXPECT_FALSE(ViewPreparedConv(parts_of(kWinogradMatrices - 1), store).ok());
    PreparedConvParts bad = parts_of(kWinogradMatrices);
    bad.packed.push_back(bad.packed.front());
    EXPECT_FALSE(ViewPreparedConv(std::move(bad), store).ok());
    bad = parts_of(kWinogradMatrices);
    bad.params.c += 1;  // the matrices are M x C of another C
    EXPECT_FALSE(ViewPreparedConv(std::move(bad), store).ok());
    bad = parts_of(kWinogradMatrices);
    bad.params.m -= 1;
    EXPECT_FALSE(ViewPreparedConv(std::move(bad), store).ok());
    bad = parts_of(kWinogradMatrices);
    bad.params.stride_h = 2;  // Winograd cannot run it
    EXPECT_FALSE(ViewPreparedConv(std::move(bad), store).ok());
    bad = parts_of(kWinogradMatrices);
    bad.params.kh = bad.params.kw = 5;
    EXPECT_FALSE(ViewPreparedConv(std::move(bad), store).ok());
    bad = parts_of(kWinogradMatrices);
    bad.block = 16;
    EXPECT_FALSE(ViewPreparedConv(std::move(bad), store).ok());
    bad = parts_of(kWinogradMatrices);
    bad.weights = store->data();
    bad.weight_floats = 9;
    EXPECT_FALSE(ViewPreparedConv(std::move(bad), store).ok());
    if (isa != IsaLevel::kScalar) {
      bad = parts_of(kWinogradMatrices);
      bad.isa = IsaLevel::kScalar;  // the panels were packed for another microkernel
      EXPECT_FALSE(ViewPreparedConv(std::move(bad), store).ok());
    }
  }
}

TEST(Conv, MeasuredChoiceIsSupportedAndCached) {
  const ConvParams p = P(1, 16, 10, 10, 16, 3, 3, 1, 1);
  Expected<Algorithm> a = MeasureAlgorithm(p, nullptr);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_TRUE(Supports(*a, p));
  Expected<Algorithm> b = MeasureAlgorithm(p, nullptr);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*a, *b);
}

// Every value of both reorders, with a partial last block, and maps of fewer and more than 16
// pixels (the transposing packer's remainder and whole 16x16 transposes).
TEST(Conv, LayoutRoundTrip) {
  std::mt19937 rng(kSeed);
  for (size_t block : {8, 16}) {
    for (auto [c, h, w] : {std::array<size_t, 3>{19, 3, 5}, std::array<size_t, 3>{37, 7, 9}}) {
      const size_t n = 2, hw = h * w, blocks = (c + block - 1) / block;
      const std::vector<float> x = Random(n * c * hw, rng);
      std::vector<float> xc(NchwcSize(n, c, h, w, block), 1.0f), back(x.size());
      NchwToNchwc(n, c, h, w, block, x.data(), xc.data(), TwoThreads());
      for (size_t i = 0; i < xc.size(); ++i) {
        const size_t img = i / (blocks * hw * block), ch = i / (hw * block) % blocks * block +
                                                           i % block;
        const float want = ch < c ? x[(img * c + ch) * hw + i / block % hw] : 0.0f;
        ASSERT_EQ(xc[i], want) << "block " << block << " C " << c << " at " << i;
      }
      NchwcToNchw(n, c, h, w, block, xc.data(), back.data());
      EXPECT_EQ(back, x);
    }
  }
}

TEST(Conv, BlockedDepthwisePrepareAndView) {
  const ConvParams p = P(1, 32, 9, 9, 32, 3, 3, 1, 1, 1, 32);
  const std::vector<float> w(32 * 9, 0.5f);
  PrepareOptions po;
  po.algorithm = Algorithm::kDepthwise;
  po.layout = Layout::kNchwc;
  // Dilation and windows past 7x7 have no blocked kernel: a clear error, not a wrong answer.
  EXPECT_FALSE(PrepareConv(P(1, 32, 9, 9, 32, 3, 3, 1, 2, 2, 32), w.data(), po).ok());
  const std::vector<float> big(32 * 81, 0.5f);
  EXPECT_FALSE(SupportsBlocked(Algorithm::kDepthwise, P(1, 32, 9, 9, 32, 9, 9, 1, 4, 1, 32),
                               ActiveIsa()));
  EXPECT_FALSE(PrepareConv(P(1, 32, 9, 9, 32, 9, 9, 1, 4, 1, 32), big.data(), po).ok());
  EXPECT_FALSE(SupportsBlocked(Algorithm::kGemm1x1, P(1, 16, 4, 4, 16, 1, 1), ActiveIsa()));
  Expected<PreparedConv> conv = PrepareConv(p, w.data(), po);
  ASSERT_TRUE(conv.ok()) << conv.status().message();
  ASSERT_EQ(conv->layout(), Layout::kNchwc);
  PreparedConvParts parts;
  parts.params = p;
  parts.algorithm = Algorithm::kDepthwise;
  parts.isa = conv->isa();
  parts.weights = conv->weights();
  parts.weight_floats = conv->weight_floats();
  for (size_t block : {size_t{1}, conv->block()}) {
    parts.block = block;
    Expected<PreparedConv> view = ViewPreparedConv(parts, nullptr);
    ASSERT_TRUE(view.ok()) << view.status().message();
    EXPECT_EQ(view->block(), block);
  }
  parts.block = 4;
  EXPECT_FALSE(ViewPreparedConv(parts, nullptr).ok());
  parts.block = conv->block();
  parts.params.dilation_h = 2;
  parts.params.pad_top = parts.params.pad_bottom = 2;
  EXPECT_FALSE(ViewPreparedConv(parts, nullptr).ok());
}

TEST(Conv, StemPrepareAndView) {
  // One group of at most 4 channels only; the cost model never picks it (its output is NCHWc).
  EXPECT_FALSE(Supports(Algorithm::kStemNchwc, P(1, 5, 9, 9, 16, 3, 3, 2, 1)));
  EXPECT_FALSE(Supports(Algorithm::kStemNchwc, P(1, 4, 9, 9, 16, 3, 3, 2, 1, 1, 2)));
  EXPECT_TRUE(SupportsBlocked(Algorithm::kStemNchwc, P(1, 3, 9, 9, 16, 3, 3, 2, 1), ActiveIsa()));
  for (IsaLevel isa : IsaLevels()) {
    EXPECT_NE(ChooseAlgorithm(P(1, 3, 224, 224, 32, 3, 3, 2, 1), isa), Algorithm::kStemNchwc);
  }
  const ConvParams p = P(1, 3, 11, 11, 20, 3, 3, 2, 1);
  const std::vector<float> w(20 * 3 * 9, 0.5f);
  PrepareOptions po;
  po.algorithm = Algorithm::kStemNchwc;
  Expected<PreparedConv> conv = PrepareConv(p, w.data(), po);
  ASSERT_TRUE(conv.ok()) << conv.status().message();
  EXPECT_EQ(conv->layout(), Layout::kNchwc);
  EXPECT_EQ(conv->input_layout(), Layout::kNchw);
  EXPECT_EQ(conv->WorkspaceSize(3), 0u);
  PreparedConvParts parts;
  parts.params = p;
  parts.algorithm = Algorithm::kStemNchwc;
  parts.isa = conv->isa();
  parts.block = conv->block();
  parts.weights = conv->weights();
  parts.weight_floats = conv->weight_floats();
  Expected<PreparedConv> view = ViewPreparedConv(parts, nullptr);
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_EQ(view->input_layout(), Layout::kNchw);
  parts.block = 1;  // always blocked
  EXPECT_FALSE(ViewPreparedConv(parts, nullptr).ok());
  parts.block = conv->block();
  parts.weight_floats -= 1;
  EXPECT_FALSE(ViewPreparedConv(parts, nullptr).ok());
  parts.weight_floats += 1;
  parts.params.c = 5;  // not a stem
  EXPECT_FALSE(ViewPreparedConv(parts, nullptr).ok());
}

TEST(Conv, Errors) {
  const std::vector<float> w(64, 0.0f);
  EXPECT_FALSE(ValidateParams(P(1, 0, 4, 4, 4, 1, 1)).ok());
  EXPECT_FALSE(ValidateParams(P(1, 6, 4, 4, 4, 1, 1, 1, 0, 1, 4)).ok());  // groups !| C
  EXPECT_FALSE(ValidateParams(P(1, 4, 2, 2, 4, 5, 5)).ok());              // window too big
  EXPECT_FALSE(PrepareConv(P(1, 4, 4, 4, 4, 1, 1), nullptr).ok());
  PrepareOptions po;
  po.algorithm = Algorithm::kGemm1x1;
  EXPECT_FALSE(PrepareConv(P(1, 4, 4, 4, 4, 3, 3, 1, 1), w.data(), po).ok());
  Expected<PreparedConv> conv = PrepareConv(P(1, 4, 4, 4, 4, 1, 1), w.data());
  ASSERT_TRUE(conv.ok());
  std::vector<float> x(64), y(64);
  EXPECT_FALSE(conv::Run(*conv, nullptr, y.data()).ok());
  RunOptions ro;
  ro.epilogue.bias_kind = gemm::BiasKind::kPerColumn;
  ro.epilogue.bias = x.data();
  EXPECT_FALSE(conv::Run(*conv, x.data(), y.data(), ro).ok());
  ro.epilogue.bias_kind = gemm::BiasKind::kPerRow;
  ro.epilogue.bias = nullptr;
  EXPECT_FALSE(conv::Run(*conv, x.data(), y.data(), ro).ok());
  EXPECT_FALSE(conv::Run(PreparedConv(), x.data(), y.data()).ok());
}

}  // namespace
}  // namespace kiln::conv
