// Winograd F(4x4, 3x3) against the reference conv: odd sizes, pads, channel counts, bias and
// activations, threads 1 and 2, every ISA level, NCHW and NCHWc; and the error bound stated in
// winograd.h.
#include "kernels/winograd/winograd.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/ref/conv.h"
#include "support/cpu.h"
#include "support/thread_pool.h"

namespace kiln::winograd {
namespace {

constexpr uint32_t kSeed = 20261131;
using gemm::Activation;

using kernel_test::Activate;
using kernel_test::IsaLevels;
using kernel_test::Random;
using kernel_test::TwoThreads;

struct Case {
  WinogradConvParams p;
  size_t m = 1;
  bool bias = false;
  Activation act = Activation::kNone;

  std::string Describe(size_t threads, IsaLevel isa) const {
    return StrCat("N=", p.n, " C=", p.c, " M=", m, " H=", p.h, " W=", p.w,
                  " pads(t,l,b,r)=", p.pad_top, ",", p.pad_left, ",", p.pad_bottom, ",",
                  p.pad_right, " bias=", bias, " act=", gemm::ActivationName(act),
                  " threads=", threads, " isa=", IsaName(isa), " seed=", kSeed);
  }
};

std::vector<float> Reference(const Case& k, const std::vector<float>& x,
                             const std::vector<float>& w, const float* bias) {
  const WinogradConvParams& p = k.p;
  ref::ConvGeometry g;
  g.batch = static_cast<int64_t>(p.n);
  g.in_channels = static_cast<int64_t>(p.c);
  g.out_channels = static_cast<int64_t>(k.m);
  g.in = {1, static_cast<int64_t>(p.h), static_cast<int64_t>(p.w)};
  g.out = {1, static_cast<int64_t>(p.out_h()), static_cast<int64_t>(p.out_w())};
  g.kernel = {1, 3, 3};
  g.pad_begin = {0, static_cast<int64_t>(p.pad_top), static_cast<int64_t>(p.pad_left)};
  std::vector<float> y(p.n * k.m * p.out_h() * p.out_w());
  ref::Conv<float>(g, x.data(), w.data(), bias, y.data());
  return y;
}

// Runs one case at every ISA level and thread count; returns the largest |error| / bound seen
// (> 1 is a failure, reported with the case).
double Check(const Case& k, std::mt19937& rng) {
  const WinogradConvParams& p = k.p;
  const std::vector<float> x = Random(p.n * p.c * p.h * p.w, rng);
  const std::vector<float> w = Random(k.m * p.c * 9, rng);
  const std::vector<float> b = Random(k.m, rng);
  const float* bias = k.bias ? b.data() : nullptr;
  gemm::Epilogue ep;
  ep.activation = k.act;
  ep.clip_min = -0.25f;
  ep.clip_max = 0.5f;
  std::vector<float> want = Reference(k, x, w, bias);
  for (float& v : want) v = Activate(v, ep);
  // The bound of winograd.h; the activations used here are 1-Lipschitz (HardSwish: 1.5).
  const double bound = 1.5 * kErrorFactor * std::ldexp(1.0, -23) * 9.0 * p.c + 1e-6;
  // Act(0): what the padding channels of a blocked y must hold.
  const float act0 = Activate(0.0f, ep);
  const size_t ohw = p.out_h() * p.out_w(), hw = p.h * p.w;
  double worst = 0.0;
  for (IsaLevel isa : IsaLevels()) {
    // NCHW, and NCHWc with the block conv layers use at this level.
    for (size_t cb : {size_t{1}, size_t{isa >= IsaLevel::kAvx512 ? 16u : 8u}}) {
      Expected<PreparedWinograd> pw = PreparedWinograd::Prepare(k.m, p.c, w.data(), isa, cb);
      if (!pw.ok()) {
        ADD_FAILURE() << k.Describe(1, isa) << " cb=" << cb << ": " << pw.status().message();
        return 2.0;
      }
      // x blocked, its padding channels holding junk that zero weights must cancel.
      const size_t cblocks = (p.c + cb - 1) / cb, mblocks = (k.m + cb - 1) / cb;
      std::vector<float> xb(cb == 1 ? 0 : p.n * cblocks * cb * hw, 0.75f);
      for (size_t i = 0; i < xb.size() / cb; ++i) {
        const size_t n = i / (cblocks * hw), c0 = i / hw % cblocks * cb, px = i % hw;
        for (size_t l = 0; l < cb && c0 + l < p.c; ++l) {
          xb[i * cb + l] = x[(n * p.c + c0 + l) * hw + px];
        }
      }
      for (size_t threads : {1, 2}) {
        std::vector<float> y(cb == 1 ? want.size() : p.n * mblocks * cb * ohw);
        ThreadPool* pool = threads == 2 ? TwoThreads() : nullptr;
        // Half of the runs bring their own exact-size workspace.
        std::vector<float> ws(threads == 2 ? pw->WorkspaceFloats(p, 2) : 0);
        const Status st = pw->Run(p, cb == 1 ? x.data() : xb.data(), bias, ep, y.data(), pool,
                                  ws.empty() ? nullptr : ws.data());
        const std::string what = StrCat(k.Describe(threads, isa), " cb=", cb);
        if (!st.ok()) {
          ADD_FAILURE() << what << ": " << st.message();
          return 2.0;
        }
        for (size_t i = 0; i < y.size(); ++i) {
          // y[i] is channel c of pixel px of image n (NCHW or NCHWc).
          const size_t n = i / (y.size() / p.n), px = cb == 1 ? i % ohw : i / cb % ohw;
          const size_t c = cb == 1 ? i / ohw % k.m : i / (cb * ohw) % mblocks * cb + i % cb;
          if (c >= k.m) {
            if (!(y[i] == act0)) {
              ADD_FAILURE() << what << ": padding channel " << c << " holds " << y[i];
              return 2.0;
            }
            continue;
          }
          const double ref = want[(n * k.m + c) * ohw + px];
          const double err = std::fabs(static_cast<double>(y[i]) - ref) / bound;
          if (!(err <= 1.0)) {
            ADD_FAILURE() << what << ": y[" << i << "] = " << y[i] << " (image " << n
                          << ", channel " << c << ", pixel " << px << "), want " << ref
                          << " (bound " << bound << ")";
            return 2.0;
          }
          worst = std::max(worst, err);
        }
      }
    }
  }
  return worst;
}

TEST(Winograd, OddSizesAndPads) {
  std::mt19937 rng(kSeed);
  for (size_t h : {1, 2, 3, 5, 7, 13, 17, 56}) {
    for (size_t w : {1, 2, 3, 5, 7, 13, 17, 56}) {
      const size_t pads[][4] = {{1, 1, 1, 1}, {0, 0, 0, 0}, {0, 0, 1, 1}, {2, 1, 0, 3}};
      for (const auto& pd : pads) {
        Case k;
        k.p.c = 3;
        k.m = 5;
        k.p.h = h;
        k.p.w = w;
        k.p.pad_top = pd[0];
        k.p.pad_left = pd[1];
        k.p.pad_bottom = pd[2];
        k.p.pad_right = pd[3];
        k.bias = true;
        if (k.p.out_h() == 0 || k.p.out_w() == 0) continue;
        if (Check(k, rng) > 1.0) return;
      }
    }
  }
}

TEST(Winograd, ChannelsBatchBiasActivations) {
  std::mt19937 rng(kSeed + 1);
  for (size_t c : {1, 3, 8, 17, 32}) {
    for (size_t m : {1, 7, 16, 33}) {
      for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kClip,
                             Activation::kSilu, Activation::kHardSwish, Activation::kGelu}) {
        Case k;
        k.p.n = c == 8 ? 2 : 1;
        k.p.c = c;
        k.m = m;
        k.p.h = 11;
        k.p.w = 14;
        k.p.pad_top = k.p.pad_left = k.p.pad_bottom = k.p.pad_right = 1;
        k.bias = (m & 1) != 0;
        k.act = act;
        if (Check(k, rng) > 1.0) return;
      }
    }
  }
}

// Tile rows longer than one 16-tile vector of the gather/scatter microkernels, with and without
// borders and with a vector activation.
TEST(Winograd, LongTileRows) {
  std::mt19937 rng(kSeed + 4);
  for (size_t w : {64, 66, 150}) {
    for (Activation act : {Activation::kRelu, Activation::kSilu}) {
      Case k;
      k.p.c = 5;
      k.m = 6;
      k.p.h = 9;
      k.p.w = w;
      k.p.pad_top = k.p.pad_bottom = w == 64 ? 0 : 1;
      k.p.pad_left = k.p.pad_right = w == 64 ? 0 : 1;
      k.bias = true;
      k.act = act;
      if (Check(k, rng) > 1.0) return;
    }
  }
}

// The error bound of winograd.h on wide layers; also prints how close the worst case came.
TEST(Winograd, ErrorBoundUpTo512Channels) {
  std::mt19937 rng(kSeed + 2);
  for (size_t c : {64, 256, 512}) {
    Case k;
    k.p.c = c;
    k.m = 24;
    k.p.h = 14;
    k.p.w = 9;
    k.p.pad_top = k.p.pad_left = k.p.pad_bottom = k.p.pad_right = 1;
    const double worst = Check(k, rng);
    if (worst > 1.0) return;
    std::printf("winograd C=%zu: worst |error| / bound = %.3f\n", c, worst);
  }
}

TEST(Winograd, BadArguments) {
  EXPECT_FALSE(PreparedWinograd::Prepare(0, 3, nullptr).ok());
  EXPECT_FALSE(PreparedWinograd::Prepare(2, 3, nullptr).ok());
  EXPECT_TRUE(WinogradSupported(3, 3, 1, 1, 1, 1, 1));
  EXPECT_FALSE(WinogradSupported(3, 3, 2, 2, 1, 1, 1));
  EXPECT_FALSE(WinogradSupported(3, 3, 1, 1, 1, 1, 2));
  const std::vector<float> w(2 * 3 * 9, 0.5f), x(3 * 5 * 5), b(2);
  std::vector<float> y(2 * 5 * 5);
  Expected<PreparedWinograd> pw = PreparedWinograd::Prepare(2, 3, w.data());
  ASSERT_TRUE(pw.ok());
  WinogradConvParams p;
  p.c = 4;
  p.h = p.w = 5;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  EXPECT_FALSE(pw->Run(p, x.data(), nullptr, {}, y.data()).ok());  // channel mismatch
  p.c = 3;
  EXPECT_TRUE(pw->Run(p, x.data(), nullptr, {}, y.data()).ok());
  EXPECT_FALSE(pw->Run(p, nullptr, nullptr, {}, y.data()).ok());
  gemm::Epilogue ep;
  ep.bias_kind = gemm::BiasKind::kPerRow;
  EXPECT_FALSE(pw->Run(p, x.data(), nullptr, ep, y.data()).ok());  // null ep.bias
  EXPECT_FALSE(PreparedWinograd().Run(p, x.data(), nullptr, {}, y.data()).ok());
}

// View over packed(): the same results; matrices that do not fit are refused.
TEST(Winograd, ViewOfPackedMatrices) {
  std::mt19937 rng(kSeed + 3);
  const std::vector<float> w = Random(6 * 5 * 9, rng), x = Random(5 * 9 * 8, rng);
  Expected<PreparedWinograd> pw = PreparedWinograd::Prepare(6, 5, w.data());
  ASSERT_TRUE(pw.ok());
  ASSERT_EQ(pw->packed().size(), kPoints);
  Expected<PreparedWinograd> view = PreparedWinograd::View(6, 5, pw->packed());
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_EQ(view->isa(), pw->isa());
  WinogradConvParams p;
  p.c = 5;
  p.h = 9;
  p.w = 8;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  std::vector<float> y0(6 * 9 * 8), y1(y0.size());
  ASSERT_TRUE(pw->Run(p, x.data(), nullptr, {}, y0.data()).ok());
  ASSERT_TRUE(view->Run(p, x.data(), nullptr, {}, y1.data()).ok());
  EXPECT_EQ(y0, y1);
  EXPECT_FALSE(PreparedWinograd::View(6, 4, pw->packed()).ok());
  EXPECT_FALSE(PreparedWinograd::View(7, 5, pw->packed()).ok());
  EXPECT_FALSE(PreparedWinograd::View(0, 5, pw->packed()).ok());
  std::vector<gemm::PackedMatrix> short_list = pw->packed();
  short_list.pop_back();
  EXPECT_FALSE(PreparedWinograd::View(6, 5, short_list).ok());
  std::vector<gemm::PackedMatrix> with_empty = pw->packed();
  with_empty[7] = gemm::PackedMatrix();
  EXPECT_FALSE(PreparedWinograd::View(6, 5, with_empty).ok());

  // Blocked (8 channels, every level has them): U[p]^T as packed B of 8 x 8, which a plain view
  // refuses, as a blocked one refuses the plain matrices.
  Expected<PreparedWinograd> pb = PreparedWinograd::Prepare(6, 5, w.data(), std::nullopt, 8);
  ASSERT_TRUE(pb.ok()) << pb.status().message();
  EXPECT_EQ(pb->block(), 8u);
  EXPECT_FALSE(pb->packed()[0].is_a());
  EXPECT_EQ(pb->packed()[0].rows(), 8u);
  EXPECT_EQ(pb->packed()[0].cols(), 8u);
  Expected<PreparedWinograd> vb = PreparedWinograd::View(6, 5, pb->packed(), 8);
  ASSERT_TRUE(vb.ok()) << vb.status().message();
  std::vector<float> xb(9 * 8 * 8, 0.0f), yb0(9 * 8 * 8), yb1(yb0.size());
  for (size_t i = 0; i < 9 * 8; ++i) {
    for (size_t c = 0; c < 5; ++c) xb[i * 8 + c] = x[c * 9 * 8 + i];
  }
  ASSERT_TRUE(pb->Run(p, xb.data(), nullptr, {}, yb0.data()).ok());
  ASSERT_TRUE(vb->Run(p, xb.data(), nullptr, {}, yb1.data()).ok());
  EXPECT_EQ(yb0, yb1);
  EXPECT_FALSE(PreparedWinograd::View(6, 5, pb->packed()).ok());
  EXPECT_FALSE(PreparedWinograd::View(6, 5, pw->packed(), 8).ok());
  EXPECT_FALSE(PreparedWinograd::View(6, 5, pb->packed(), 16).ok());
  EXPECT_FALSE(PreparedWinograd::View(6, 5, pb->packed(), 4).ok());
  EXPECT_FALSE(PreparedWinograd::Prepare(6, 5, w.data(), std::nullopt, 4).ok());
  // 16 lanes only at AVX-512.
  EXPECT_FALSE(PreparedWinograd::Prepare(6, 5, w.data(), IsaLevel::kAvx2, 16).ok());
}

}  // namespace
}  // namespace kiln::winograd
