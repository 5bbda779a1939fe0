// The orientation model (PreferTransposed) keeps the choices it was fitted to: products timed
// in both orientations on a Zen 5 EPYC (1 thread, medians of 15-21 interleaved rounds; the
// figures are in ukernel_table.cc and gemm.cc), each listed here with the faster one. A change
// to the model or to a table row's costs that flips one of them has to be measured again. The
// model is arithmetic on the table row, so every row is checked whatever this CPU runs (B here
// is far smaller than any L3, so the CPU's cache sizes do not enter).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/gemm/driver.h"
#include "kernels/gemm/ukernel_table.h"

namespace kiln::gemm {
namespace {

struct Measured {
  size_t m, n, k;
  bool transposed;  // the faster orientation, plain A and B
};

void ExpectChoices(const char* name, const std::vector<Measured>& cases) {
  const GemmUkernel* row = nullptr;
  for (const GemmUkernel& r : GemmUkernels()) {
    if (std::strcmp(r.name, name) == 0) row = &r;
  }
  ASSERT_NE(row, nullptr) << name;
  for (const Measured& c : cases) {
    EXPECT_EQ(PreferTransposed(*row, c.m, c.n, c.k, /*b_rows_plain=*/true,
                               /*a_prepacked=*/false),
              c.transposed)
        << name << " " << c.m << "x" << c.n << "x" << c.k;
  }
}

TEST(GemmOrientation, Avx2KeepsMeasuredChoices) {
  ExpectChoices("f32_gemm_6x16__avx2_fma", {{512, 49, 4608, false},
                                            {49, 512, 2048, false},
                                            {512, 7, 4608, false},
                                            {3072, 7, 576, false},
                                            {64, 64, 1152, false},
                                            {1024, 13, 1152, false},
                                            {64, 3136, 576, true},
                                            {128, 784, 1152, true},
                                            {32, 100, 2304, true},
                                            {24, 1024, 1024, false},
                                            {128, 3072, 768, false},
                                            {32, 1536, 384, true}});
}

TEST(GemmOrientation, Avx512KeepsMeasuredChoices) {
  ExpectChoices("f32_gemm_14x32__avx512f", {{64, 64, 1152, false},
                                            {32, 32, 2304, false},
                                            {1024, 13, 1152, false},
                                            {3072, 7, 576, true},
                                            {256, 4, 2304, true},
                                            {2048, 49, 576, true},
                                            {64, 3136, 576, true},
                                            {128, 784, 1152, true},
                                            {32, 4096, 256, true},
                                            {128, 512, 1152, true}});
}

}  // namespace
}  // namespace kiln::gemm
