// The orientation model (PreferTransposed) keeps the choices it was fitted to: products timed
// in both orientations on a Zen 5 EPYC, for the Zen 3 row on a Zen 3 one (1 thread, medians of
// 11-21 interleaved rounds) and for the Intel AVX-512 row on a Sapphire Rapids-class Xeon
// (medians of 4; the figures are in ukernel_table.cc and gemm.cc), each listed here with the
// faster one. A change to the model or to a table row's costs that flips one of them has to be
// measured again. The model is arithmetic on the table row, so every row is checked whatever
// this CPU runs (B here is far smaller than any L3, so the CPU's cache sizes do not enter).
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/gemm/driver.h"
#include "kernels/gemm/ukernel_table.h"

namespace kiln::gemm {
namespace {

struct Measured {
  const char* kernel;  // the table row's name
  size_t m, n, k;
  bool transposed;  // the faster orientation, plain A and B
};

constexpr const char* kAvx2 = "f32_gemm_6x16__avx2_fma";
constexpr const char* kAvx2Zen3 = "f32_gemm_6x16__avx2_fma_zen3";
constexpr const char* kAvx512 = "f32_gemm_14x32__avx512f";
constexpr const char* kAvx512Intel = "f32_gemm_14x32__avx512f_intel";

constexpr Measured kMeasured[] = {
    {kAvx2, 512, 49, 4608, false},     {kAvx2, 49, 512, 2048, false},
    {kAvx2, 512, 7, 4608, false},      {kAvx2, 3072, 7, 576, false},
    {kAvx2, 64, 64, 1152, false},      {kAvx2, 1024, 13, 1152, false},
    {kAvx2, 24, 1024, 1024, false},    {kAvx2, 128, 3072, 768, false},
    {kAvx2, 64, 3136, 576, true},      {kAvx2, 128, 784, 1152, true},
    {kAvx2, 32, 100, 2304, true},      {kAvx2, 32, 1536, 384, true},
    {kAvx512, 64, 64, 1152, false},    {kAvx512, 32, 32, 2304, false},
    {kAvx512, 1024, 13, 1152, false},  {kAvx512, 3072, 7, 576, true},
    {kAvx512, 256, 4, 2304, true},     {kAvx512, 2048, 49, 576, true},
    {kAvx512, 64, 3136, 576, true},    {kAvx512, 128, 784, 1152, true},
    {kAvx512, 32, 4096, 256, true},    {kAvx512, 128, 512, 1152, true},
    {kAvx2Zen3, 64, 3136, 576, false},  {kAvx2Zen3, 128, 784, 1152, false},
    {kAvx2Zen3, 64, 1568, 1152, false}, {kAvx2Zen3, 48, 784, 1152, false},
    {kAvx2Zen3, 100, 1000, 1000, false}, {kAvx2Zen3, 128, 512, 1152, false},
    {kAvx2Zen3, 24, 3136, 144, false},  {kAvx2Zen3, 32, 3136, 576, false},
    {kAvx2Zen3, 16, 784, 576, true},
    {kAvx2Zen3, 3072, 7, 576, false},   {kAvx2Zen3, 64, 64, 1152, false},
    {kAvx512Intel, 64, 3136, 576, false},  {kAvx512Intel, 96, 1024, 1024, false},
    {kAvx512Intel, 128, 1536, 576, false}, {kAvx512Intel, 32, 3136, 1152, false},
    {kAvx512Intel, 16, 12544, 96, false},  {kAvx512Intel, 128, 12544, 64, false},
    {kAvx512Intel, 64, 784, 576, true},    {kAvx512Intel, 48, 784, 1152, true},
    {kAvx512Intel, 128, 784, 1152, true},
};

TEST(GemmOrientation, KeepsMeasuredChoices) {
  for (const Measured& c : kMeasured) {
    const GemmUkernel* row = nullptr;
    for (const GemmUkernel& r : GemmUkernels()) {
      if (std::strcmp(r.name, c.kernel) == 0) row = &r;
    }
    ASSERT_NE(row, nullptr) << c.kernel;
    EXPECT_EQ(PreferTransposed(*row, c.m, c.n, c.k, /*b_rows_plain=*/true,
                               /*a_prepacked=*/false),
              c.transposed)
        << c.kernel << " " << c.m << "x" << c.n << "x" << c.k;
  }
}

}  // namespace
}  // namespace kiln::gemm
