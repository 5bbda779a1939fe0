#include "kernels/softmax/ukernel_table.h"

#include <algorithm>

#include "kernels/ukernel_select.h"

namespace kiln::softmax {
namespace {

using namespace ukernels;  // NOLINT: the table names every kernel

constexpr SoftmaxUkernel kTable[] = {
    // name, isa, rmax, raddexpminusmax, raddstoreexpminusmax, vscale, vaddc
    {"scalar", IsaLevel::kScalar, f32_rmax__scalar, f32_raddexpminusmax__scalar,
     f32_raddstoreexpminusmax__scalar, f32_vscale__scalar, f32_vbinaryc_add__scalar},
    {"avx2", IsaLevel::kAvx2, f32_rmax__avx2, f32_raddexpminusmax__avx2,
     f32_raddstoreexpminusmax__avx2, f32_vscale__avx2, f32_vbinaryc_add__avx2},
    {"avx512", IsaLevel::kAvx512, f32_rmax__avx512, f32_raddexpminusmax__avx512,
     f32_raddstoreexpminusmax__avx512, f32_vscale__avx512, f32_vbinaryc_add__avx512},
};

static_assert(kernels::IsaRowsAreOrdered(kTable),
              "rows go oldest ISA first, and start at scalar");

}  // namespace

std::span<const SoftmaxUkernel> SoftmaxUkernels() { return kTable; }

const SoftmaxUkernel& SelectSoftmaxUkernel(IsaLevel cap) {
  return kernels::SelectByIsa<SoftmaxUkernel>(kTable, cap);
}

}  // namespace kiln::softmax
