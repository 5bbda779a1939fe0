#include "kernels/layernorm/ukernel_table.h"

#include <algorithm>

namespace kiln::layernorm {
namespace {

using namespace ukernels;  // NOLINT: the table names every kernel

constexpr LayerNormUkernel kTable[] = {
    // name, isa, rsum, rsumsqdiff, vlayernorm
    {"scalar", IsaLevel::kScalar, f32_rsum__scalar, f32_rsumsqdiff__scalar, f32_vlayernorm__scalar},
    {"avx2", IsaLevel::kAvx2, f32_rsum__avx2, f32_rsumsqdiff__avx2, f32_vlayernorm__avx2},
    {"avx512", IsaLevel::kAvx512, f32_rsum__avx512, f32_rsumsqdiff__avx512, f32_vlayernorm__avx512},
};

constexpr bool TableIsWellFormed() {
  for (size_t i = 1; i < std::size(kTable); ++i) {
    if (kTable[i].isa <= kTable[i - 1].isa) return false;
  }
  return kTable[0].isa == IsaLevel::kScalar;
}
static_assert(TableIsWellFormed(), "rows go oldest ISA first, and start at scalar");

}  // namespace

std::span<const LayerNormUkernel> LayerNormUkernels() { return kTable; }

const LayerNormUkernel& SelectLayerNormUkernel(IsaLevel cap) {
  cap = std::min(cap, ActiveIsa());
  const LayerNormUkernel* best = &kTable[0];
  for (const LayerNormUkernel& row : kTable) {
    if (row.isa <= cap) best = &row;
  }
  return *best;
}

}  // namespace kiln::layernorm
