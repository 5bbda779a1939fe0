// The A-packing microkernels of the GEMM table (F32PackAFn) against the layout they promise:
// dst[k * mr + i] = A(i, k) for i < rows, zero for rows <= i < mr. Panel widths of MR (A) and NR
// (the transposed product's B, packed by the same kernel), every row count, K around the
// kernels' 8- and 16-wide blocks, and row strides that are not multiples of a vector. Buffers
// are exact-size, so ASan turns a read past A or a write past the panel into a failure.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/gemm/ukernel_table.h"
#include "support/cpu.h"

namespace kiln::gemm {
namespace {

TEST(GemmPackA, EveryRowCountOddKAndStrides) {
  std::mt19937 rng(20261130);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const GemmUkernel& row : GemmUkernels()) {
    if (row.isa > ActiveIsa() || !row.pack_a) continue;
    SCOPED_TRACE(row.name);
    for (size_t mr : {row.mr, row.nr}) {
      for (size_t kc : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100}) {
        for (size_t pad : {0, 1, 5}) {
          const size_t lda = kc + pad;
          for (size_t rows = 1; rows <= mr; ++rows) {
            std::vector<float> a((rows - 1) * lda + kc);
            for (float& x : a) x = dist(rng);
            // Filled with a value the packer never writes, so a skipped store shows.
            std::vector<float> dst(kc * mr, 1e30f);
            row.pack_a(rows, kc, a.data(), lda, mr, dst.data());
            for (size_t k = 0; k < kc; ++k) {
              for (size_t i = 0; i < mr; ++i) {
                const float want = i < rows ? a[i * lda + k] : 0.0f;
                ASSERT_EQ(dst[k * mr + i], want) << "mr=" << mr << " rows=" << rows
                                                 << " kc=" << kc << " lda=" << lda << " at k="
                                                 << k << " i=" << i;
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln::gemm
