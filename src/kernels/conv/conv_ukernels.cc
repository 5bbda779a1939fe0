#include "kernels/conv/conv_ukernels.h"

namespace kiln::conv {
namespace {

constexpr ConvNchwcUkernel kAvx512Row = {
    "f32_conv_nchwc16__avx512f", IsaLevel::kAvx512, 16, 2, ukernels::f32_conv_nchwc16__avx512f,
    12, 4, 4, 3, 0, true, 8, true};

// On the Intel Xeon (48 KiB L1d, 2 MiB L2) a 4-block call whose weights pass the L1d (over 192
// input channels) streams them from L2 for every 6-column tile, and trailed oneDNN by 15-25%;
// passes of 4 input blocks (16 KiB of weights, which stay in L1 over the chunk) closed most of
// it. bench_conv --blocked, 1 thread, two alternating runs, kiln/oneDNN, one pass -> passes of
// 4: ResNet-50 256->64 at 56x56 0.83 / 0.83 -> 0.94 / 0.94, 512->128 at 28x28 0.78 / 0.77 ->
// 0.91 / 0.91, 512->256 0.77 / 0.77 -> 0.92 / 0.89, 1024->256 at 14x14 0.85 / 0.85 -> 0.92 /
// 0.91, 1024->2048 s2 0.77 / 0.76 -> 0.91 / 0.89, 2048->512 at 7x7 0.85 / 0.73 -> 0.90 / 0.90,
// DenseNet 992->128 at 14x14 0.84 / 0.85 -> 0.90 / 0.89. Under that size they cost (weights in
// L1 already): MobileNetV2 96->576 at 14x14 0.96 / 0.96 -> 0.89 / 0.93, 144->32 at 28x28 1.00
// / 1.00 -> 0.94 / 0.88. Binaries without and with the rule, three alternating runs, medians:
// geomean over the 59 1x1 layers 0.936 -> 0.951; just past the L1d some lose a little
// (256->1024 at 14x14 0.99 -> 0.95, DenseNet 224->128 at 56x56 0.99 -> 0.96), and a bound at
// twice the L1d (or the L1d over a plane past L2) traded those for others (MobileNetV2
// 320->1280 at 7x7 0.95 -> 0.91): geomean level, so the simpler rule stays.
// Its 4 x 6 pointwise tiles, where their weights pass half the L1d (over 96 input channels),
// lost to the 2 x 12 ones, which load a weight vector per 12 FMAs instead of 6: two runs each,
// all 1x1 layers in 2-block calls against the usual choice, kiln/oneDNN geomean 0.959 ->
// 0.971; DenseNet 256->128 at 14x14 0.88-0.90 -> 0.99, ResNet-50 1024->256 at 14x14 0.92 ->
// 0.97, 2048->512 at 7x7 0.88 -> 0.92-0.96, DenseNet 128->128 at 28x28 0.92-0.93 -> 0.99; but
// on short K the 4 x 6 tiles stay ahead (MobileNetV2 16->96 at 112x112 1.15-1.20 -> 1.03-1.07,
// EfficientNet 112->672 at 14x14 0.98 -> 0.91-0.96). Then, in 2-block calls, passes of 8 input
// blocks (16 KiB of weights, as 4 blocks were in 4-block calls) beat 4 and 16: two runs each,
// 4 -> 8, 512->128 at 28x28 0.89 / 0.89 -> 0.97 / 0.93, DenseNet 992->128 at 14x14 0.94 / 0.94
// -> 0.97 / 0.97, MobileNetV2 576->96 at 14x14 0.87 / 0.93 -> 0.97 / 0.95; 2048->512 at 7x7
// 0.95 / 0.91 -> 0.91 / 0.91. Hence a pass's weights: a third of the L1d.
constexpr ConvNchwcUkernel IntelAvx512Variant(ConvNchwcUkernel row) {
  row.name = "f32_conv_nchwc16__avx512f_intel";
  row.pointwise_ic_blocks = 0;  // sized from the L1d (pointwise_passes_past_l1)
  row.pointwise_passes_past_l2 = false;
  row.pointwise_passes_past_l1 = true;
  row.pointwise_tall_in_half_l1 = true;
  row.uarch = Uarch::kIntelAvx512;
  return row;
}

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
    // The same passes on Zen 4 (32 KiB L1d), but only over an input plane larger than L2, and at
    // most two. bench_conv --blocked, 1 thread, alternating runs, kiln/oneDNN median/best, one
    // pass -> passes of 8: ResNet-50's 256->64 at 56x56 0.80-0.99/0.79-1.00 -> 1.00-1.04/
    // 0.99-1.03, DenseNet's 224->128 at 56x56 0.98-1.06/0.98-1.04 -> 1.07-1.08/1.05-1.06; over
    // planes from L2 they cost: 1024->256 at 14x14 1.00 -> 0.98, MobileNetV2's 960->160 at 7x7
    // 0.99-1.00 -> 0.97. On the 28x28 planes past L2 (512 channels: 32 blocks) 4 passes of 8
    // read 0.98-1.01 against 1.00-1.02, 2 passes of 16 1.00-1.01. With a memory copy loop
    // on the other core (taskset; the host's noise is like it), two alternating runs, one pass
    // -> at most two: 256->64 at 56x56 0.85-0.87 -> 1.04-1.09, 256->128 0.92-1.05 -> 1.06-1.10,
    // 224->128 1.05 -> 1.09-1.10, 512->128 at 28x28 1.01 -> 1.02.
    kAvx512Row,
    IntelAvx512Variant(kAvx512Row),
};

// A row's variants follow it, with its ISA and block; the general rows go oldest ISA first.
constexpr bool RowsAreOrdered() {
  for (size_t i = 1; i < std::size(kTable); ++i) {
    const ConvNchwcUkernel &prev = kTable[i - 1], &row = kTable[i];
    if (row.uarch != Uarch::kOther ? row.isa != prev.isa || row.block != prev.block
                                   : row.isa <= prev.isa) {
      return false;
    }
  }
  return kTable[0].uarch == Uarch::kOther;
}
static_assert(RowsAreOrdered(), "rows go oldest ISA first, variants follow their row");

// chunk: the vectors of pixels per channel times their width (NV x width).
constexpr GConvUkernel kGConvTable[] = {
    {"f32_gconv__scalar", IsaLevel::kScalar, 4, ukernels::f32_gconv__scalar,
     ukernels::f32_deinterleave2__scalar},
    {"f32_gconv__avx2_fma", IsaLevel::kAvx2, 8, ukernels::f32_gconv__avx2_fma,
     ukernels::f32_deinterleave2__avx2_fma},
    {"f32_gconv__avx512f", IsaLevel::kAvx512, 32, ukernels::f32_gconv__avx512f,
     ukernels::f32_deinterleave2__avx512f},
};

// The last row at most `cap` (and ActiveIsa()): a table with core variants (rows with a uarch)
// takes this core's variant of its general row where there is one.
template <class Row>
const Row& Newest(std::span<const Row> table, IsaLevel cap) {
  const IsaLevel isa = cap < ActiveIsa() ? cap : ActiveIsa();
  const Row* best = &table[0];
  for (const Row& row : table) {
    bool here = true;
    if constexpr (requires { row.uarch; }) {
      here = row.uarch == Uarch::kOther || row.uarch == GetCpuInfo().uarch;
    }
    if (row.isa <= isa && here) best = &row;
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
