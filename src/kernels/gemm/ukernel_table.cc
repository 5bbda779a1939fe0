#include "kernels/gemm/ukernel_table.h"

#include <algorithm>

#include "kernels/ukernel_select.h"

namespace kiln::gemm {
namespace {

using namespace ukernels;  // NOLINT: the table names every kernel

constexpr GemmUkernel kTable[] = {
    // name, isa, mr, nr, gemm, gemv, pack_a, silu, hswish, gelu, vec, trans_k, a_rows
    {"f32_gemm_4x8__scalar", IsaLevel::kScalar, 4, 8, f32_gemm_4x8__scalar, f32_gemv__scalar,
     nullptr, f32_vsilu__scalar, f32_vhswish__scalar, f32_vgelu__scalar, 0, 0, false},
    {"f32_gemm_6x16__avx2_fma", IsaLevel::kAvx2, 6, 16, f32_gemm_6x16__avx2_fma,
     f32_gemv__avx2_fma, f32_packa__avx2, f32_vsilu__avx2, f32_vhswish__avx2, f32_vgelu__avx2, 8,
     24, false},
    {"f32_gemm_14x32__avx512f", IsaLevel::kAvx512, 14, 32, f32_gemm_14x32__avx512f,
     f32_gemv__avx512f, f32_packa__avx512f, f32_vsilu__avx512, f32_vhswish__avx512,
     f32_vgelu__avx512, 16, 8, true},
};

static_assert(kernels::IsaRowsAreOrdered(kTable),
              "rows go oldest ISA first, and start at scalar");

}  // namespace

std::span<const GemmUkernel> GemmUkernels() { return kTable; }

const GemmUkernel& SelectGemmUkernel(IsaLevel cap) {
  return kernels::SelectByIsa<GemmUkernel>(kTable, cap);
}

}  // namespace kiln::gemm
