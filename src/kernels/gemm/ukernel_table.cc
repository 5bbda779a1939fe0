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

// trans_pack_a, fitted on Zen 5 (1 thread, each product timed in both orientations, medians of
// 15-21 interleaved rounds): with it PreferTransposed misses the faster one on 2 of 17 products
// at AVX2 (16 without; the normal product was 7-73% faster on 512x49x4608, 49x512x2048,
// 512x7x4608, 64x64x1152, 3072x7x576) and on 3 of 18 at AVX-512 (10 without: 64x64x1152 and
// 32x32x2304 12-17% faster normal), a product within 1.5% either way counting as no miss; the
// misses are within 6% but for 128x512x1152 at AVX2 (transposed 22% slower). A charge twice as
// large at AVX-512 sent 256x4x2304, 3072x7x576 and 2048x49x576 to the normal product, 7-26%
// slower there.
constexpr size_t kAvx2TransPackA = 16, kAvx512TransPackA = 8;
// trans_alias_bytes: at AVX2 every product measured with M <= 128 (B^T read in place) and B's
// rows a multiple of 4 KiB apart ran faster normal, 18 of them, 1 thread, medians of 15
// interleaved rounds: 24x1024x1024 1.99x, 64x1024x1024 1.56x, 100x2048x576 1.52x, 128x2048x512
// 1.43x, 128x3072x768 1.44x, 32x4096x256 1.24x, 16x1024x384 and 32x1024x384 1.10x,
// 32x2048x256 1.06x; 2 threads 24x1024x1024 1.87x, 96x1024x576 1.31x. Not at 2 KiB: rows of
// 1536 floats ran 1.04-1.17x faster transposed (32x1536x384, 32x1536x768, 48x1536x384), rows of
// 512 1.12-1.20x faster normal (128x512x1152, 32x512x2304: the model's misses). At AVX-512
// no such rule holds: 4 KiB rows ran 1.05-1.46x faster normal on 10 of 13 products, but
// 32x1024x1024 and 32x4096x256 1.05x and 1.58x faster transposed.
constexpr size_t kAvx2TransAliasBytes = 4096;

// trans_in_place_extra on Zen 3 (32 KiB L1d, 512 KiB L2): the general row, fitted on Zen 5 at
// the AVX2 level, sent 15 of 30 products to the transposed product reading B^T in place where
// the normal one ran faster (1 thread, medians of 11 interleaved rounds, normal / transposed:
// 64x3136x576 1.21, 64x1568x1152 1.38, 48x784x1152 1.34, 100x1000x1000 1.25, 128x512x1152
// 1.21, 24x3136x144 1.18, 128x784x1152 1.07). With the transposed one charged 30% more it misses
// 4 of 30, by 5% at most (32x100x2304 1.05x faster transposed); 16x784x576 and 16x12544x96
// stay transposed (1.04-1.05x faster there). 25% missed 24x3136x144 (1.18), 40% 16x12544x96.
constexpr double kZen3TransInPlaceExtra = 0.3;

constexpr GemmUkernel kAvx2Row = {
    "f32_gemm_6x16__avx2_fma", IsaLevel::kAvx2, 6, 16, f32_gemm_6x16__avx2_fma,
    f32_gemv__avx2_fma, f32_packa__avx2, f32_vsilu__avx2, f32_vhswish__avx2, f32_vgelu__avx2, 8,
    8, kAvx2TransPackA, kAvx2TransAliasBytes, true, kAvx2RowsMaxN, true, true};

// The same kernels and costs but for the charge above, so the two rows cannot drift apart.
constexpr GemmUkernel Zen3Variant(GemmUkernel row) {
  row.name = "f32_gemm_6x16__avx2_fma_zen3";
  row.uarch = Uarch::kZen3;
  row.trans_in_place_extra = kZen3TransInPlaceExtra;
  return row;
}

constexpr GemmUkernel kAvx512Row = {
    "f32_gemm_14x32__avx512f", IsaLevel::kAvx512, 14, 32, f32_gemm_14x32__avx512f,
    f32_gemv__avx512f, f32_packa__avx512f, f32_vsilu__avx512, f32_vhswish__avx512,
    f32_vgelu__avx512, 16, 8, kAvx512TransPackA, 0, true, kAnyN, true, false, Uarch::kOther};

// Zen 4's tile takes A as an FMA's embedded broadcast ({1to16}; f32_gemm_14x32__avx512f.cc says
// why); the rest of the row is the general one's, so the two cannot drift apart.
constexpr GemmUkernel Zen4Variant(GemmUkernel row) {
  row.name = "f32_gemm_14x32__avx512f_zen4";
  row.gemm = f32_gemm_14x32__avx512f_zen4;
  row.uarch = Uarch::kZen4;
  return row;
}

// On the Sapphire Rapids-class Xeon (the only Intel part measured), the 14x32 tile lost where it
// read plain B in place for more than one row of tiles, rows of whole lines that stay in L1 on
// Zen 4/5: bench_gemm, 1 thread, kiln/oneDNN, medians of 5 interleaved runs, in place ->
// packed: 256^3 0.86 -> 0.95, 128x256x256 0.89 -> 0.97, 768x128x768 0.92 -> 0.95, 3072x128x768
// 0.84 -> 0.90, 256x784x256 0.84 -> 0.90, 64x3136x64 0.73 -> 0.82 (the transposed products
// level). And with B packed, the normal product beat the transposed one reading B^T in place
// wherever B's rows lie a page or more apart (a row of B^T per k step, each on its own page):
// medians of 4 runs, normal / transposed, 64x3136x576 0.80 / 0.71, 32x12544x288 0.76 / 0.57,
// 96x1024x1024 1.12 / 0.93, 128x1536x576 1.00 / 0.92, 32x3136x1152 0.89 / 0.73, 16x12544x96
// 0.72 / 0.65, 128x12544x64 0.67 / 0.28; level at 64x2048x512 and 128x3136x256; only
// 64x1024x576 slower (0.86 / 0.89). Under a page the transposed one stays ahead: 64x784x576
// 0.94 / 1.00, 48x784x1152 0.93 / 0.99, 128x784x1152 0.86 / 0.97.
// And its tiles stream A and B from L2 badly together (as the 1x1 convolutions' 4 x 6 tiles
// stream their weights: conv_ukernels.cc): blocked with A's panel in L1 (a_panel_in_l1), bench_gemm
// kiln/best, 1 thread, three alternating runs: 1024^3 0.90-0.91 -> 0.98-1.02, 256x196x2304 0.94-
// 0.95 -> 1.03, 128x784x1152 0.89-0.90 -> 1.00-1.01 (level in a later, slower phase of the
// host), 512^3 1.00-1.03 -> 1.06; two more: 2048x512x512 1.01-1.04 -> 1.07-1.08, 256x1024x1024
// 0.85-0.86 -> 0.92. Where each block of B serves few tiles it lost, hence run.cc's bounds:
// 64x3136x576 (5 row tiles) 0.95-0.96 -> 0.86-0.90, 256^3 (B's panel of K = 256 fits L1
// already) 1.07-1.08 -> 1.03-1.05, 768x128x768 (4 panels) 0.95 -> 0.92; and on 2 threads
// sharing B's packing (RunSharedB), whose panels cross between the cores, 1024x256x1024
// 0.90-0.99 -> 0.88.
constexpr GemmUkernel IntelAvx512Variant(GemmUkernel row) {
  row.name = "f32_gemm_14x32__avx512f_intel";
  row.uarch = Uarch::kIntelAvx512;
  row.b_in_place = false;
  row.trans_far_rows_bytes = 4096;
  row.a_panel_in_l1 = true;
  return row;
}

constexpr GemmUkernel kTable[] = {
    // name, isa, mr, nr, gemm, gemv, pack_a, silu, hswish, gelu, vec, trans_k, trans_pack_a,
    // trans_alias_bytes, a_rows, a_rows_max_n, fused_pack_b, fused_pack_a, uarch,
    // trans_in_place_extra, b_in_place, trans_far_rows_bytes
    {"f32_gemm_4x8__scalar", IsaLevel::kScalar, 4, 8, f32_gemm_4x8__scalar, f32_gemv__scalar,
     nullptr, f32_vsilu__scalar, f32_vhswish__scalar, f32_vgelu__scalar, 0, 0, 0, 0, false,
     0},
    kAvx2Row,
    Zen3Variant(kAvx2Row),
    kAvx512Row,
    Zen4Variant(kAvx512Row),
    IntelAvx512Variant(kAvx512Row),
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
