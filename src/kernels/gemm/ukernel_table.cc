#include "kernels/gemm/ukernel_table.h"

#include <algorithm>
#include <iterator>

namespace kiln::gemm {
namespace {

using namespace ukernels;  // NOLINT: the table names every kernel

constexpr GemmUkernel kTable[] = {
    // name, isa, mr, nr, gemm, gemv, pack_a, silu, hswish, gelu, vec, trans_k, a_rows, uarch
    {"f32_gemm_4x8__scalar", IsaLevel::kScalar, 4, 8, f32_gemm_4x8__scalar, f32_gemv__scalar,
     nullptr, f32_vsilu__scalar, f32_vhswish__scalar, f32_vgelu__scalar, 0, 0, false},
    {"f32_gemm_6x16__avx2_fma", IsaLevel::kAvx2, 6, 16, f32_gemm_6x16__avx2_fma,
     f32_gemv__avx2_fma, f32_packa__avx2, f32_vsilu__avx2, f32_vhswish__avx2, f32_vgelu__avx2, 8,
     8, true},
    {"f32_gemm_14x32__avx512f", IsaLevel::kAvx512, 14, 32, f32_gemm_14x32__avx512f,
     f32_gemv__avx512f, f32_packa__avx512f, f32_vsilu__avx512, f32_vhswish__avx512,
     f32_vgelu__avx512, 16, 8, true, Uarch::kOther},
    {"f32_gemm_14x32__avx512f_zen4", IsaLevel::kAvx512, 14, 32, f32_gemm_14x32__avx512f_zen4,
     f32_gemv__avx512f, f32_packa__avx512f, f32_vsilu__avx512, f32_vhswish__avx512,
     f32_vgelu__avx512, 16, 8, true, Uarch::kZen4},
};

// ISA levels never go down, start at scalar, and a variant follows a general row of its ISA
// with the same tile (packed operands are laid out for MR and NR, whichever row packed them).
constexpr bool RowsAreOrdered() {
  if (kTable[0].isa != IsaLevel::kScalar || kTable[0].uarch != Uarch::kOther) return false;
  for (size_t i = 1; i < std::size(kTable); ++i) {
    const GemmUkernel &prev = kTable[i - 1], &row = kTable[i];
    if (row.uarch != Uarch::kOther ? row.isa != prev.isa || row.mr != prev.mr || row.nr != prev.nr
                                   : row.isa <= prev.isa) {
      return false;
    }
  }
  return true;
}
static_assert(RowsAreOrdered(), "rows go oldest ISA first, start at scalar, variants follow");

}  // namespace

std::span<const GemmUkernel> GemmUkernels() { return kTable; }

const GemmUkernel& SelectGemmUkernel(IsaLevel cap) {
  cap = std::min(cap, ActiveIsa());
  const Uarch uarch = GetCpuInfo().uarch;
  const GemmUkernel* best = &kTable[0];
  for (const GemmUkernel& row : kTable) {
    if (row.isa > cap) break;
    if (row.uarch == Uarch::kOther || row.uarch == uarch) best = &row;
  }
  return *best;
}

}  // namespace kiln::gemm
