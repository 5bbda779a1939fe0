#include "kernels/gemm/ukernel_table.h"

#include <algorithm>
#include <iterator>

namespace kiln::gemm {
namespace {

using namespace ukernels;  // NOLINT: the table names every kernel

constexpr size_t kAnyN = ~size_t{0};
// The 6x16 tile over rows of A in place runs up to ~15% slower than over a packed panel (hot
// tiles, K = 256..2304, Zen 5 at the AVX2 level: its six row streams), which pays where each
// A value serves few tiles: bench_gemm, KILN_ISA=avx2 against oneDNN at AVX2, 768x128x768 and
// 3072x128x768 0.85-0.95 -> 0.96-1.02 of oneDNN in place, but 256^3 0.85-0.89 packed against
// 0.79-0.84 in place.
constexpr size_t kAvx2RowsMaxN = 128;

constexpr GemmUkernel kTable[] = {
    // name, isa, mr, nr, gemm, gemv, pack_a, silu, hswish, gelu, vec, trans_k, a_rows,
    // a_rows_max_n, fused_pack_b, fused_pack_a, uarch
    {"f32_gemm_4x8__scalar", IsaLevel::kScalar, 4, 8, f32_gemm_4x8__scalar, f32_gemv__scalar,
     nullptr, f32_vsilu__scalar, f32_vhswish__scalar, f32_vgelu__scalar, 0, 0, false, 0},
    {"f32_gemm_6x16__avx2_fma", IsaLevel::kAvx2, 6, 16, f32_gemm_6x16__avx2_fma,
     f32_gemv__avx2_fma, f32_packa__avx2, f32_vsilu__avx2, f32_vhswish__avx2, f32_vgelu__avx2, 8,
     8, true, kAvx2RowsMaxN, true, true},
    {"f32_gemm_14x32__avx512f", IsaLevel::kAvx512, 14, 32, f32_gemm_14x32__avx512f,
     f32_gemv__avx512f, f32_packa__avx512f, f32_vsilu__avx512, f32_vhswish__avx512,
     f32_vgelu__avx512, 16, 8, true, kAnyN, true, false, Uarch::kOther},
    {"f32_gemm_14x32__avx512f_zen4", IsaLevel::kAvx512, 14, 32, f32_gemm_14x32__avx512f_zen4,
     f32_gemv__avx512f, f32_packa__avx512f, f32_vsilu__avx512, f32_vhswish__avx512,
     f32_vgelu__avx512, 16, 8, true, kAnyN, true, false, Uarch::kZen4},
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
