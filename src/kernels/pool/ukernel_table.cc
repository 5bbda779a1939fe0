#include "kernels/pool/ukernel_table.h"

#include <algorithm>

#include "kernels/ukernel_select.h"

namespace kiln::pool {
namespace {

using namespace ukernels;  // NOLINT: the table names every kernel

constexpr PoolUkernel kTable[] = {
    // name, isa, maxpool, avgpool, gmaxpool, gavgpool, gavgpool_nchwc
    {"scalar", IsaLevel::kScalar, f32_maxpool2d__scalar, f32_avgpool2d__scalar,
     f32_gmaxpool__scalar, f32_gavgpool__scalar, f32_gavgpool_nchwc__scalar},
    {"avx2", IsaLevel::kAvx2, f32_maxpool2d__avx2, f32_avgpool2d__avx2, f32_gmaxpool__avx2,
     f32_gavgpool__avx2, f32_gavgpool_nchwc__avx2},
    {"avx512", IsaLevel::kAvx512, f32_maxpool2d__avx512, f32_avgpool2d__avx512,
     f32_gmaxpool__avx512, f32_gavgpool__avx512, f32_gavgpool_nchwc__avx512},
};

static_assert(kernels::IsaRowsAreOrdered(kTable),
              "rows go oldest ISA first, and start at scalar");

}  // namespace

std::span<const PoolUkernel> PoolUkernels() { return kTable; }

const PoolUkernel& SelectPoolUkernel(IsaLevel cap) {
  return kernels::SelectByIsa<PoolUkernel>(kTable, cap);
}

const PoolUkernel& SelectPool2dUkernel(IsaLevel cap, size_t out_w) {
  const PoolUkernel& k = SelectPoolUkernel(cap);
  if (k.isa == IsaLevel::kAvx512 && out_w <= 8) return SelectPoolUkernel(IsaLevel::kAvx2);
  return k;
}

}  // namespace kiln::pool
