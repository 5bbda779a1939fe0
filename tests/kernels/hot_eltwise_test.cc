// fp32 elementwise kernels (eltwise/) against the reference kernels: binary ops over broadcast
// patterns (exact: IEEE + - * / max min round the same in float and through double), and the
// activations over odd sizes, in place, threads 1 and 2, at every ISA level the machine has.
// The accuracy of exp, tanh, sigmoid, SiLU and GELU is measured against double precision over a
// dense sweep; the bounds asserted here are the ones documented in ukernels/f32_hot_impl.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/eltwise/eltwise.h"
#include "kernels/eltwise/ukernel_table.h"
#include "kernels/ref/elementwise.h"
#include "support/cpu.h"
#include "support/tensor.h"
#include "support/thread_pool.h"

namespace kiln::eltwise {
namespace {

constexpr uint32_t kSeed = 20261130;
constexpr size_t kSizes[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 1000, 40000};

std::vector<IsaLevel> IsaLevels() {
  std::vector<IsaLevel> levels;
  for (IsaLevel isa : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    if (isa <= ActiveIsa()) levels.push_back(isa);
  }
  return levels;
}

ThreadPool* Pool(size_t threads) {
  static std::unique_ptr<ThreadPool> two = std::move(ThreadPool::Create(2).value());
  return threads == 2 ? two.get() : nullptr;
}

std::vector<float> Random(size_t n, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);  // exact size: ASan catches a read past the end
  for (float& x : v) x = dist(rng);
  return v;
}

std::string DimsString(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(d[i]);
  }
  s += ']';
  return s;
}

size_t Numel(const std::vector<int64_t>& d) {
  size_t n = 1;
  for (int64_t v : d) n *= static_cast<size_t>(v);
  return n;
}

ref::BinaryKind RefKind(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return ref::BinaryKind::kAdd;
    case BinaryOp::kSub:
      return ref::BinaryKind::kSub;
    case BinaryOp::kMul:
      return ref::BinaryKind::kMul;
    case BinaryOp::kDiv:
      return ref::BinaryKind::kDiv;
    case BinaryOp::kMax:
      return ref::BinaryKind::kMax;
    case BinaryOp::kMin:
      return ref::BinaryKind::kMin;
  }
  return ref::BinaryKind::kAdd;
}

constexpr BinaryOp kBinaryOps[] = {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul,
                                   BinaryOp::kDiv, BinaryOp::kMax, BinaryOp::kMin};

struct BroadcastCase {
  std::vector<int64_t> a, b;
};

std::vector<BroadcastCase> BroadcastCases() {
  std::vector<BroadcastCase> cases;
  for (int64_t n : {1, 2, 3, 7, 15, 16, 17, 31, 33, 1001}) {
    cases.push_back({{n}, {n}});  // same shape
    cases.push_back({{n}, {}});   // scalar operand, both sides
    cases.push_back({{}, {n}});
    cases.push_back({{1}, {n}});
  }
  cases.push_back({{2, 3, 17, 5}, {2, 3, 17, 5}});
  cases.push_back({{2, 7, 5, 3}, {7, 1, 1}});   // per channel
  cases.push_back({{7, 1, 1}, {1, 7, 9, 17}});  // per channel, on the left
  cases.push_back({{31, 33}, {33}});            // row broadcast
  cases.push_back({{33}, {31, 33}});
  cases.push_back({{31, 1}, {1, 33}});  // outer product
  cases.push_back({{3, 1, 5, 1, 7}, {1, 4, 1, 6, 1}});
  cases.push_back({{2, 3, 1, 17}, {3, 16, 1}});
  cases.push_back({{1, 1, 1}, {1, 1}});
  cases.push_back({{4, 0, 3}, {3}});       // empty output
  cases.push_back({{64, 1000}, {64, 1}});  // long runs, chunked over threads
  cases.push_back({{3, 20000}, {20000}});
  return cases;
}

TEST(HotEltwise, BinaryBroadcastMatchesReference) {
  std::mt19937 rng(kSeed);
  for (const BroadcastCase& bc : BroadcastCases()) {
    auto out = BroadcastDims(bc.a, bc.b);
    ASSERT_TRUE(out.ok()) << out.status().message();
    const size_t n = Numel(out.value());
    std::vector<float> a = Random(Numel(bc.a), -2.0f, 2.0f, rng);
    std::vector<float> b = Random(Numel(bc.b), 0.5f, 3.0f, rng);  // no division by zero
    Tensor ta = Tensor::FromVector(a, bc.a), tb = Tensor::FromVector(b, bc.b);
    for (BinaryOp op : kBinaryOps) {
      auto expect = ref::Binary(RefKind(op), ta, tb);
      ASSERT_TRUE(expect.ok()) << expect.status().message();
      for (IsaLevel isa : IsaLevels()) {
        for (size_t threads : {1, 2}) {
          SCOPED_TRACE(StrCat("op=", BinaryOpName(op), " a=", DimsString(bc.a),
                              " b=", DimsString(bc.b), " isa=", IsaName(isa), " threads=", threads,
                              " seed=", kSeed));
          std::vector<float> y(n, -7.0f);
          Options o;
          o.isa = isa;
          o.pool = Pool(threads);
          ASSERT_TRUE(Binary(op, bc.a, a.data(), bc.b, b.data(), y.data(), o).ok());
          if (n > 0) {  // an empty output has no data pointers to compare
            ASSERT_EQ(0, std::memcmp(y.data(), expect->data<float>(), n * sizeof(float)));
          }
        }
      }
    }
  }
}

TEST(HotEltwise, BinaryInPlaceAndNaN) {
  std::mt19937 rng(kSeed + 1);
  const std::vector<int64_t> dims{3, 37};
  for (IsaLevel isa : IsaLevels()) {
    for (BinaryOp op : kBinaryOps) {
      SCOPED_TRACE(StrCat("op=", BinaryOpName(op), " isa=", IsaName(isa)));
      std::vector<float> a = Random(111, -2.0f, 2.0f, rng), b = Random(37, 0.5f, 3.0f, rng);
      a[5] = NAN;
      b[7] = NAN;
      auto expect =
          ref::Binary(RefKind(op), Tensor::FromVector(a, dims), Tensor::FromVector(b, {37}));
      ASSERT_TRUE(expect.ok());
      Options o;
      o.isa = isa;
      ASSERT_TRUE(Binary(op, dims, a.data(), std::vector<int64_t>{37}, b.data(), a.data(), o).ok());
      for (size_t i = 0; i < a.size(); ++i) {
        const float e = expect->data<float>()[i];
        if (std::isnan(e)) {
          EXPECT_TRUE(std::isnan(a[i])) << i;
        } else {
          EXPECT_EQ(a[i], e) << i;
        }
      }
    }
  }
}

TEST(HotEltwise, BinaryErrors) {
  const std::vector<int64_t> a{3, 4}, b{5};
  std::vector<float> x(12), y(12), z(5);
  EXPECT_FALSE(Binary(BinaryOp::kAdd, a, x.data(), b, z.data(), y.data()).ok());
  EXPECT_FALSE(Binary(BinaryOp::kAdd, a, nullptr, a, x.data(), y.data()).ok());
  const std::vector<int64_t> neg{-1};
  EXPECT_FALSE(Binary(BinaryOp::kAdd, neg, x.data(), neg, x.data(), y.data()).ok());
  EXPECT_FALSE(Unary(UnaryOp::kRelu, 3, nullptr, y.data()).ok());
}

// The activation in double: the oracle for the accuracy sweep.
double Exact(UnaryOp op, double x, const UnaryParams& p) {
  switch (op) {
    case UnaryOp::kRelu:
      return std::max(x, 0.0);
    case UnaryOp::kClip:
      return std::min(std::max(x, double{p.alpha}), double{p.beta});
    case UnaryOp::kSigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case UnaryOp::kTanh:
      return std::tanh(x);
    case UnaryOp::kSilu:
      return x / (1.0 + std::exp(-x));
    case UnaryOp::kHardSwish:
      return x * std::min(std::max(x / 6.0 + 0.5, 0.0), 1.0);
    case UnaryOp::kHardSigmoid:
      return std::min(std::max(p.alpha * x + p.beta, 0.0), 1.0);
    case UnaryOp::kGelu:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case UnaryOp::kExp:
      return std::exp(x);
    case UnaryOp::kLeakyRelu:
      return x < 0 ? p.alpha * x : x;
  }
  return 0;
}

// The ref kernel's kind and params for `op`; Clip and SiLU have no Unary kind.
bool RefUnary(UnaryOp op, const UnaryParams& p, ref::UnaryKind* kind, ref::UnaryParams* rp) {
  rp->alpha = p.alpha;
  rp->beta = p.beta;
  switch (op) {
    case UnaryOp::kRelu:
      *kind = ref::UnaryKind::kRelu;
      return true;
    case UnaryOp::kSigmoid:
      *kind = ref::UnaryKind::kSigmoid;
      return true;
    case UnaryOp::kTanh:
      *kind = ref::UnaryKind::kTanh;
      return true;
    case UnaryOp::kHardSwish:
      *kind = ref::UnaryKind::kHardSwish;
      return true;
    case UnaryOp::kHardSigmoid:
      *kind = ref::UnaryKind::kHardSigmoid;
      return true;
    case UnaryOp::kGelu:
      *kind = ref::UnaryKind::kGelu;
      return true;
    case UnaryOp::kExp:
      *kind = ref::UnaryKind::kExp;
      return true;
    case UnaryOp::kLeakyRelu:
      *kind = ref::UnaryKind::kLeakyRelu;
      return true;
    default:
      return false;
  }
}

// Error of y against the exact value r, in units of the float spacing at r.
double Ulps(float y, double r) {
  if (std::isinf(r) || std::isnan(r)) return (y == r || (std::isnan(y) && std::isnan(r))) ? 0 : 1e9;
  const float rf = static_cast<float>(r);
  const double spacing = std::max<double>(std::nextafter(std::fabs(rf), INFINITY) - std::fabs(rf),
                                          std::numeric_limits<float>::denorm_min());
  return std::fabs(static_cast<double>(y) - r) / spacing;
}

struct UnaryCase {
  UnaryOp op;
  UnaryParams params;
  float lo, hi;    // the sweep
  double max_ulp;  // documented bound (0: checked with abs_tol instead)
  double abs_tol;  // |y - exact| <= abs_tol * max(1, |x|)
};

constexpr UnaryCase kUnaryCases[] = {
    {UnaryOp::kRelu, {}, -10, 10, 0, 0},
    {UnaryOp::kClip, {-0.5f, 6.0f}, -10, 10, 0, 0},
    {UnaryOp::kSigmoid, {}, -40, 40, 3, 0},       // measured 2.31 ulp
    {UnaryOp::kTanh, {}, -12, 12, 3, 0},          // measured 2.48 ulp
    {UnaryOp::kSilu, {}, -40, 40, 4, 0},          // measured 3.53 ulp
    {UnaryOp::kHardSwish, {}, -10, 10, 0, 1e-7},  // measured 9.1e-8 abs
    {UnaryOp::kHardSigmoid, {0.2f, 0.5f}, -10, 10, 0, 1e-7},
    {UnaryOp::kGelu, {}, -12, 12, 0, 2e-7},              // measured 1.74e-7 abs
    {UnaryOp::kExp, {}, -87, 88, 1.5, 0},                // measured 1.25 ulp
    {UnaryOp::kLeakyRelu, {0.01f, 0}, -10, 10, 0.5, 0},  // one rounding
};

TEST(HotEltwise, UnaryAccuracySweep) {
  for (const UnaryCase& uc : kUnaryCases) {
    const size_t n = 200003;
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = uc.lo + (uc.hi - uc.lo) * static_cast<float>(i) / (n - 1);
    for (IsaLevel isa : IsaLevels()) {
      std::vector<float> y(n);
      Options o;
      o.isa = isa;
      ASSERT_TRUE(Unary(uc.op, n, x.data(), y.data(), uc.params, o).ok());
      double worst_ulp = 0, worst_abs = 0;
      for (size_t i = 0; i < n; ++i) {
        const double r = Exact(uc.op, x[i], uc.params);
        worst_ulp = std::max(worst_ulp, Ulps(y[i], r));
        worst_abs =
            std::max(worst_abs, std::fabs(y[i] - r) / std::max(1.0, std::fabs(double{x[i]})));
      }
      SCOPED_TRACE(StrCat("op=", UnaryOpName(uc.op), " isa=", IsaName(isa)));
      if (uc.max_ulp > 0) {
        EXPECT_LE(worst_ulp, uc.max_ulp);
      } else if (uc.abs_tol > 0) {
        EXPECT_LE(worst_abs, uc.abs_tol);
      } else {
        EXPECT_EQ(worst_ulp, 0);  // exact ops
      }
      if (isa == ActiveIsa()) {
        std::printf("  %-12s %-7s max %.2f ulp, max abs/max(1,|x|) %.3g on [%g, %g]\n",
                    UnaryOpName(uc.op), IsaName(isa), worst_ulp, worst_abs, uc.lo, uc.hi);
      }
    }
  }
}

TEST(HotEltwise, UnaryExtremes) {
  const std::vector<float> x{0.0f,    -0.0f,    1e-30f,    -1e-30f, 1e-6f,   -1e-6f,
                             88.5f,   89.0f,    100.0f,    -88.0f,  -100.0f, -104.0f,
                             -200.0f, INFINITY, -INFINITY, 1e30f,   -1e30f};
  for (IsaLevel isa : IsaLevels()) {
    std::vector<float> y(x.size());
    Options o;
    o.isa = isa;
    ASSERT_TRUE(Unary(UnaryOp::kExp, x.size(), x.data(), y.data(), {}, o).ok());
    for (size_t i = 0; i < x.size(); ++i) {
      const double r = std::exp(double{x[i]});
      if (r > 3.4028234e38) {
        EXPECT_EQ(y[i], INFINITY) << x[i];
      } else {
        EXPECT_NEAR(y[i], r, std::max(2.5e-7 * r, 2e-45)) << x[i] << " isa=" << IsaName(isa);
      }
    }
    for (UnaryOp op : {UnaryOp::kSigmoid, UnaryOp::kTanh, UnaryOp::kSilu, UnaryOp::kGelu}) {
      ASSERT_TRUE(Unary(op, x.size(), x.data(), y.data(), {}, o).ok());
      for (size_t i = 0; i < x.size(); ++i) {
        const double r = Exact(op, x[i], {});
        if (std::isnan(r)) continue;  // SiLU/GELU of -inf: inf * 0
        if (std::isinf(r)) {
          EXPECT_EQ(y[i], r) << UnaryOpName(op) << "(" << x[i] << ") isa=" << IsaName(isa);
          continue;
        }
        EXPECT_NEAR(y[i], r, 3e-7 * std::max(1.0, std::fabs(r)))
            << UnaryOpName(op) << "(" << x[i] << ") isa=" << IsaName(isa);
      }
    }
    std::vector<float> nan{NAN, 1.0f};
    // The clamps too (ReLU, Clip, HardSigmoid, HardSwish): NaN stays NaN, as in the reference.
    for (UnaryOp op : {UnaryOp::kExp, UnaryOp::kSigmoid, UnaryOp::kTanh, UnaryOp::kSilu,
                       UnaryOp::kGelu, UnaryOp::kRelu, UnaryOp::kClip, UnaryOp::kHardSigmoid,
                       UnaryOp::kHardSwish}) {
      std::vector<float> out(2);
      ASSERT_TRUE(Unary(op, 2, nan.data(), out.data(), {}, o).ok());
      EXPECT_TRUE(std::isnan(out[0])) << UnaryOpName(op) << " isa=" << IsaName(isa);
    }
  }
}

TEST(HotEltwise, UnaryMatchesReferenceOddSizesInPlace) {
  std::mt19937 rng(kSeed + 2);
  for (const UnaryCase& uc : kUnaryCases) {
    for (size_t n : kSizes) {
      std::vector<float> x = Random(n, -8.0f, 8.0f, rng);
      ref::UnaryKind kind;
      ref::UnaryParams rp;
      std::vector<float> expect(n);
      if (RefUnary(uc.op, uc.params, &kind, &rp)) {
        auto t = ref::Unary(kind, rp, Tensor::FromVector(x, {static_cast<int64_t>(n)}));
        ASSERT_TRUE(t.ok()) << t.status().message();
        std::memcpy(expect.data(), t->data<float>(), n * sizeof(float));
      } else {
        for (size_t i = 0; i < n; ++i)
          expect[i] = static_cast<float>(Exact(uc.op, x[i], uc.params));
      }
      for (IsaLevel isa : IsaLevels()) {
        for (size_t threads : {1, 2}) {
          SCOPED_TRACE(StrCat("op=", UnaryOpName(uc.op), " n=", n, " isa=", IsaName(isa),
                              " threads=", threads, " seed=", kSeed + 2));
          Options o;
          o.isa = isa;
          o.pool = Pool(threads);
          std::vector<float> y = x;  // in place
          ASSERT_TRUE(Unary(uc.op, n, y.data(), y.data(), uc.params, o).ok());
          for (size_t i = 0; i < n; ++i) {
            ASSERT_NEAR(y[i], expect[i], 6e-7 * std::max(1.0f, std::fabs(expect[i])))
                << "x=" << x[i] << " i=" << i;
          }
        }
      }
    }
  }
}

TEST(HotEltwise, ChannelScaleNchwcMatchesPlainProduct) {
  // Blocks narrower than, equal to and wider than a vector (odd ones too), padded last blocks,
  // one scale for the batch or one per image, in place and not: exact products, and padding
  // lanes scaled to 0.
  std::mt19937 rng(kSeed + 7);
  for (size_t c : {1, 2, 3, 4, 8, 16, 24, 32, 48, 64}) {
    for (size_t hw : {1, 2, 3, 5, 17, 49}) {
      for (size_t batch : {1, 2}) {
        for (size_t channels : {c * 2, c * 3 - (c + 1) / 2}) {
          const size_t blocks = (channels + c - 1) / c, n = batch * blocks * hw * c;
          for (bool per_image : {false, true}) {
            const std::vector<float> x = Random(n, -3.0f, 3.0f, rng);
            const std::vector<float> s = Random((per_image ? batch : 1) * channels, -2.0f, 2.0f, rng);
            std::vector<float> expect(n);
            for (size_t i = 0; i < n; ++i) {
              const size_t l = i % c, b = i / (hw * c), img = b / blocks, ch = b % blocks * c + l;
              expect[i] = ch < channels ? x[i] * s[(per_image ? img : 0) * channels + ch] : 0.0f;
            }
            for (IsaLevel isa : IsaLevels()) {
              for (size_t threads : {1, 2}) {
                for (bool in_place : {false, true}) {
                  SCOPED_TRACE(StrCat("c=", c, " hw=", hw, " batch=", batch, " channels=",
                                      channels, " per_image=", per_image, " isa=", IsaName(isa),
                                      " threads=", threads, " in_place=", in_place));
                  Options o;
                  o.isa = isa;
                  o.pool = Pool(threads);
                  std::vector<float> y = in_place ? x : std::vector<float>(n, 12345.0f);
                  ASSERT_TRUE(ChannelScaleNchwc(batch, blocks, hw, c, channels, per_image,
                                                in_place ? y.data() : x.data(), s.data(),
                                                y.data(), o)
                                  .ok());
                  ASSERT_EQ(y, expect);
                }
              }
            }
          }
        }
      }
    }
  }
  std::vector<float> x(64), y(64);
  EXPECT_FALSE(ChannelScaleNchwc(1, 1, 1, 65, 65, false, x.data(), x.data(), y.data()).ok());
  EXPECT_FALSE(ChannelScaleNchwc(1, 2, 1, 16, 16, false, x.data(), x.data(), y.data()).ok());
  EXPECT_FALSE(ChannelScaleNchwc(1, 1, 1, 16, 16, false, nullptr, x.data(), y.data()).ok());
}

TEST(HotEltwise, TableCoversEveryOpAndIsa) {
  for (IsaLevel isa : IsaLevels()) {
    for (BinaryOp op : kBinaryOps) {
      const BinaryUkernel& k = SelectBinaryUkernel(op, isa);
      EXPECT_EQ(k.op, op);
      EXPECT_EQ(k.isa, isa) << k.name;
    }
    for (const UnaryCase& uc : kUnaryCases) {
      const UnaryUkernel& k = SelectUnaryUkernel(uc.op, isa);
      EXPECT_EQ(k.op, uc.op);
      EXPECT_EQ(k.isa, isa) << k.name;
    }
  }
}

}  // namespace
}  // namespace kiln::eltwise
