// fp32 GEMM drivers and microkernels against a naive double-precision reference, over edge
// shapes, strides, transposes, every epilogue, threads 1 and 2, and every ISA level available.
#include "kernels/gemm/gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/gemm/ukernel_table.h"
#include "support/cpu.h"
#include "support/thread_pool.h"

namespace kiln::gemm {
namespace {

constexpr uint32_t kSeed = 20261129;
constexpr size_t kSizes[] = {1, 2, 3, 7, 13, 17, 31, 64, 100, 129};
constexpr Activation kActivations[] = {Activation::kNone, Activation::kRelu, Activation::kClip,
                                       Activation::kSilu, Activation::kHardSwish,
                                       Activation::kGelu};

std::vector<IsaLevel> IsaLevels() {
  std::vector<IsaLevel> levels;
  for (const GemmUkernel& row : GemmUkernels()) {
    if (row.isa <= ActiveIsa() && row.uarch == Uarch::kOther) levels.push_back(row.isa);
  }
  return levels;
}

ThreadPool* TwoThreads() {
  static std::unique_ptr<ThreadPool> pool = std::move(ThreadPool::Create(2).value());
  return pool.get();
}

ThreadPool* PoolOf(size_t threads) {
  static std::unique_ptr<ThreadPool> three = std::move(ThreadPool::Create(3).value());
  if (threads == 2) return TwoThreads();
  return threads == 3 ? three.get() : nullptr;
}

// Exactly (rows - 1) * ld + cols floats, so that ASan catches a read past the last element.
std::vector<float> RandomMatrix(size_t rows, size_t cols, size_t ld, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols);
  for (float& x : v) x = dist(rng);
  return v;
}

float Activate(float v, const Epilogue& ep) {
  switch (ep.activation) {
    case Activation::kNone:
      return v;
    case Activation::kRelu:
      return std::max(v, 0.0f);
    case Activation::kClip:
      return std::min(std::max(v, ep.clip_min), ep.clip_max);
    case Activation::kSilu:
      return static_cast<float>(v / (1.0 + std::exp(-static_cast<double>(v))));
    case Activation::kHardSwish:
      return v * std::min(std::max(v / 6.0f + 0.5f, 0.0f), 1.0f);
    case Activation::kGelu:
      return static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
  }
  return v;
}

struct Case {
  size_t m = 1, n = 1, k = 1;
  size_t pad_a = 0, pad_b = 0, pad_c = 0;  // leading dimension = minimum + pad
  bool trans_a = false, trans_b = false, accumulate = false;
  BiasKind bias = BiasKind::kNone;
  Activation act = Activation::kNone;
  size_t threads = 1;
  IsaLevel isa = IsaLevel::kScalar;
  enum { kPlain, kPackedA, kPackedB } path = kPlain;
  Blocking blocking;
  Orientation orient = Orientation::kAuto;
  size_t n_hint = 0;  // PackA's, on the kPackedA path

  std::string Describe() const {
    return StrCat("m=", m, " n=", n, " k=", k, " pads=", pad_a, "/", pad_b, "/", pad_c,
                  " trans_a=", trans_a, " trans_b=", trans_b, " accumulate=", accumulate,
                  " bias=", static_cast<int>(bias), " act=", ActivationName(act),
                  " threads=", threads, " isa=", IsaName(isa), " path=", static_cast<int>(path),
                  " kc/mc/nc=", blocking.kc, "/", blocking.mc, "/", blocking.nc,
                  " orientation=", static_cast<int>(orient), " n_hint=", n_hint, " seed=", kSeed);
  }
};

// Runs one case and compares with the reference. Tolerance: the products are summed in a
// different order, so each output may differ by eps * (K + 1) * max|a| * max|b| (doubled for
// safety), plus eps-sized terms for the bias and old C, plus 1e-6 * (1 + |ref|) for the
// vectorized exp/erf in SiLU and GELU (their slopes are below 1.2, so input errors carry over).
void RunCase(const Case& tc) {
  SCOPED_TRACE(tc.Describe());
  std::mt19937 rng(kSeed + static_cast<uint32_t>(tc.m * 131 + tc.n * 17 + tc.k));
  const size_t lda = (tc.trans_a ? tc.m : tc.k) + tc.pad_a;
  const size_t ldb = (tc.trans_b ? tc.k : tc.n) + tc.pad_b;
  const size_t ldc = tc.n + tc.pad_c;
  std::vector<float> a = RandomMatrix(tc.trans_a ? tc.k : tc.m, tc.trans_a ? tc.m : tc.k, lda, rng);
  std::vector<float> b = RandomMatrix(tc.trans_b ? tc.n : tc.k, tc.trans_b ? tc.k : tc.n, ldb, rng);
  std::vector<float> c = RandomMatrix(tc.m, tc.n, ldc, rng);
  std::vector<float> bias = RandomMatrix(1, tc.bias == BiasKind::kPerRow ? tc.m : tc.n, 1, rng);
  const std::vector<float> c_old = c;

  Options o;
  o.trans_a = tc.trans_a;
  o.trans_b = tc.trans_b;
  o.accumulate = tc.accumulate;
  o.epilogue.bias_kind = tc.bias;
  o.epilogue.bias = tc.bias == BiasKind::kNone ? nullptr : bias.data();
  o.epilogue.activation = tc.act;
  o.epilogue.clip_min = -0.25f;
  o.epilogue.clip_max = 0.5f;
  o.pool = PoolOf(tc.threads);
  o.isa = tc.isa;
  o.blocking = tc.blocking;
  o.orientation = tc.orient;
  Status st;
  if (tc.path == Case::kPlain) {
    st = Sgemm(tc.m, tc.n, tc.k, a.data(), lda, b.data(), ldb, c.data(), ldc, o);
  } else if (tc.path == Case::kPackedA) {
    Expected<PackedMatrix> pa = PackA(tc.m, tc.k, a.data(), lda, tc.trans_a, tc.isa, tc.n_hint);
    ASSERT_TRUE(pa.ok()) << pa.status().message();
    EXPECT_EQ(pa->isa(), tc.isa);
    a.assign(a.size(), std::numeric_limits<float>::quiet_NaN());  // the packed copy must be used
    st = SgemmPackedA(*pa, tc.n, b.data(), ldb, c.data(), ldc, o);
  } else {
    Expected<PackedMatrix> pb = PackB(tc.k, tc.n, b.data(), ldb, tc.trans_b, tc.isa);
    ASSERT_TRUE(pb.ok()) << pb.status().message();
    b.assign(b.size(), std::numeric_limits<float>::quiet_NaN());
    st = SgemmPackedB(tc.m, a.data(), lda, *pb, c.data(), ldc, o);
  }
  ASSERT_TRUE(st.ok()) << st.message();

  std::mt19937 rng2(kSeed + static_cast<uint32_t>(tc.m * 131 + tc.n * 17 + tc.k));
  const std::vector<float> a0 =
      RandomMatrix(tc.trans_a ? tc.k : tc.m, tc.trans_a ? tc.m : tc.k, lda, rng2);
  const std::vector<float> b0 =
      RandomMatrix(tc.trans_b ? tc.n : tc.k, tc.trans_b ? tc.k : tc.n, ldb, rng2);
  const double eps = std::numeric_limits<float>::epsilon();
  size_t bad = 0;
  for (size_t i = 0; i < tc.m; ++i) {
    for (size_t j = 0; j < tc.n; ++j) {
      double sum = 0.0;
      for (size_t p = 0; p < tc.k; ++p) {
        const double av = tc.trans_a ? a0[p * lda + i] : a0[i * lda + p];
        const double bv = tc.trans_b ? b0[j * ldb + p] : b0[p * ldb + j];
        sum += av * bv;
      }
      if (tc.accumulate) sum += c_old[i * ldc + j];
      if (tc.bias == BiasKind::kPerRow) sum += bias[i];
      if (tc.bias == BiasKind::kPerColumn) sum += bias[j];
      const float want = Activate(static_cast<float>(sum), o.epilogue);
      const float got = c[i * ldc + j];
      const double tol = 1.2 * (2.0 * eps * (tc.k + 1) + 4.0 * eps * 2.0) +
                         1e-6 * (1.0 + std::fabs(want));
      if (!(std::fabs(got - want) <= tol) && ++bad <= 5) {
        ADD_FAILURE() << "C[" << i << "," << j << "] = " << got << ", want " << want
                      << " (tol " << tol << ")";
      }
    }
    // Padding between rows of C must be untouched.
    for (size_t j = tc.n; i + 1 < tc.m && j < ldc; ++j) {
      ASSERT_EQ(c[i * ldc + j], c_old[i * ldc + j]) << "padding of row " << i << " written";
    }
  }
  EXPECT_EQ(bad, 0u);
}

TEST(Gemm, AllShapesEveryIsa) {
  for (IsaLevel isa : IsaLevels()) {
    for (size_t m : kSizes) {
      for (size_t n : kSizes) {
        for (size_t k : kSizes) {
          Case tc;
          tc.m = m, tc.n = n, tc.k = k, tc.isa = isa;
          RunCase(tc);
          if (HasFatalFailure() || HasFailure()) return;
        }
      }
    }
  }
}

TEST(Gemm, EpiloguesBiasAccumulateThreads) {
  const size_t shapes[][3] = {{1, 1, 1}, {7, 13, 3}, {17, 31, 64}, {64, 100, 129},
                              {129, 7, 17}, {100, 129, 31}};
  for (IsaLevel isa : IsaLevels()) {
    for (const auto& s : shapes) {
      for (Activation act : kActivations) {
        for (BiasKind bias : {BiasKind::kNone, BiasKind::kPerRow, BiasKind::kPerColumn}) {
          for (bool acc : {false, true}) {
            for (size_t threads : {1, 2}) {
              Case tc;
              tc.m = s[0], tc.n = s[1], tc.k = s[2];
              tc.act = act, tc.bias = bias, tc.accumulate = acc, tc.threads = threads;
              tc.isa = isa;
              RunCase(tc);
              if (HasFailure()) return;
            }
          }
        }
      }
    }
  }
}

TEST(Gemm, StridesAndTransposes) {
  const size_t shapes[][3] = {{3, 7, 13}, {17, 31, 2}, {64, 64, 64}, {129, 100, 31}};
  for (IsaLevel isa : IsaLevels()) {
    for (const auto& s : shapes) {
      for (int t = 0; t < 4; ++t) {
        for (size_t pad : {0, 1, 5}) {
          Case tc;
          tc.m = s[0], tc.n = s[1], tc.k = s[2];
          tc.trans_a = t & 1, tc.trans_b = t & 2;
          tc.pad_a = pad, tc.pad_b = pad + 2, tc.pad_c = pad + 3;
          tc.isa = isa;
          tc.threads = pad == 5 ? 2 : 1;
          RunCase(tc);
          if (HasFailure()) return;
        }
      }
    }
  }
}

// Row strides a multiple of 4 KiB: the AVX-512 driver packs A there instead of reading its rows
// in place (RowsInPlace), so both ways run at odd shapes, with both K-block layouts.
TEST(Gemm, AliasingRowStrides) {
  const size_t shapes[][3] = {{31, 17, 100}, {29, 45, 1000}, {15, 33, 1023}};
  for (IsaLevel isa : IsaLevels()) {
    for (const auto& s : shapes) {
      for (size_t lda : {size_t{1024}, size_t{1025}}) {
        Case tc;
        tc.m = s[0], tc.n = s[1], tc.k = s[2];
        tc.pad_a = lda - tc.k;
        tc.isa = isa;
        tc.bias = BiasKind::kPerRow;
        tc.act = Activation::kRelu;
        RunCase(tc);
        tc.blocking = {64, 2 * SelectGemmUkernel(isa).mr, 0};
        RunCase(tc);
        if (HasFailure()) return;
      }
    }
  }
}

TEST(Gemm, PackedOperands) {
  // {16, 1000, 64} and {300, 20, 129} are big enough for two threads and split along the side
  // the packed operand is not prepacked for (N with packed A, M with packed B). {48, 1, 1152}
  // and {440, 1, 110} are squeeze-excitation 1x1 convolutions: N == 1 on a packed A, threaded.
  const size_t shapes[][3] = {{1, 1, 1},      {1, 100, 129},  {13, 17, 7},    {64, 129, 100},
                              {129, 64, 31},  {200, 3, 300},  {16, 1000, 64}, {300, 20, 129},
                              {48, 1, 1152},  {440, 1, 110}};
  for (IsaLevel isa : IsaLevels()) {
    for (const auto& s : shapes) {
      for (auto path : {Case::kPackedA, Case::kPackedB}) {
        for (size_t threads : {1, 2, 3}) {
          for (bool trans : {false, true}) {
            Case tc;
            tc.m = s[0], tc.n = s[1], tc.k = s[2];
            tc.path = path, tc.threads = threads, tc.isa = isa;
            tc.trans_a = trans && path == Case::kPackedA;
            tc.trans_b = trans && path == Case::kPackedB;
            tc.pad_a = tc.pad_b = trans ? 3 : 0;
            tc.bias = path == Case::kPackedA ? BiasKind::kPerRow : BiasKind::kPerColumn;
            tc.act = Activation::kSilu;
            RunCase(tc);
            if (HasFailure()) return;
          }
        }
      }
    }
  }
}

// The transposed product (C^T = B^T A^T, tiles stored transposed) forced on every shape, and
// reached through a packed A with NR-row panels (PackA's n_hint), with every epilogue. Its A
// (B^T) is read in place by the microkernel (a_stride) or packed, depending on B and M.
TEST(Gemm, TransposedEveryIsa) {
  constexpr size_t kSome[] = {1, 3, 13, 17, 31, 64, 100};
  for (IsaLevel isa : IsaLevels()) {
    for (size_t m : kSome) {
      for (size_t n : kSome) {
        for (size_t k : {1, 7, 64, 129}) {
          Case tc;
          tc.m = m, tc.n = n, tc.k = k, tc.isa = isa;
          tc.orient = Orientation::kTransposed;
          tc.bias = (m + n) % 2 ? BiasKind::kPerRow : BiasKind::kPerColumn;
          tc.accumulate = k == 7;
          tc.act = k == 64 ? Activation::kSilu : Activation::kClip;
          tc.threads = m * n * k > 262144 ? 2 : 1;
          // B^T is read in place (plain B, M <= 4 NR) or packed (transposed B, or more rows).
          tc.trans_b = (m + k) % 3 == 0, tc.pad_b = tc.trans_b ? 1 : 0;
          RunCase(tc);
          if (HasFailure()) return;
        }
      }
    }
    const GemmUkernel& uk = SelectGemmUkernel(isa);
    // {160, 196, 150}: 14x14 pixels (13 vectors for 12.25), transposed under a prepacked A from
    // K ~ 130 (M > 4 NR); {64, 400, 64}: K = M <= 4 NR, a cost tie, also transposed there.
    const size_t shapes[][3] = {{100, 17, 64}, {64, 49, 300},   {300, 49, 160},
                                {33, 7, 1},    {160, 196, 150}, {64, 400, 64}};
    for (const auto& s : shapes) {
      for (Activation act : kActivations) {
        for (size_t threads : {1, 2}) {
          for (bool trans : {false, true}) {
            Case tc;
            tc.m = s[0], tc.n = s[1], tc.k = s[2], tc.isa = isa;
            tc.path = Case::kPackedA, tc.n_hint = s[1], tc.act = act, tc.threads = threads;
            tc.trans_a = trans, tc.pad_a = trans ? 3 : 0, tc.pad_c = 2;
            tc.bias = BiasKind::kPerRow, tc.accumulate = act == Activation::kRelu;
            RunCase(tc);
            if (HasFailure()) return;
            // N = 49 fills 49 of 64 AVX-512 lanes: PackA lays the panels out transposed; so it
            // does for the two shapes above.
            if (isa == IsaLevel::kAvx512 && (s[1] == 49 || s[1] == 196 || s[1] == 400)) {
              std::vector<float> w(tc.m * tc.k);
              Expected<PackedMatrix> pa = PackA(tc.m, tc.k, w.data(), tc.k, false, isa, s[1]);
              ASSERT_TRUE(pa.ok());
              EXPECT_EQ(pa->panel_width(), uk.nr);
            }
          }
        }
      }
    }
    for (size_t threads : {1, 2}) {
      for (bool acc : {false, true}) {
        Case tc;
        tc.m = 3 * uk.nr + 5, tc.n = 3 * uk.mr + 1, tc.k = 129, tc.isa = isa;
        tc.blocking = {8, 2 * uk.mr, 2 * uk.nr};
        tc.orient = Orientation::kTransposed, tc.threads = threads, tc.accumulate = acc;
        tc.bias = BiasKind::kPerRow, tc.act = Activation::kGelu;
        RunCase(tc);
        if (HasFailure()) return;
      }
    }
  }
}

// Small blocks force several K, M and N blocks per call, so the accumulation across K blocks and
// the epilogue-on-the-last-block logic are exercised even on small shapes.
TEST(Gemm, SmallBlocking) {
  for (IsaLevel isa : IsaLevels()) {
    const GemmUkernel& uk = SelectGemmUkernel(isa);
    for (auto path : {Case::kPlain, Case::kPackedA, Case::kPackedB}) {
      for (size_t threads : {1, 2}) {
        for (bool acc : {false, true}) {
          Case tc;
          tc.m = 3 * uk.mr + 1, tc.n = 3 * uk.nr + 5, tc.k = 129;
          tc.blocking = {8, 2 * uk.mr, 2 * uk.nr};
          tc.path = path, tc.threads = threads, tc.accumulate = acc, tc.isa = isa;
          tc.bias = BiasKind::kPerColumn, tc.act = Activation::kGelu;
          RunCase(tc);
          if (HasFailure()) return;
        }
      }
    }
  }
}

// N == 1 (matrix-vector, its own microkernel) and M == 1 (B read in place, not packed).
TEST(Gemm, VectorShapes) {
  for (IsaLevel isa : IsaLevels()) {
    for (size_t len : {1, 5, 129, 1000}) {
      for (size_t k : {1, 7, 16, 17, 32, 65, 300}) {
        for (int variant = 0; variant < 4; ++variant) {
          Case tc;
          tc.isa = isa, tc.k = k;
          tc.m = variant < 2 ? len : 1;
          tc.n = variant < 2 ? 1 : len;
          tc.threads = variant % 2 ? 2 : 1;
          tc.accumulate = variant % 2;
          tc.pad_c = variant % 2 ? 2 : 0;   // ldc > 1 for the strided output column
          tc.pad_a = variant == 3 ? 3 : 0;
          tc.pad_b = variant == 3 ? 5 : 0;
          tc.bias = variant == 1 ? BiasKind::kPerRow : BiasKind::kPerColumn;
          tc.act = variant == 0 ? Activation::kGelu : Activation::kClip;
          RunCase(tc);
          if (HasFailure()) return;
        }
      }
    }
  }
}

// One column over a packed A (squeeze-excitation 1x1 convolutions) and one row over a packed B
// (a classifier with batch 1) run as matrix-vector products over the panels (panel_gemv.h):
// MR- and NR-row panels of A, lengths around the panel widths, every epilogue, strided x and
// y, threads.
TEST(Gemm, PackedVectorShapes) {
  for (IsaLevel isa : IsaLevels()) {
    for (size_t len : {1, 5, 14, 15, 33, 129, 1000}) {
      for (size_t k : {1, 3, 4, 7, 17, 300}) {
        for (int variant = 0; variant < 6; ++variant) {
          Case tc;
          tc.isa = isa, tc.k = k;
          tc.path = variant % 2 ? Case::kPackedB : Case::kPackedA;
          tc.m = variant % 2 ? 1 : len;
          tc.n = variant % 2 ? len : 1;
          tc.n_hint = variant == 2 ? 64 : 0;  // NR-row panels of A (the transposed layout)
          tc.threads = variant >= 2 ? 2 : 1;
          tc.accumulate = variant >= 2;
          tc.pad_c = variant >= 4 ? 2 : 0;  // a strided column of C
          tc.trans_a = variant == 4;        // x strided (packed B) / A packed from A^T
          tc.trans_b = variant == 5;
          tc.pad_a = tc.pad_b = variant >= 4 ? 3 : 0;
          tc.bias = variant % 3 == 0 ? BiasKind::kPerRow
                                     : variant % 3 == 1 ? BiasKind::kPerColumn : BiasKind::kNone;
          tc.act = variant < 2 ? Activation::kHardSwish
                               : variant < 4 ? Activation::kClip : Activation::kRelu;
          RunCase(tc);
          if (HasFailure()) return;
        }
      }
    }
  }
}

// The driver applies SiLU/HardSwish/GELU over groups of tiles (rows of C about 128 floats long,
// at most 32 KiB): shapes just past a group or a tile, in both orientations, on one to three
// threads, with small blocks (several K, M and N blocks, so only the last K block's groups may
// apply it) and the default ones.
TEST(Gemm, ActivationGroupsOddShapes) {
  const size_t shapes[][3] = {{127, 300, 9}, {300, 129, 17}, {5, 700, 3}, {700, 5, 3},
                              {131, 131, 1}, {43, 259, 70}};
  for (IsaLevel isa : IsaLevels()) {
    const GemmUkernel& uk = SelectGemmUkernel(isa);
    for (const auto& s : shapes) {
      for (Activation act : {Activation::kSilu, Activation::kHardSwish, Activation::kGelu}) {
        for (Orientation orient : {Orientation::kNormal, Orientation::kTransposed}) {
          for (size_t threads : {1, 2, 3}) {
            Case tc;
            tc.m = s[0], tc.n = s[1], tc.k = s[2], tc.isa = isa;
            tc.act = act, tc.orient = orient, tc.threads = threads;
            tc.bias = threads == 2 ? BiasKind::kPerColumn : BiasKind::kPerRow;
            tc.accumulate = threads == 3;
            tc.pad_c = threads == 1 ? 0 : 3;
            if (threads == 2) tc.blocking = {16, 3 * uk.mr, 5 * uk.nr};
            RunCase(tc);
            if (HasFailure()) return;
          }
        }
      }
    }
  }
}

// Rows of a plain A that the driver packs (rows 4 KiB apart, N over 128) split into tiles as
// evenly as the tiles allow, the panels packed at those rows (run.cc, TileRows): M one to three
// rows past a multiple of MR, in one and several M and K blocks, both orientations (the
// transposed one reads B^T in place, its tiles split evenly too), with an activation over
// groups of tiles (where the packed rows keep MR-row panels) and without.
TEST(Gemm, EvenRowTilesPackedA) {
  for (IsaLevel isa : IsaLevels()) {
    const GemmUkernel& uk = SelectGemmUkernel(isa);
    for (size_t extra : {1, 2, 3}) {
      for (Orientation orient : {Orientation::kNormal, Orientation::kTransposed}) {
        for (bool small : {false, true}) {
          Case tc;
          tc.m = 2 * uk.mr + extra, tc.n = 150, tc.k = 300, tc.isa = isa, tc.orient = orient;
          tc.pad_a = 1024 - tc.k;
          if (small) tc.blocking = {64, uk.mr + extra, 2 * uk.nr};
          tc.act = extra == 2 ? Activation::kSilu : Activation::kRelu;
          tc.bias = small ? BiasKind::kPerRow : BiasKind::kPerColumn;
          tc.accumulate = extra == 3;
          RunCase(tc);
          if (HasFailure()) return;
        }
      }
    }
  }
}

TEST(Gemm, LargeTwoThreads) {
  for (IsaLevel isa : IsaLevels()) {
    Case tc;
    tc.m = 300, tc.n = 257, tc.k = 600, tc.threads = 2, tc.isa = isa;
    tc.act = Activation::kHardSwish, tc.bias = BiasKind::kPerRow;
    RunCase(tc);
  }
}

// Split along M with B packed, the threads pack each block of B together and then all run on it
// (run.cc, SharedB): several K and N blocks (small blocks; K blocks over 256 long and rows not
// whole lines, so that B is packed rather than read in place), partial last panels, 2 and 3
// threads, both orientations, with and without an epilogue, and the default blocking.
TEST(Gemm, SharedPackedB) {
  const size_t shapes[][3] = {{150, 201, 900}, {97, 333, 650}, {300, 47, 1100}};
  for (IsaLevel isa : IsaLevels()) {
    const GemmUkernel& uk = SelectGemmUkernel(isa);
    for (const auto& s : shapes) {
      for (Orientation orient : {Orientation::kNormal, Orientation::kTransposed}) {
        for (size_t threads : {2, 3}) {
          for (bool small : {true, false}) {
            Case tc;
            tc.m = s[0], tc.n = s[1], tc.k = s[2], tc.isa = isa;
            tc.orient = orient, tc.threads = threads;
            if (small) tc.blocking = {400, 2 * uk.mr, 3 * uk.nr};
            tc.act = threads == 2 ? Activation::kGelu : Activation::kRelu;
            tc.bias = small ? BiasKind::kPerRow : BiasKind::kPerColumn;
            tc.accumulate = threads == 3;
            tc.trans_b = s[0] == 97;  // packed through the ISA's transposing packer
            tc.pad_c = threads == 3 ? 5 : 0;
            RunCase(tc);
            if (HasFailure()) return;
          }
        }
      }
    }
  }
}

// Both operands read in place with K blocks of 192..438 at NR = 32: M blocks of one tile
// (run.cc; 8 panels or more: one thread here), with an activation over groups of tiles, a
// partial last tile row and panel; B rows of whole lines (1088 bytes), so that the 300-long K
// block too reads B in place.
TEST(Gemm, OneTileMBlocks) {
  const size_t shapes[][3] = {{43, 260, 200}, {60, 272, 300}};
  for (IsaLevel isa : IsaLevels()) {
    for (const auto& s : shapes) {
      for (size_t threads : {1, 2}) {
        Case tc;
        tc.m = s[0], tc.n = s[1], tc.k = s[2], tc.isa = isa, tc.threads = threads;
        tc.orient = Orientation::kNormal;
        tc.act = threads == 1 ? Activation::kSilu : Activation::kClip;
        tc.bias = threads == 1 ? BiasKind::kPerColumn : BiasKind::kPerRow;
        tc.accumulate = threads == 2;
        RunCase(tc);
        if (HasFailure()) return;
      }
    }
  }
}

// Products that some cores block with A's panel in L1 (GemmUkernel::a_panel_in_l1: M blocks
// of one tile, K blocks of at most 0.6 L1d / (MR * 4), B blocks of half of L2): 8 row tiles or
// more, 6 panels or more, K past an L1d's worth of NR-wide rows (several K blocks), partial last
// tiles and panels; plain, packed A and packed B, with an epilogue and a residual. Elsewhere
// they check the usual blocking of the same shapes.
TEST(Gemm, APanelInL1Blocks) {
  const size_t shapes[][3] = {{130, 200, 1100}, {113, 230, 530}};
  for (IsaLevel isa : IsaLevels()) {
    for (const auto& s : shapes) {
      for (auto path : {Case::kPlain, Case::kPackedA, Case::kPackedB}) {
        Case tc;
        tc.m = s[0], tc.n = s[1], tc.k = s[2], tc.isa = isa, tc.path = path;
        tc.orient = Orientation::kNormal;
        tc.act = path == Case::kPlain ? Activation::kRelu : Activation::kSilu;
        tc.bias = path == Case::kPackedA ? BiasKind::kPerRow : BiasKind::kPerColumn;
        tc.accumulate = path != Case::kPlain;
        RunCase(tc);
        if (HasFailure()) return;
      }
    }
  }
}

// A plain B larger than half of L3, read in place: the tiles of the first M block pull shares
// of the next panel (run.cc, NextPanelShare), and the driver keeps the normal orientation for it
// (PreferTransposed). Rows 16 floats longer than a multiple of 16 KiB: whole lines, no aliasing.
TEST(Gemm, BFromMemory) {
  Case tc;
  tc.m = 31, tc.k = 64, tc.threads = 2, tc.isa = ActiveIsa();
  tc.n = (GetCpuInfo().l3_bytes / 2 / sizeof(float) / tc.k + 4096) / 4096 * 4096 + 16;
  tc.bias = BiasKind::kPerColumn;
  RunCase(tc);
}

TEST(Gemm, EmptyDimensions) {
  for (size_t k : {0, 5}) {
    for (bool acc : {false, true}) {
      Case tc;
      tc.m = 5, tc.n = 9, tc.k = k, tc.accumulate = acc, tc.isa = ActiveIsa();
      tc.bias = BiasKind::kPerColumn, tc.act = Activation::kRelu;
      RunCase(tc);
    }
  }
  float c = 7.0f;
  EXPECT_TRUE(Sgemm(0, 1, 1, nullptr, 1, nullptr, 1, &c, 1).ok());
  EXPECT_TRUE(Sgemm(1, 0, 1, nullptr, 1, nullptr, 1, nullptr, 0).ok());
  EXPECT_EQ(c, 7.0f);
  ASSERT_TRUE(Sgemm(1, 1, 0, nullptr, 1, nullptr, 1, &c, 1).ok());
  EXPECT_EQ(c, 0.0f);
}

TEST(Gemm, BadArgumentsAreErrors) {
  std::vector<float> a(6), b(6), c(4);
  EXPECT_FALSE(Sgemm(2, 2, 3, nullptr, 3, b.data(), 2, c.data(), 2).ok());
  EXPECT_FALSE(Sgemm(2, 2, 3, a.data(), 2, b.data(), 2, c.data(), 2).ok());  // lda < K
  EXPECT_FALSE(Sgemm(2, 2, 3, a.data(), 3, b.data(), 1, c.data(), 2).ok());  // ldb < N
  EXPECT_FALSE(Sgemm(2, 2, 3, a.data(), 3, b.data(), 2, c.data(), 1).ok());  // ldc < N
  EXPECT_FALSE(Sgemm(2, 2, 3, a.data(), 3, b.data(), 2, nullptr, 2).ok());
  Options o;
  o.epilogue.bias_kind = BiasKind::kPerRow;
  EXPECT_FALSE(Sgemm(2, 2, 3, a.data(), 3, b.data(), 2, c.data(), 2, o).ok());
  o = {};
  o.epilogue.activation = Activation::kClip;
  o.epilogue.clip_min = 1.0f;
  o.epilogue.clip_max = 0.0f;
  Status st = Sgemm(2, 2, 3, a.data(), 3, b.data(), 2, c.data(), 2, o);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("clip"), std::string::npos) << st.message();

  Expected<PackedMatrix> pa = PackA(2, 3, a.data(), 3);
  ASSERT_TRUE(pa.ok());
  EXPECT_FALSE(SgemmPackedB(2, a.data(), 3, *pa, c.data(), 2).ok());  // A where B is expected
  EXPECT_FALSE(SgemmPackedA(PackedMatrix(), 2, b.data(), 2, c.data(), 2).ok());
  EXPECT_FALSE(PackB(3, 2, b.data(), 1).ok());
}

// Each microkernel on its own, for every tile size up to MR x NR, with B read in place through
// ldb (not packed) and exact-size buffers: nothing outside C[0:mr, 0:nr] or B's nr columns may be
// touched (ASan turns an over-read or over-write into a failure). A is packed, read in place by
// k (a_stride), or, where the kernel can, read in place by rows (a_rows); where it can, the
// kernel also packs the rows of B it reads (pack_b) and the rows of A it reads (pack_a).
TEST(GemmUkernels, EveryTileSizeInPlaceB) {
  std::mt19937 rng(kSeed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const GemmUkernel& row : GemmUkernels()) {
    if (row.isa > ActiveIsa()) continue;
    SCOPED_TRACE(row.name);
    for (size_t kc : {1, 5}) {
      for (uint32_t mode : {0u, 1u, 2u, 3u, 4u, 5u}) {
        // Transposed C store; A read in place (a_stride: only rows < mr exist); A read in place
        // by rows (a_rows, a[i * lda + k]).
        const uint32_t trans = mode & 1;
        const bool in_place = mode & 2, by_rows = mode & 4;
        if (by_rows && !row.a_rows) continue;
        for (size_t mr = 1; mr <= row.mr; ++mr) {
          for (size_t nr = 1; nr <= row.nr; ++nr) {
            const size_t ldb = nr + 3;
            // Transposed: C holds nr rows of mr, element (i, j) at c[j * ldc + i].
            const size_t rows = trans ? nr : mr, cols = trans ? mr : nr, ldc = cols + 1;
            // A(i, k) = a[k * as + i * ars].
            const size_t as = by_rows ? 1 : in_place ? mr + 2 : row.mr;
            const size_t ars = by_rows ? kc + 3 : 1;
            std::vector<float> a(by_rows    ? (mr - 1) * ars + kc
                                 : in_place ? (kc - 1) * as + mr
                                            : kc * row.mr);
            std::vector<float> b((kc - 1) * ldb + nr), c((rows - 1) * ldc + cols);
            std::vector<float> bias_m(mr), bias_n(nr);
            for (auto* v : {&a, &b, &c, &bias_m, &bias_n}) {
              for (float& x : *v) x = dist(rng);
            }
            const std::vector<float> c_old = c;
            ukernels::F32GemmTileParams p{1,     bias_m.data(), bias_n.data(),    -0.5f,
                                          0.75f, trans,         in_place ? as : 0,
                                          by_rows ? ars : 0};
            // Prefetch hints (never read as data): B's own rows, from where a tile on the next
            // panel would be.
            p.first_pass = kc == 5 ? 1 : 0;
            p.prefetch_b = kc == 1 ? b.data() + nr : nullptr;
            p.prefetch_b_rows = kc;
            // A kernel that packs the rows it reads (fused_pack_b) does so on odd row counts:
            // exactly kc x NR floats, B's nr columns then zeros.
            std::vector<float> packed(kc * row.nr, std::numeric_limits<float>::quiet_NaN());
            const bool pack = row.fused_pack_b && mr % 2 == 1;
            p.pack_b = pack ? packed.data() : nullptr;
            // One that packs the rows of A it reads in place (fused_pack_a) does so on even
            // column counts: a[i * lda + k] at k * MR + i for i < mr, nothing else written.
            std::vector<float> packed_a(kc * row.mr, std::numeric_limits<float>::quiet_NaN());
            const bool pack_a = by_rows && row.fused_pack_a && nr % 2 == 0;
            p.pack_a = pack_a ? packed_a.data() : nullptr;
            row.gemm(mr, nr, kc, a.data(), b.data(), ldb, c.data(), ldc, &p);
            for (size_t k = 0; pack && k < kc; ++k) {
              for (size_t j = 0; j < row.nr; ++j) {
                ASSERT_EQ(packed[k * row.nr + j], j < nr ? b[k * ldb + j] : 0.0f)
                    << "packed B, mr=" << mr << " nr=" << nr << " k=" << k << " j=" << j;
              }
            }
            for (size_t k = 0; pack_a && k < kc; ++k) {
              for (size_t i = 0; i < row.mr; ++i) {
                const float got = packed_a[k * row.mr + i];
                if (i < mr) {
                  ASSERT_EQ(got, a[i * ars + k]) << "packed A, mr=" << mr << " k=" << k;
                } else {
                  ASSERT_TRUE(std::isnan(got)) << "packed A past mr=" << mr << " k=" << k;
                }
              }
            }
            for (size_t i = 0; i < mr; ++i) {
              for (size_t j = 0; j < nr; ++j) {
                const size_t at = trans ? j * ldc + i : i * ldc + j;
                double want = c_old[at] + bias_m[i] + bias_n[j];
                for (size_t k = 0; k < kc; ++k) want += double{a[k * as + i * ars]} * b[k * ldb + j];
                want = std::min(std::max(want, -0.5), 0.75);
                ASSERT_NEAR(c[at], want, 1e-5) << "mr=" << mr << " nr=" << nr << " kc=" << kc
                                               << " mode=" << mode << " at " << i << "," << j;
              }
            }
            for (size_t r = 0; r + 1 < rows; ++r) {
              for (size_t j = cols; j < ldc; ++j) {
                ASSERT_EQ(c[r * ldc + j], c_old[r * ldc + j])
                    << "mr=" << mr << " nr=" << nr << " trans=" << trans;
              }
            }
          }
        }
      }
    }
  }
}

// The epilogue's cases one by one, every microkernel, full and edge tiles: each bias alone,
// both, none; C overwritten or added to; no clamp or a lower one. Row 0 of A holds a NaN, which
// must reach row 0 of C through every case (the reference keeps it; a clamp whose bound is the
// operand returned on NaN turned it into the bound).
TEST(GemmUkernels, EpilogueCasesKeepNaN) {
  std::mt19937 rng(kSeed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const float inf = std::numeric_limits<float>::infinity();
  for (const GemmUkernel& row : GemmUkernels()) {
    if (row.isa > ActiveIsa()) continue;
    SCOPED_TRACE(row.name);
    for (size_t mr : {size_t{1}, row.mr}) {
      for (size_t nr : {size_t{1}, row.nr - 1, row.nr}) {
        for (uint32_t mode = 0; mode < 32; ++mode) {
          const bool use_m = mode & 1, use_n = mode & 2, load_c = mode & 4, relu = mode & 8;
          const uint32_t trans = (mode >> 4) & 1;
          const size_t kc = 7, ldb = nr, rows = trans ? nr : mr, cols = trans ? mr : nr;
          const size_t ldc = cols;
          std::vector<float> a(kc * row.mr), b(kc * ldb), c(rows * ldc), bias_m(mr), bias_n(nr);
          for (auto* v : {&a, &b, &c, &bias_m, &bias_n}) {
            for (float& x : *v) x = dist(rng);
          }
          a[2 * row.mr] = std::numeric_limits<float>::quiet_NaN();  // A(0, 2)
          const std::vector<float> c_old = c;
          ukernels::F32GemmTileParams p{};
          p.load_c = load_c ? 1 : 0;
          p.bias_m = use_m ? bias_m.data() : nullptr;
          p.bias_n = use_n ? bias_n.data() : nullptr;
          p.min = relu ? 0.0f : -inf;
          p.max = inf;
          p.trans_c = trans;
          row.gemm(mr, nr, kc, a.data(), b.data(), ldb, c.data(), ldc, &p);
          for (size_t i = 0; i < mr; ++i) {
            for (size_t j = 0; j < nr; ++j) {
              const size_t at = trans ? j * ldc + i : i * ldc + j;
              if (i == 0) {
                ASSERT_TRUE(std::isnan(c[at])) << "mr=" << mr << " nr=" << nr << " mode=" << mode;
                continue;
              }
              double want = (load_c ? c_old[at] : 0.0) + (use_m ? bias_m[i] : 0.0) +
                            (use_n ? bias_n[j] : 0.0);
              for (size_t k = 0; k < kc; ++k) want += double{a[k * row.mr + i]} * b[k * ldb + j];
              if (relu) want = std::max(want, 0.0);
              ASSERT_NEAR(c[at], want, 1e-5) << "mr=" << mr << " nr=" << nr << " mode=" << mode
                                             << " at " << i << "," << j;
            }
          }
        }
      }
    }
  }
}

// Every activation kernel in the table against double precision, over tails of every length.
TEST(GemmUkernels, ActivationsMatchExact) {
  std::vector<float> x;
  for (float v = -20.0f; v <= 20.0f; v += 0.01953125f) x.push_back(v);
  for (float v : {-100.0f, -88.5f, 88.5f, 100.0f, 0.0f, -0.0f, 1e-30f}) x.push_back(v);
  using Exact = double (*)(double);
  const Exact silu = [](double v) { return v / (1.0 + std::exp(-v)); };
  const Exact hswish = [](double v) { return v * std::min(std::max(v / 6.0 + 0.5, 0.0), 1.0); };
  const Exact gelu = [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); };
  for (const GemmUkernel& row : GemmUkernels()) {
    if (row.isa > ActiveIsa()) continue;
    SCOPED_TRACE(row.name);
    const std::pair<ukernels::F32VUnaryParamFn, Exact> fns[] = {
        {row.silu, silu}, {row.hswish, hswish}, {row.gelu, gelu}};
    for (const auto& [fn, exact] : fns) {
      for (size_t n : {size_t{1}, size_t{7}, size_t{9}, size_t{14}, size_t{17}, x.size()}) {
        std::vector<float> in(x.begin(), x.begin() + n), got(n);
        fn(n, in.data(), got.data(), nullptr);
        for (size_t i = 0; i < n; ++i) {
          const double want = exact(in[i]);
          ASSERT_NEAR(got[i], want, 1e-6 * (1.0 + std::fabs(want))) << "x=" << in[i];
        }
      }
    }
  }
}

TEST(GemmUkernels, TableDispatch) {
  const GemmUkernel& best = SelectGemmUkernel();
  EXPECT_LE(best.isa, ActiveIsa());
  EXPECT_EQ(SelectGemmUkernel(IsaLevel::kScalar).isa, IsaLevel::kScalar);
  EXPECT_EQ(&SelectGemmUkernel(IsaLevel::kAvx512), &best);
  // Each level's row is its variant for this CPU's microarchitecture where the table has one,
  // else its general row.
  for (const GemmUkernel& row : GemmUkernels()) {
    if (row.isa > ActiveIsa()) continue;
    const GemmUkernel& chosen = SelectGemmUkernel(row.isa);
    EXPECT_EQ(chosen.isa, row.isa);
    if (row.uarch != Uarch::kOther) {
      EXPECT_EQ(&chosen == &row, row.uarch == GetCpuInfo().uarch) << row.name;
    } else {
      EXPECT_TRUE(chosen.uarch == Uarch::kOther || chosen.uarch == GetCpuInfo().uarch);
    }
  }
  EXPECT_TRUE(GetCpuInfo().env_status.ok()) << GetCpuInfo().env_status.message();
  EXPECT_GT(GetCpuInfo().l1d_bytes, 0u);
}

TEST(ThreadPool, ExactCountAndInline) {
  EXPECT_FALSE(ThreadPool::Create(0).ok());
  std::vector<int> hits(100, 0);
  TwoThreads()->ParallelFor(hits.size(), [&](size_t i) { hits[i]++; });
  for (int h : hits) EXPECT_EQ(h, 1);
  EXPECT_EQ(TwoThreads()->threads(), 2u);
}

}  // namespace
}  // namespace kiln::gemm
