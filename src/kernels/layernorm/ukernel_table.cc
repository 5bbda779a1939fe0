#include "kernels/layernorm/ukernel_table.h"

#include <algorithm>

#include "kernels/ukernel_select.h"

namespace kiln::layernorm {
namespace {

using namespace ukernels;  // NOLINT: the table names every kernel

constexpr LayerNormUkernel kTable[] = {
    // name, isa, rsum, rsumsqdiff, vlayernorm
    {"scalar", IsaLevel::kScalar, f32_rsum__scalar, f32_rsumsqdiff__scalar, f32_vlayernorm__scalar},
    {"avx2", IsaLevel::kAvx2, f32_rsum__avx2, f32_rsumsqdiff__avx2, f32_vlayernorm__avx2},
    {"avx512", IsaLevel::kAvx512, f32_rsum__avx512, f32_rsumsqdiff__avx512, f32_vlayernorm__avx512},
};

static_assert(kernels::IsaRowsAreOrdered(kTable),
              "rows go oldest ISA first, and start at scalar");

}  // namespace

std::span<const LayerNormUkernel> LayerNormUkernels() { return kTable; }

const LayerNormUkernel& SelectLayerNormUkernel(IsaLevel cap) {
  return kernels::SelectByIsa<LayerNormUkernel>(kTable, cap);
}

}  // namespace kiln::layernorm
