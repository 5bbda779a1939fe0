// The driver under every microkernel row this CPU can run, the variants fitted to other
// microarchitectures included (Sgemm picks those only on their own CPU, so gemm_test.cc never
// reaches them elsewhere), and under each general row with the driver rules of the Intel
// AVX-512 variant (B always packed past one row of tiles, no transposed product over far-apart
// rows of B) so that those paths run on any CPU. Against a double-precision reference, in every
// orientation, 1 and 2 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/gemm/driver.h"
#include "kernels/gemm/problem.h"
#include "kernels/gemm/ukernel_table.h"
#include "kernel_test_util.h"
#include "support/cpu.h"
#include "support/status.h"

namespace kiln::gemm {
namespace {

struct Shape {
  size_t m, n, k;
};

// One row of tiles and several; B's rows under a page, a page and more apart (N = 1030: rows
// of whole lines but for a tail, 4120 bytes); short and long K; edge tiles everywhere.
constexpr Shape kShapes[] = {{13, 64, 70},  {64, 1100, 70}, {32, 1030, 40}, {30, 300, 300},
                             {100, 129, 31}, {7, 2048, 33}, {45, 1024, 257}};

// The rows to run: each one this CPU has, and a copy of each general row with the variant
// rules switched on.
std::vector<GemmUkernel> Rows() {
  std::vector<GemmUkernel> rows;
  for (const GemmUkernel& row : GemmUkernels()) {
    if (row.isa > ActiveIsa()) continue;
    rows.push_back(row);
    if (row.uarch == Uarch::kOther && row.vec != 0) {
      GemmUkernel packs = row;
      packs.b_in_place = false;
      packs.trans_far_rows_bytes = 4096;
      rows.push_back(packs);
    }
  }
  return rows;
}

void Check(const GemmUkernel& uk, const Shape& s, size_t threads, Orientation orient) {
  SCOPED_TRACE(StrCat(uk.name, " b_in_place=", uk.b_in_place, " m=", s.m, " n=", s.n,
                      " k=", s.k, " threads=", threads,
                      " orientation=", static_cast<int>(orient)));
  std::mt19937 rng(static_cast<uint32_t>(s.m * 131 + s.n * 17 + s.k));
  const size_t lda = s.k + 1, ldb = s.n, ldc = s.n + 2;
  // Exact sizes, so that ASan catches a read past either operand.
  const std::vector<float> a = kernel_test::Random((s.m - 1) * lda + s.k, rng);
  const std::vector<float> b = kernel_test::Random(s.k * ldb, rng);
  std::vector<float> c((s.m - 1) * ldc + s.n, std::numeric_limits<float>::quiet_NaN());
  Problem pb;
  pb.m = s.m;
  pb.n = s.n;
  pb.k = s.k;
  pb.a = {a.data(), lda, 1, nullptr};
  pb.b = {b.data(), ldb, 1, nullptr};
  pb.c = c.data();
  pb.ldc = ldc;
  pb.uk = &uk;
  pb.min = -0.75f;  // a clamp, so that the epilogue runs on every tile
  Run(pb, kernel_test::PoolOf(threads), Blocking{}, orient);

  // As gemm_test.cc's tolerance: another summation order, eps * (K + 1) per unit product.
  const double eps = std::numeric_limits<float>::epsilon();
  const double tol = 2.4 * eps * static_cast<double>(s.k + 1) + 1e-6;
  size_t bad = 0;
  for (size_t i = 0; i < s.m; ++i) {
    for (size_t j = 0; j < s.n; ++j) {
      double sum = 0.0;
      for (size_t p = 0; p < s.k; ++p) sum += double{a[i * lda + p]} * b[p * ldb + j];
      const double want = std::max(sum, -0.75);
      const float got = c[i * ldc + j];
      if (!(std::fabs(got - want) <= tol) && ++bad <= 5) {
        ADD_FAILURE() << "C[" << i << "," << j << "] = " << got << ", want " << want;
      }
    }
  }
  EXPECT_EQ(bad, 0u);
}

TEST(GemmVariants, EveryRowEveryOrientation) {
  const std::vector<GemmUkernel> rows = Rows();
  ASSERT_FALSE(rows.empty());
  for (const GemmUkernel& uk : rows) {
    for (const Shape& s : kShapes) {
      for (Orientation o : {Orientation::kAuto, Orientation::kNormal, Orientation::kTransposed}) {
        Check(uk, s, 1, o);
      }
      Check(uk, s, 2, Orientation::kAuto);
    }
  }
}

// The variant rules move the orientation only where they say: no transposed product of plain
// operands over rows of B a page or more apart, the same choice as the general row below that.
TEST(GemmVariants, FarRowsRuleOnlyAtAPage) {
  for (const GemmUkernel& row : GemmUkernels()) {
    if (row.uarch != Uarch::kOther || row.vec == 0) continue;
    GemmUkernel far = row;
    far.trans_far_rows_bytes = 4096;
    SCOPED_TRACE(row.name);
    for (const Shape& s : {Shape{64, 3136, 576}, Shape{32, 1024, 1024}, Shape{16, 12544, 96}}) {
      EXPECT_FALSE(PreferTransposed(far, s.m, s.n, s.k, true)) << s.m << "x" << s.n << "x" << s.k;
      // A prepacked A packs nothing either way: the rule leaves it to the general model.
      EXPECT_EQ(PreferTransposed(far, s.m, s.n, s.k, true, true),
                PreferTransposed(row, s.m, s.n, s.k, true, true));
    }
    for (const Shape& s : {Shape{64, 784, 576}, Shape{128, 784, 1152}, Shape{48, 1000, 300}}) {
      EXPECT_EQ(PreferTransposed(far, s.m, s.n, s.k, true),
                PreferTransposed(row, s.m, s.n, s.k, true))
          << s.m << "x" << s.n << "x" << s.k;
    }
  }
}

}  // namespace
}  // namespace kiln::gemm
