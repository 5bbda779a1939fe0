// Depthwise convolution against the reference conv (group == C), over odd sizes, pads, strides,
// windows, channel counts, bias and every activation, threads 1 and 2 and every ISA level.
#include "kernels/dwconv/dwconv.h"

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

namespace kiln::dwconv {
namespace {

constexpr uint32_t kSeed = 20261130;
using gemm::Activation;

using kernel_test::Activate;
using kernel_test::IsaLevels;
using kernel_test::Random;
using kernel_test::PoolOf;

std::string Describe(const DwConvParams& p, bool bias, Activation act, size_t threads,
                     IsaLevel isa) {
  return StrCat("cb=", p.channel_block, " N=", p.n, " C=", p.c, " H=", p.h, " W=", p.w, " k=", p.kh, "x", p.kw,
                " stride=", p.stride_h, "x", p.stride_w, " pads(t,l,b,r)=", p.pad_top, ",",
                p.pad_left, ",", p.pad_bottom, ",", p.pad_right, " bias=", bias,
                " act=", gemm::ActivationName(act), " threads=", threads, " isa=", IsaName(isa),
                " seed=", kSeed);
}

// Reference output (before the activation) from ref::Conv with group == C.
std::vector<float> Reference(const DwConvParams& p, const std::vector<float>& x,
                             const std::vector<float>& w, const float* bias) {
  ref::ConvGeometry g;
  g.batch = static_cast<int64_t>(p.n);
  g.in_channels = g.out_channels = g.group = static_cast<int64_t>(p.c);
  g.in = {1, static_cast<int64_t>(p.h), static_cast<int64_t>(p.w)};
  g.out = {1, static_cast<int64_t>(p.out_h()), static_cast<int64_t>(p.out_w())};
  g.kernel = {1, static_cast<int64_t>(p.kh), static_cast<int64_t>(p.kw)};
  g.stride = {1, static_cast<int64_t>(p.stride_h), static_cast<int64_t>(p.stride_w)};
  g.pad_begin = {0, static_cast<int64_t>(p.pad_top), static_cast<int64_t>(p.pad_left)};
  std::vector<float> y(p.n * p.c * p.out_h() * p.out_w());
  ref::Conv<float>(g, x.data(), w.data(), bias, y.data());
  return y;
}

// Runs one case at every ISA level and thread count given; returns false after the first
// mismatch (reported with the case).
bool Check(const DwConvParams& p, bool with_bias, Activation act, std::mt19937& rng,
           std::initializer_list<size_t> thread_counts = {1, 2, 3}) {
  EXPECT_TRUE(DwConvSupported(p));
  const std::vector<float> x = Random(p.n * p.c * p.h * p.w, rng);
  const std::vector<float> w = Random(p.c * p.kh * p.kw, rng);
  const std::vector<float> b = Random(p.c, rng);
  const float* bias = with_bias ? b.data() : nullptr;
  gemm::Epilogue ep;
  ep.activation = act;
  ep.clip_min = -0.25f;
  ep.clip_max = 0.5f;
  std::vector<float> want = Reference(p, x, w, bias);
  for (float& v : want) v = Activate(v, ep);
  // Sums of kh * kw products of values in [-1, 1]: the error grows with the window.
  const float tol = 4e-7f * static_cast<float>(p.kh * p.kw + 1) + 1e-6f;
  // NCHWc: x and y blocked by cb; x's padding lanes hold junk that zero weights must cancel.
  const size_t cb = p.channel_block, blocks = (p.c + cb - 1) / cb, hw = p.h * p.w;
  const size_t ohw = p.out_h() * p.out_w();
  std::vector<float> xb(cb == 1 ? 0 : p.n * blocks * cb * hw, 0.75f);
  for (size_t n = 0; cb > 1 && n < p.n; ++n) {
    for (size_t c = 0; c < p.c; ++c) {
      for (size_t i = 0; i < hw; ++i) {
        xb[((n * blocks + c / cb) * hw + i) * cb + c % cb] = x[(n * p.c + c) * hw + i];
      }
    }
  }
  std::vector<float> wb(cb == 1 ? 0 : BlockedWeightFloats(p.c, p.kh * p.kw, cb));
  if (cb > 1) PackBlockedWeights(p.c, p.kh * p.kw, cb, w.data(), wb.data());
  for (IsaLevel isa : IsaLevels()) {
    for (size_t threads : thread_counts) {
      std::vector<float> y(want.size());
      ThreadPool* pool = PoolOf(threads);
      Status st;
      if (cb == 1) {
        st = DwConv(p, x.data(), w.data(), bias, ep, y.data(), pool, isa);
      } else {
        std::vector<float> yb(p.n * blocks * cb * ohw);
        st = DwConv(p, xb.data(), wb.data(), bias, ep, yb.data(), pool, isa);
        for (size_t n = 0; n < p.n; ++n) {
          for (size_t c = 0; c < p.c; ++c) {
            for (size_t i = 0; i < ohw; ++i) {
              y[(n * p.c + c) * ohw + i] = yb[((n * blocks + c / cb) * ohw + i) * cb + c % cb];
            }
          }
        }
      }
      const std::string what = Describe(p, with_bias, act, threads, isa);
      if (!st.ok()) {
        ADD_FAILURE() << what << ": " << st.message();
        return false;
      }
      for (size_t i = 0; i < y.size(); ++i) {
        if (!(std::fabs(y[i] - want[i]) <= tol * (1.0f + std::fabs(want[i])))) {
          ADD_FAILURE() << what << ": y[" << i << "] = " << y[i] << ", want " << want[i];
          return false;
        }
      }
    }
  }
  return true;
}

DwConvParams Make(size_t c, size_t h, size_t w, size_t k, size_t s, size_t pt, size_t pl,
                  size_t pb, size_t pr) {
  DwConvParams p;
  p.c = c;
  p.h = h;
  p.w = w;
  p.kh = p.kw = k;
  p.stride_h = p.stride_w = s;
  p.pad_top = pt;
  p.pad_left = pl;
  p.pad_bottom = pb;
  p.pad_right = pr;
  return p;
}

TEST(DwConv, SpecializedWindowsOddSizesAndPads) {
  std::mt19937 rng(kSeed);
  for (size_t k : {3, 5}) {
    for (size_t s : {1, 2}) {
      for (size_t h : {1, 2, 3, 5, 7, 13, 17, 56}) {
        for (size_t w : {1, 2, 3, 5, 7, 13, 17, 56}) {
          // "same" padding, none, and lopsided pads (TF's SAME for even sizes).
          const size_t half = k / 2;
          const size_t pads[][4] = {{half, half, half, half}, {0, 0, 0, 0}, {0, 0, 1, 1},
                                    {half + 1, 1, 0, half + 2}};
          for (const auto& pd : pads) {
            DwConvParams p = Make(3, h, w, k, s, pd[0], pd[1], pd[2], pd[3]);
            if (p.out_h() == 0 || p.out_w() == 0) continue;
            if (!Check(p, true, Activation::kNone, rng)) return;
          }
        }
      }
    }
  }
}

TEST(DwConv, ChannelsBatchBiasActivations) {
  std::mt19937 rng(kSeed + 1);
  for (size_t c : {1, 3, 8, 17, 32}) {
    for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kClip,
                           Activation::kSilu, Activation::kHardSwish, Activation::kGelu}) {
      for (bool bias : {false, true}) {
        DwConvParams p = Make(c, 13, 19, 3, 1 + (c & 1), 1, 1, 1, 1);
        p.n = c == 8 ? 2 : 1;
        if (!Check(p, bias, act, rng)) return;
      }
    }
  }
}

TEST(DwConv, GenericWindowsAndStrides) {
  std::mt19937 rng(kSeed + 2);
  struct Shape {
    size_t kh, kw, sh, sw;
  };
  for (Shape sh : {Shape{1, 1, 1, 1}, Shape{3, 3, 3, 3}, Shape{7, 7, 1, 1}, Shape{3, 5, 1, 2},
                   Shape{2, 2, 2, 2}, Shape{3, 3, 2, 1}, Shape{5, 5, 1, 2}, Shape{1, 7, 1, 1}}) {
    for (size_t hw : {1, 7, 17, 40}) {
      DwConvParams p = Make(5, hw, hw + 3, 1, 1, sh.kh / 2, sh.kw / 2, sh.kh / 2, sh.kw / 2);
      p.kh = sh.kh;
      p.kw = sh.kw;
      p.stride_h = sh.sh;
      p.stride_w = sh.sw;
      if (p.out_h() == 0 || p.out_w() == 0) continue;
      if (!Check(p, true, Activation::kRelu, rng)) return;
    }
  }
}

// Pads wider than the window: outputs that see only padding are act(bias).
TEST(DwConv, PaddingOnlyOutputs) {
  std::mt19937 rng(kSeed + 3);
  for (size_t k : {3, 5}) {
    for (size_t s : {1, 2}) {
      if (!Check(Make(4, 3, 20, k, s, 6, 7, 5, 9), true, Activation::kClip, rng)) return;
    }
  }
}

// MobileNetV2's depthwise layers (112x112x32 ... 7x7x960), fewer channels to stay quick.
TEST(DwConv, MobileNetShapes) {
  std::mt19937 rng(kSeed + 4);
  struct L {
    size_t hw, s;
  };
  for (L l : {L{112, 1}, L{112, 2}, L{56, 1}, L{56, 2}, L{28, 2}, L{14, 1}, L{7, 1}}) {
    if (!Check(Make(6, l.hw, l.hw, 3, l.s, 1, 1, 1, 1), true, Activation::kClip, rng)) return;
  }
}

// The NCHW driver hands the row kernels several output rows per call (as many as 128 row
// pointers hold): planes taller than one call, with padding rows at both ends, and a tall
// vertical stride that leaves only a few rows per call.
TEST(DwConv, ManyRowsPerCall) {
  std::mt19937 rng(kSeed + 6);
  for (size_t k : {3, 5}) {
    for (size_t s : {1, 2}) {
      for (size_t w : {6, 21}) {
        if (!Check(Make(2, 300, w, k, s, k / 2, k / 2, k / 2, k / 2), true, Activation::kClip,
                   rng)) {
          return;
        }
      }
      if (!Check(Make(2, 260, 9, k, s, 6, 1, 5, 2), false, Activation::kSilu, rng)) return;
    }
  }
  DwConvParams p = Make(3, 400, 11, 3, 1, 1, 1, 1, 1);
  p.stride_h = 40;
  if (!Check(p, true, Activation::kRelu, rng)) return;
}

TEST(DwConv, BlockedChannels) {
  std::mt19937 rng(kSeed + 5);
  for (size_t cb : {8, 16}) {
    for (size_t c : {1, 8, 17, 32}) {
      for (size_t k : {3, 5, 7}) {
        for (size_t s : {1, 2}) {
          for (size_t hw : {1, 2, 5, 13, 17}) {
            DwConvParams p = Make(c, hw, hw + 2, k, s, k / 2, k / 2, k / 2, (k / 2) + 1);
            p.channel_block = cb;
            p.n = c == 8 ? 2 : 1;
            if (p.out_h() == 0 || p.out_w() == 0) continue;
            if (!Check(p, c != 17, c == 32 ? Activation::kSilu : Activation::kClip, rng)) return;
          }
        }
      }
    }
  }
  DwConvParams p = Make(16, 9, 9, 9, 1, 4, 4, 4, 4);
  p.channel_block = 16;
  EXPECT_FALSE(DwConvSupported(p));  // blocked windows stop at 7x7
  p.kh = p.kw = 3;
  p.channel_block = 4;
  EXPECT_FALSE(DwConvSupported(p));
}

// The blocked row kernels run a row as balanced groups of pixels, the groups whose windows cross
// a row end skipping the columns outside it: rows of every group count (7, 14, 40, 113 wide),
// no padding, padding on one side only, more padding than one group's pixels, and more output
// rows than one call takes (70 rows: calls of up to 62).
TEST(DwConv, BlockedRowGroupsAndPads) {
  std::mt19937 rng(kSeed + 6);
  for (size_t cb : {8, 16}) {
    for (size_t k : {3, 5}) {
      for (size_t s : {1, 2}) {
        for (size_t w : {7, 14, 40, 113}) {
          const size_t pads[4][2] = {{0, 0}, {k / 2, k / 2}, {k - 1, 0}, {1, k - 1}};
          for (const auto& pad : pads) {
            const size_t h = w == 40 ? 70 : 6;
            DwConvParams p = Make(24, h, w, k, s, pad[0], pad[0], pad[1], pad[1]);
            p.channel_block = cb;
            if (!Check(p, true, Activation::kRelu, rng, {1, 2})) return;
          }
        }
      }
    }
  }
}

// NCHW layers run through blocks of channels (transposed into a workspace slot per thread) where
// a window's input rows fit the slot, and on the row kernels otherwise: rows of 700 take the row
// kernels at every ISA level, 9x9 windows too; a caller's workspace, filled with NaN first, gives
// the same bits as one allocated for the call.
TEST(DwConv, NchwThroughBlocksAndWideRows) {
  std::mt19937 rng(kSeed + 7);
  for (size_t k : {3, 5}) {
    for (size_t s : {1, 2}) {
      DwConvParams p = Make(19, 4, 700, k, s, k / 2, k / 2, k / 2, k / 2);
      EXPECT_EQ(DwConvWorkspaceFloats(p, 2), 0u);
      if (!Check(p, true, Activation::kClip, rng)) return;
    }
  }
  DwConvParams big = Make(5, 12, 11, 9, 1, 4, 4, 4, 4);
  EXPECT_EQ(DwConvWorkspaceFloats(big, 1), 0u);
  if (!Check(big, true, Activation::kRelu, rng)) return;

  DwConvParams p = Make(40, 7, 7, 3, 1, 1, 1, 1, 1);
  p.n = 2;
  EXPECT_EQ(DwConvWorkspaceFloats(p, 1, IsaLevel::kScalar), 0u);
  DwConvParams blocked = p;
  blocked.channel_block = 16;
  EXPECT_EQ(DwConvWorkspaceFloats(blocked, 1), 0u);
  const std::vector<float> x = Random(p.n * p.c * p.h * p.w, rng);
  const std::vector<float> w = Random(p.c * p.kh * p.kw, rng);
  const std::vector<float> b = Random(p.c, rng);
  for (IsaLevel isa : IsaLevels()) {
    for (size_t threads : {1, 2, 3}) {
      ThreadPool* pool = PoolOf(threads);
      std::vector<float> ws(DwConvWorkspaceFloats(p, threads, isa), std::nanf(""));
      if (isa >= IsaLevel::kAvx2) {
        EXPECT_GT(ws.size(), 0u) << IsaName(isa);
      }
      std::vector<float> y0(p.n * p.c * 49), y1(y0.size());
      ASSERT_TRUE(DwConv(p, x.data(), w.data(), b.data(), {}, y0.data(), pool, isa).ok());
      ASSERT_TRUE(DwConv(p, x.data(), w.data(), b.data(), {}, y1.data(), pool, isa,
                         ws.empty() ? nullptr : ws.data())
                      .ok());
      for (size_t i = 0; i < y0.size(); ++i) {
        ASSERT_EQ(y0[i], y1[i]) << "isa=" << IsaName(isa) << " threads=" << threads << " i=" << i;
      }
    }
  }
}

TEST(DwConv, UnsupportedAndBadArguments) {
  DwConvParams p = Make(2, 5, 5, 3, 1, 1, 1, 1, 1);
  p.dilation_h = 2;
  EXPECT_FALSE(DwConvSupported(p));
  const std::vector<float> x(50), w(18), b(2);
  std::vector<float> y(50);
  EXPECT_FALSE(DwConv(p, x.data(), w.data(), nullptr, {}, y.data()).ok());
  p.dilation_h = 1;
  EXPECT_FALSE(DwConvSupported(Make(2, 2, 2, 3, 1, 0, 0, 0, 0)));  // window larger than input
  EXPECT_FALSE(DwConv(p, nullptr, w.data(), nullptr, {}, y.data()).ok());
  gemm::Epilogue ep;
  ep.bias_kind = gemm::BiasKind::kPerColumn;
  ep.bias = b.data();
  EXPECT_FALSE(DwConv(p, x.data(), w.data(), nullptr, ep, y.data()).ok());
  ep.bias_kind = gemm::BiasKind::kPerRow;
  EXPECT_FALSE(DwConv(p, x.data(), w.data(), b.data(), ep, y.data()).ok());  // bias twice
  EXPECT_TRUE(DwConv(p, x.data(), w.data(), nullptr, ep, y.data()).ok());
  ep = {};
  ep.activation = Activation::kClip;
  ep.clip_min = 1.0f;
  ep.clip_max = 0.0f;
  EXPECT_FALSE(DwConv(p, x.data(), w.data(), nullptr, ep, y.data()).ok());
}

}  // namespace
}  // namespace kiln::dwconv
