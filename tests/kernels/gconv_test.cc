// The grouped-convolution microkernel table's row copy (f32_deinterleave2): every ISA level the
// machine has splits rows of every width from 0 to 80 (whole vectors of 8 and 16 pairs, an odd
// last float, the scalar tail) exactly, reading and writing only the rows' own floats (buffers
// of the exact sizes, for the sanitizer build). The convolutions that use it are in conv_test.cc.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>

#include "kernels/conv/conv_ukernels.h"
#include "support/cpu.h"

namespace kiln::conv {
namespace {

TEST(GConvUkernels, Deinterleave2SplitsEveryWidth) {
  for (const GConvUkernel& row : GConvUkernels()) {
    if (row.isa > ActiveIsa()) continue;
    for (size_t w = 0; w <= 80; ++w) {
      // Heap blocks of the exact sizes: an over-read or over-write is a sanitizer error.
      std::unique_ptr<float[]> src(new float[w]);
      std::unique_ptr<float[]> even(new float[(w + 1) / 2]), odd(new float[w / 2]);
      for (size_t i = 0; i < w; ++i) src[i] = static_cast<float>(i) * 0.5f - 3.0f;
      row.deinterleave2(w, src.get(), even.get(), odd.get());
      for (size_t i = 0; i < (w + 1) / 2; ++i) {
        ASSERT_EQ(even[i], src[2 * i]) << row.name << " w=" << w << " even " << i;
      }
      for (size_t i = 0; i < w / 2; ++i) {
        ASSERT_EQ(odd[i], src[2 * i + 1]) << row.name << " w=" << w << " odd " << i;
      }
    }
  }
}

}  // namespace
}  // namespace kiln::conv
