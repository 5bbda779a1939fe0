#include "kernels/conv/conv_ukernels.h"

namespace kiln::conv {
namespace {

constexpr ConvNchwcUkernel kTable[] = {
    {"f32_conv_nchwc8__scalar", IsaLevel::kScalar, 8, 2, ukernels::f32_conv_nchwc8__scalar},
    // Passes of 8 input blocks on a 1x1 over pixels (CallInPasses): bench_conv --blocked, 1
    // thread, Zen 3, against oneDNN, one pass -> passes of 8 (medians of rounds; the host swung
    // by 10% between runs): ResNet-50's 256->64 at 56x56 0.52-0.72 -> 0.80-1.06, 512->128 at
    // 28x28 0.59-0.66 -> 0.96-0.97, 1024->256 at 14x14 0.63-0.65 -> 0.90-0.95, 2048->512 at
    // 7x7 0.68-0.69 -> 0.74-0.94; passes of 4 and 16 did no better. On Zen 5 (48 KiB L1d) they
    // cost (see direct_nchwc.cc), so the driver applies them only on an L1d of at most 32 KiB.
    {"f32_conv_nchwc8__avx2_fma", IsaLevel::kAvx2, 8, 2, ukernels::f32_conv_nchwc8__avx2_fma, 6, 4,
     0, 3, 3, true, 8},
    {"f32_conv_nchwc16__avx512f", IsaLevel::kAvx512, 16, 2, ukernels::f32_conv_nchwc16__avx512f, 12, 4,
     4, 3},
};

// chunk: the vectors of pixels per channel times their width (NV x width).
constexpr GConvUkernel kGConvTable[] = {
    {"f32_gconv__scalar", IsaLevel::kScalar, 4, ukernels::f32_gconv__scalar,
     ukernels::f32_deinterleave2__scalar},
    {"f32_gconv__avx2_fma", IsaLevel::kAvx2, 8, ukernels::f32_gconv__avx2_fma,
     ukernels::f32_deinterleave2__avx2_fma},
    {"f32_gconv__avx512f", IsaLevel::kAvx512, 32, ukernels::f32_gconv__avx512f,
     ukernels::f32_deinterleave2__avx512f},
};

template <class Row>
const Row& Newest(std::span<const Row> table, IsaLevel cap) {
  const IsaLevel isa = cap < ActiveIsa() ? cap : ActiveIsa();
  const Row* best = &table[0];
  for (const Row& row : table) {
    if (row.isa <= isa) best = &row;
  }
  return *best;
}

}  // namespace

std::span<const ConvNchwcUkernel> ConvNchwcUkernels() { return kTable; }

const ConvNchwcUkernel& SelectConvNchwcUkernel(IsaLevel cap) {
  return Newest<ConvNchwcUkernel>(kTable, cap);
}

std::span<const GConvUkernel> GConvUkernels() { return kGConvTable; }

const GConvUkernel& SelectGConvUkernel(IsaLevel cap) {
  return Newest<GConvUkernel>(kGConvTable, cap);
}

}  // namespace kiln::conv
