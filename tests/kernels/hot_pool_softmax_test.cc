// fp32 pooling (pool/), softmax (softmax/) and layer normalization (layernorm/) against the
// reference kernels, over odd shapes, pooling parameters, threads 1 and 2 and every ISA level the
// machine has. Max pooling compares exactly; sums (average pooling, softmax, layer norm) run in
// float against the reference's double, with tolerances that grow with the number of terms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/layernorm/layernorm.h"
#include "kernels/pool/pool.h"
#include "kernels/ref/norm.h"
#include "kernels/ref/pool.h"
#include "kernels/ref/softmax.h"
#include "kernels/softmax/softmax.h"
#include "support/cpu.h"
#include "support/tensor.h"
#include "support/thread_pool.h"

namespace kiln {
namespace {

constexpr uint32_t kSeed = 20261201;
constexpr size_t kSizes[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 1000, 1031};

std::vector<IsaLevel> IsaLevels() {
  std::vector<IsaLevel> levels;
  for (IsaLevel isa : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    if (isa <= ActiveIsa()) levels.push_back(isa);
  }
  return levels;
}

ThreadPool* Pool(size_t threads) {
  static std::unique_ptr<ThreadPool> two = std::move(ThreadPool::Create(2).value());
  static std::unique_ptr<ThreadPool> three = std::move(ThreadPool::Create(3).value());
  return threads == 2 ? two.get() : threads == 3 ? three.get() : nullptr;
}

std::vector<float> Random(size_t n, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);  // exact size: ASan catches a read past the end
  for (float& x : v) x = dist(rng);
  return v;
}

// ---------------------------------------------------------------------------------------------
// Pooling

struct PoolCase {
  size_t n, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr;
  bool ceil;
};

std::vector<PoolCase> PoolCases() {
  std::vector<PoolCase> cases = {
      {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false},
      {1, 3, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, false},
      {2, 3, 17, 33, 3, 3, 2, 2, 1, 1, 1, 1, false},  // ResNet stem shape, odd
      {1, 2, 16, 40, 3, 3, 2, 2, 1, 1, 1, 1, true},
      {1, 2, 15, 31, 2, 2, 2, 2, 0, 0, 0, 0, true},  // ceil adds a partial window
      {1, 1, 9, 70, 2, 2, 2, 2, 0, 0, 0, 0, false},
      {1, 2, 13, 45, 5, 5, 1, 1, 2, 2, 2, 2, false},
      {1, 2, 11, 37, 3, 2, 3, 3, 1, 0, 1, 1, true},  // stride 3: the scalar row path
      {1, 1, 8, 64, 1, 7, 1, 1, 0, 3, 0, 3, false},
      {1, 1, 5, 16, 3, 1, 1, 2, 0, 0, 2, 0, false},
      {2, 1, 6, 100, 4, 3, 2, 2, 3, 2, 3, 2, true},
      {1, 1, 3, 3, 3, 3, 1, 1, 0, 0, 0, 0, false},
      // The models' shapes, channels cut: SqueezeNet (ceil), ResNet stem, GoogLeNet (ceil, s1).
      {1, 3, 111, 111, 3, 3, 2, 2, 0, 0, 0, 0, true},
      {1, 5, 27, 27, 3, 3, 2, 2, 0, 0, 0, 0, true},
      {1, 3, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1, false},
      {1, 7, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, true},
      {1, 9, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, true},
      {1, 9, 14, 14, 2, 2, 2, 2, 0, 0, 0, 0, true},
      {1, 4, 13, 13, 3, 3, 2, 2, 0, 0, 0, 0, true},
      {1, 2, 40, 47, 5, 5, 3, 3, 2, 2, 2, 2, true},  // stride 3, wide pads
      {1, 2, 9, 50, 1, 1, 2, 2, 0, 0, 0, 0, false},  // 1x1 stride 2
      {1, 1, 4, 2, 3, 3, 1, 1, 2, 2, 2, 2, false},   // input narrower than the window
  };
  // Random geometries: kernel 1..5, stride 1..3, pads below the kernel, sizes 1..40.
  std::mt19937 rng(kSeed + 7);
  auto pick = [&](size_t lo, size_t hi) {
    return std::uniform_int_distribution<size_t>(lo, hi)(rng);
  };
  while (cases.size() < 60) {
    PoolCase c{};
    c.n = pick(1, 2);
    c.c = pick(1, 4);
    c.kh = pick(1, 5);
    c.kw = pick(1, 5);
    c.sh = pick(1, 3);
    c.sw = pick(1, 3);
    c.pt = pick(0, c.kh - 1);
    c.pb = pick(0, c.kh - 1);
    c.pl = pick(0, c.kw - 1);
    c.pr = pick(0, c.kw - 1);
    c.h = pick(1, 40);
    c.w = pick(1, 40);
    c.ceil = pick(0, 1) == 1;
    if (c.h + c.pt + c.pb < c.kh || c.w + c.pl + c.pr < c.kw) continue;
    cases.push_back(c);
  }
  return cases;
}

std::string PoolString(const PoolCase& c) {
  return StrCat("x[", c.n, ",", c.c, ",", c.h, ",", c.w, "] k", c.kh, "x", c.kw, " s", c.sh, "x",
                c.sw, " pads(", c.pt, ",", c.pl, ",", c.pb, ",", c.pr, ") ceil=", c.ceil);
}

TEST(HotPool, MaxAndAveragePool2dMatchReference) {
  std::mt19937 rng(kSeed);
  for (const PoolCase& pc : PoolCases()) {
    pool::Pool2dParams p;
    p.batch = pc.n;
    p.channels = pc.c;
    p.in_h = pc.h;
    p.in_w = pc.w;
    p.kernel_h = pc.kh;
    p.kernel_w = pc.kw;
    p.stride_h = pc.sh;
    p.stride_w = pc.sw;
    p.pad_top = pc.pt;
    p.pad_left = pc.pl;
    p.pad_bottom = pc.pb;
    p.pad_right = pc.pr;
    p.out_h = pool::PoolOutputSize(pc.h, pc.kh, pc.sh, pc.pt, pc.pb, pc.ceil).value();
    p.out_w = pool::PoolOutputSize(pc.w, pc.kw, pc.sw, pc.pl, pc.pr, pc.ceil).value();
    ref::PoolGeometry g;
    g.g.batch = static_cast<int64_t>(pc.n);
    g.g.in_channels = g.g.out_channels = static_cast<int64_t>(pc.c);
    g.g.in = {1, static_cast<int64_t>(pc.h), static_cast<int64_t>(pc.w)};
    g.g.out = {1, static_cast<int64_t>(p.out_h), static_cast<int64_t>(p.out_w)};
    g.g.kernel = {1, static_cast<int64_t>(pc.kh), static_cast<int64_t>(pc.kw)};
    g.g.stride = {1, static_cast<int64_t>(pc.sh), static_cast<int64_t>(pc.sw)};
    g.g.pad_begin = {0, static_cast<int64_t>(pc.pt), static_cast<int64_t>(pc.pl)};
    g.pad_end = {0, static_cast<int64_t>(pc.pb), static_cast<int64_t>(pc.pr)};
    const std::vector<float> x = Random(pc.n * pc.c * pc.h * pc.w, -3.0f, 3.0f, rng);
    const size_t ny = pc.n * pc.c * p.out_h * p.out_w;
    std::vector<float> expect_max(ny), expect_avg(ny), expect_avg_pad(ny);
    ref::MaxPool<float>(g, x.data(), expect_max.data(), nullptr, false);
    ref::AveragePool<float>(g, x.data(), expect_avg.data(), false);
    ref::AveragePool<float>(g, x.data(), expect_avg_pad.data(), true);
    for (IsaLevel isa : IsaLevels()) {
      for (size_t threads : {1, 2, 3}) {
        SCOPED_TRACE(
            StrCat(PoolString(pc), " isa=", IsaName(isa), " threads=", threads, " seed=", kSeed));
        pool::Options o;
        o.isa = isa;
        o.pool = Pool(threads);
        std::vector<float> y(ny);
        ASSERT_TRUE(pool::MaxPool2d(p, x.data(), y.data(), o).ok());
        ASSERT_EQ(0, std::memcmp(y.data(), expect_max.data(), ny * sizeof(float)));
        for (bool include_pad : {false, true}) {
          p.count_include_pad = include_pad;
          const std::vector<float>& e = include_pad ? expect_avg_pad : expect_avg;
          ASSERT_TRUE(pool::AveragePool2d(p, x.data(), y.data(), o).ok());
          // Up to kh * kw terms of |x| <= 3 summed in float.
          const float tol = 3.0f * 4e-7f * static_cast<float>(pc.kh * pc.kw + 1);
          for (size_t i = 0; i < ny; ++i) {
            ASSERT_NEAR(y[i], e[i], tol) << "i=" << i << " include_pad=" << include_pad;
          }
        }
      }
    }
  }
}

// NaN: which NaN a max keeps depends on the order the taps are reduced in (x86 max returns its
// second operand when either is NaN; the reference keeps the first), so only windows without a
// NaN are compared, exactly. They catch a NaN leaking in from a neighbouring row, plane or
// padding (the kernels read and write whole vectors past rows).
TEST(HotPool, NanStaysInItsWindows) {
  std::mt19937 rng(kSeed + 9);
  for (const PoolCase& pc : PoolCases()) {
    pool::Pool2dParams p;
    p.batch = pc.n;
    p.channels = pc.c;
    p.in_h = pc.h;
    p.in_w = pc.w;
    p.kernel_h = pc.kh;
    p.kernel_w = pc.kw;
    p.stride_h = pc.sh;
    p.stride_w = pc.sw;
    p.pad_top = pc.pt;
    p.pad_left = pc.pl;
    p.pad_bottom = pc.pb;
    p.pad_right = pc.pr;
    p.out_h = pool::PoolOutputSize(pc.h, pc.kh, pc.sh, pc.pt, pc.pb, pc.ceil).value();
    p.out_w = pool::PoolOutputSize(pc.w, pc.kw, pc.sw, pc.pl, pc.pr, pc.ceil).value();
    std::vector<float> x = Random(pc.n * pc.c * pc.h * pc.w, -3.0f, 3.0f, rng);
    std::bernoulli_distribution nan(0.05);
    for (float& v : x)
      if (nan(rng)) v = std::nanf("");
    const size_t planes = pc.n * pc.c, ny = planes * p.out_h * p.out_w;
    // Per output: the window's max, or NaN when the window holds a NaN.
    std::vector<float> expect(ny);
    for (size_t pl = 0; pl < planes; ++pl)
      for (size_t oy = 0; oy < p.out_h; ++oy)
        for (size_t ox = 0; ox < p.out_w; ++ox) {
          float m = -INFINITY;
          bool has_nan = false;
          for (size_t ky = 0; ky < pc.kh; ++ky)
            for (size_t kx = 0; kx < pc.kw; ++kx) {
              const size_t iy = oy * pc.sh + ky, ix = ox * pc.sw + kx;  // padded
              if (iy < pc.pt || iy - pc.pt >= pc.h || ix < pc.pl || ix - pc.pl >= pc.w) continue;
              const float v = x[(pl * pc.h + iy - pc.pt) * pc.w + ix - pc.pl];
              has_nan |= std::isnan(v);
              m = std::max(m, v);
            }
          expect[(pl * p.out_h + oy) * p.out_w + ox] = has_nan ? std::nanf("") : m;
        }
    for (IsaLevel isa : IsaLevels()) {
      for (size_t threads : {1, 3}) {
        SCOPED_TRACE(StrCat(PoolString(pc), " isa=", IsaName(isa), " threads=", threads));
        pool::Options o;
        o.isa = isa;
        o.pool = Pool(threads);
        std::vector<float> y(ny);
        ASSERT_TRUE(pool::MaxPool2d(p, x.data(), y.data(), o).ok());
        for (size_t i = 0; i < ny; ++i) {
          if (!std::isnan(expect[i])) {
            ASSERT_EQ(y[i], expect[i]) << "i=" << i;
          }
        }
      }
    }
  }
}

TEST(HotPool, GlobalPoolsMatchReference) {
  std::mt19937 rng(kSeed + 1);
  for (size_t size : kSizes) {
    for (size_t planes : {1, 3, 17}) {
      const std::vector<float> x = Random(planes * size, -3.0f, 3.0f, rng);
      std::vector<float> emax(planes), eavg(planes);
      ref::GlobalPool<float>(ref::GlobalPoolKind::kMax, planes, size, x.data(), emax.data(), 0);
      ref::GlobalPool<float>(ref::GlobalPoolKind::kAverage, planes, size, x.data(), eavg.data(), 0);
      for (IsaLevel isa : IsaLevels()) {
        for (size_t threads : {1, 2}) {
          SCOPED_TRACE(StrCat("planes=", planes, " size=", size, " isa=", IsaName(isa),
                              " threads=", threads));
          pool::Options o;
          o.isa = isa;
          o.pool = Pool(threads);
          std::vector<float> y(planes);
          ASSERT_TRUE(pool::GlobalMaxPool(planes, size, x.data(), y.data(), o).ok());
          EXPECT_EQ(y, emax);
          ASSERT_TRUE(pool::GlobalAveragePool(planes, size, x.data(), y.data(), o).ok());
          for (size_t i = 0; i < planes; ++i) {
            EXPECT_NEAR(y[i], eavg[i], 3.0f * 2e-7f * std::sqrt(static_cast<float>(size)) + 1e-7f);
          }
        }
      }
    }
  }
}

TEST(HotPool, BlockedGlobalAverageMatchesReference) {
  // NCHWc blocks of every width the planner uses and odd ones (flat, folded and per-chunk
  // paths of each ISA), padded last blocks, and plane sizes around the 4-vector unroll.
  std::mt19937 rng(kSeed + 3);
  for (size_t c : {1, 2, 3, 4, 8, 16, 24, 32, 48, 64}) {
    for (size_t hw : {0, 1, 2, 3, 5, 17, 49, 196}) {
      for (size_t batch : {1, 2}) {
        for (size_t channels : {c * 2, c * 3 - (c + 1) / 2}) {
          const size_t blocks = (channels + c - 1) / c;
          const std::vector<float> x = Random(batch * blocks * hw * c, -3.0f, 3.0f, rng);
          // The reference over the same values moved to NCHW; padding lanes are skipped.
          std::vector<float> planar(batch * channels * hw), expect(batch * channels);
          for (size_t n = 0; n < batch; ++n)
            for (size_t ch = 0; ch < channels; ++ch)
              for (size_t i = 0; i < hw; ++i)
                planar[(n * channels + ch) * hw + i] =
                    x[((n * blocks + ch / c) * hw + i) * c + ch % c];
          if (hw > 0) {
            ref::GlobalPool<float>(ref::GlobalPoolKind::kAverage, batch * channels, hw,
                                   planar.data(), expect.data(), 0);
          }
          for (IsaLevel isa : IsaLevels()) {
            for (size_t threads : {1, 2}) {
              SCOPED_TRACE(StrCat("c=", c, " hw=", hw, " batch=", batch, " channels=", channels,
                                  " isa=", IsaName(isa), " threads=", threads));
              pool::Options o;
              o.isa = isa;
              o.pool = Pool(threads);
              std::vector<float> y(batch * channels, 12345.0f);
              ASSERT_TRUE(pool::GlobalAveragePoolNchwc(batch, blocks, hw, c, channels, x.data(),
                                                       y.data(), o)
                              .ok());
              for (size_t i = 0; i < y.size(); ++i) {
                if (hw == 0) {
                  EXPECT_TRUE(std::isnan(y[i])) << "i=" << i;
                } else {
                  EXPECT_NEAR(y[i], expect[i],
                              3.0f * 2e-7f * std::sqrt(static_cast<float>(hw)) + 1e-7f)
                      << "i=" << i;
                }
              }
            }
          }
        }
      }
    }
  }
  std::vector<float> x(64), y(64);
  EXPECT_FALSE(pool::GlobalAveragePoolNchwc(1, 1, 1, 65, 65, x.data(), y.data()).ok());
  EXPECT_FALSE(pool::GlobalAveragePoolNchwc(1, 2, 1, 16, 16, x.data(), y.data()).ok());
  EXPECT_FALSE(pool::GlobalAveragePoolNchwc(1, 1, 1, 16, 17, x.data(), y.data()).ok());
  EXPECT_FALSE(pool::GlobalAveragePoolNchwc(1, 1, 1, 16, 16, nullptr, y.data()).ok());
}

TEST(HotPool, Errors) {
  EXPECT_FALSE(pool::PoolOutputSize(3, 5, 1, 0, 0, false).ok());
  EXPECT_FALSE(pool::PoolOutputSize(3, 1, 0, 0, 0, false).ok());
  EXPECT_EQ(pool::PoolOutputSize(15, 2, 2, 0, 0, true).value(), 8u);
  EXPECT_EQ(pool::PoolOutputSize(15, 2, 2, 0, 0, false).value(), 7u);
  pool::Pool2dParams p;
  p.kernel_h = 0;
  std::vector<float> x(1), y(1);
  EXPECT_FALSE(pool::MaxPool2d(p, x.data(), y.data()).ok());
  p.kernel_h = 1;
  p.out_w = 5;  // windows past the padded input
  EXPECT_FALSE(pool::MaxPool2d(p, x.data(), y.data()).ok());
  EXPECT_FALSE(pool::GlobalMaxPool(2, 0, x.data(), y.data()).ok());
}

// ---------------------------------------------------------------------------------------------
// Softmax

TEST(HotSoftmax, MatchesReferenceOddShapesInPlace) {
  std::mt19937 rng(kSeed + 2);
  for (size_t cols : kSizes) {
    for (size_t rows : {1, 3, 17}) {
      // Large offsets: a kernel that forgot to subtract the max would overflow.
      std::vector<float> x = Random(rows * cols, -20.0f, 20.0f, rng);
      for (size_t r = 0; r < rows; ++r) x[r * cols] += 100.0f * static_cast<float>(r);
      const Tensor tx =
          Tensor::FromVector(x, {static_cast<int64_t>(rows), static_cast<int64_t>(cols)});
      for (bool log : {false, true}) {
        auto expect =
            ref::Softmax(tx, log ? ref::SoftmaxKind::kLogSoftmax : ref::SoftmaxKind::kSoftmax,
                         static_cast<int64_t>(rows), static_cast<int64_t>(cols), 1);
        ASSERT_TRUE(expect.ok()) << expect.status().message();
        for (IsaLevel isa : IsaLevels()) {
          for (size_t threads : {1, 2}) {
            for (bool in_place : {false, true}) {
              SCOPED_TRACE(StrCat("rows=", rows, " cols=", cols, " log=", log,
                                  " isa=", IsaName(isa), " threads=", threads,
                                  " in_place=", in_place, " seed=", kSeed + 2));
              softmax::Options o;
              o.log = log;
              o.isa = isa;
              o.pool = Pool(threads);
              std::vector<float> y = in_place ? x : std::vector<float>(x.size());
              const float* in = in_place ? y.data() : x.data();
              ASSERT_TRUE(softmax::Softmax(rows, cols, in, y.data(), o).ok());
              // exp is 1.25 ulp; the float sum adds about log2(cols) roundings.
              const float rel = 4e-7f * (4.0f + std::log2(static_cast<float>(cols)));
              for (size_t i = 0; i < x.size(); ++i) {
                const float e = expect->data<float>()[i];
                ASSERT_NEAR(y[i], e, rel * std::max(1.0f, std::fabs(e)) + 1e-30f) << "i=" << i;
              }
            }
          }
        }
      }
    }
  }
}

TEST(HotSoftmax, RowsSumToOne) {
  std::mt19937 rng(kSeed + 3);
  const size_t rows = 5, cols = 4099;
  const std::vector<float> x = Random(rows * cols, -50.0f, 50.0f, rng);
  std::vector<float> y(x.size());
  ASSERT_TRUE(softmax::Softmax(rows, cols, x.data(), y.data()).ok());
  for (size_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (size_t i = 0; i < cols; ++i) sum += y[r * cols + i];
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
  EXPECT_FALSE(softmax::Softmax(2, 2, nullptr, y.data()).ok());
}

// ---------------------------------------------------------------------------------------------
// Layer normalization

TEST(HotLayerNorm, MatchesReferenceOddShapesInPlace) {
  std::mt19937 rng(kSeed + 4);
  for (size_t cols : kSizes) {
    for (size_t rows : {1, 3, 17}) {
      // A large mean against a small spread: the one-pass variance would lose it.
      std::vector<float> x = Random(rows * cols, 99.0f, 101.0f, rng);
      const std::vector<float> scale = Random(cols, 0.5f, 1.5f, rng);
      const std::vector<float> bias = Random(cols, -1.0f, 1.0f, rng);
      const float eps = 1e-5f;
      for (bool with_bias : {true, false}) {
        const float* b = with_bias ? bias.data() : nullptr;
        std::vector<float> expect(x.size()), emean(rows), einv(rows);
        ref::LayerNorm<float>(static_cast<int64_t>(rows), static_cast<int64_t>(cols), x.data(),
                              scale.data(), b, eps, expect.data(), emean.data(), einv.data());
        for (IsaLevel isa : IsaLevels()) {
          for (size_t threads : {1, 2}) {
            for (bool in_place : {false, true}) {
              SCOPED_TRACE(StrCat("rows=", rows, " cols=", cols, " bias=", with_bias,
                                  " isa=", IsaName(isa), " threads=", threads,
                                  " in_place=", in_place, " seed=", kSeed + 4));
              layernorm::Options o;
              o.isa = isa;
              o.pool = Pool(threads);
              std::vector<float> y = in_place ? x : std::vector<float>(x.size());
              std::vector<float> mean(rows), inv(rows);
              const float* in = in_place ? y.data() : x.data();
              ASSERT_TRUE(layernorm::LayerNorm(rows, cols, in, scale.data(), b, eps, y.data(),
                                               mean.data(), inv.data(), o)
                              .ok());
              // Values are 100 +- 1: the float mean is off by up to about one spacing at 100
              // (7.6e-6), which the normalization multiplies by inv_std (up to 1/sqrt(eps) when
              // a short row happens to be nearly constant) and scale (< 1.5).
              for (size_t i = 0; i < x.size(); ++i) {
                const float tol = 2.5e-5f * einv[i / cols] + 1e-5f;
                ASSERT_NEAR(y[i], expect[i], tol) << "i=" << i << " inv_std=" << einv[i / cols];
              }
              for (size_t r = 0; r < rows; ++r) {
                EXPECT_NEAR(mean[r], emean[r], 1e-4f);
                EXPECT_NEAR(inv[r], einv[r], 1e-3f * einv[r] + 1e-6f);
              }
            }
          }
        }
      }
    }
  }
  std::vector<float> x(4);
  EXPECT_FALSE(layernorm::LayerNorm(2, 2, x.data(), nullptr, nullptr, 1e-5f, x.data()).ok());
  EXPECT_FALSE(layernorm::LayerNorm(2, 2, x.data(), x.data(), nullptr, -1.0f, x.data()).ok());
}

}  // namespace
}  // namespace kiln
