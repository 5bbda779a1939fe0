#include "kernels/conv/conv_ukernels.h"

namespace kiln::conv {
namespace {

constexpr ConvNchwcUkernel kTable[] = {
    {"f32_conv_nchwc8__scalar", IsaLevel::kScalar, 8, 2, ukernels::f32_conv_nchwc8__scalar},
    {"f32_conv_nchwc8__avx2_fma", IsaLevel::kAvx2, 8, 2, ukernels::f32_conv_nchwc8__avx2_fma},
    {"f32_conv_nchwc16__avx512f", IsaLevel::kAvx512, 16, 2, ukernels::f32_conv_nchwc16__avx512f},
};

}  // namespace

std::span<const ConvNchwcUkernel> ConvNchwcUkernels() { return kTable; }

const ConvNchwcUkernel& SelectConvNchwcUkernel(IsaLevel cap) {
  const IsaLevel isa = cap < ActiveIsa() ? cap : ActiveIsa();
  const ConvNchwcUkernel* best = &kTable[0];
  for (const ConvNchwcUkernel& row : kTable) {
    if (row.isa <= isa) best = &row;
  }
  return *best;
}

}  // namespace kiln::conv
