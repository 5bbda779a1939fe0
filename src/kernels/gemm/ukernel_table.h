// The one table of f32 GEMM microkernels: dispatch, tests and benchmarks all read it.
#pragma once

#include <cstddef>
#include <span>

#include "kernels/ukernels/f32_gemm.h"
#include "kernels/ukernels/f32_hot.h"
#include "support/cpu.h"

namespace kiln::gemm {

struct GemmUkernel {
  const char* name;
  IsaLevel isa;
  size_t mr;
  size_t nr;
  ukernels::F32GemmFn gemm;
  ukernels::F32GemvFn gemv;  // N == 1
  ukernels::F32PackAFn pack_a;  // plain A into a panel; null: the portable packing
  // Activations applied to finished tiles: the elementwise kernels of the same ISA (their
  // F32UnaryParams are unused; pass null).
  ukernels::F32VUnaryParamFn silu;
  ukernels::F32VUnaryParamFn hswish;
  ukernels::F32VUnaryParamFn gelu;
  // Lanes of one vector register (0: none; the driver then never transposes a product, as there
  // are no lanes to fill).
  size_t vec;
  // The transposed tile store (F32GemmTileParams::trans_c) costs about this many k steps of the
  // full tile (14x32: ~64 shuffles per 16 columns over 28 FMA cycles per k; 6x16: 24 shuffles
  // and 8 narrow stores per 8 columns over 6 cycles per k).
  size_t trans_k;
  // What the transposed product of plain operands pays to pack B' = A^T through the transposing
  // packer, in multiply-add lanes of a tile per element of A (gemm.cc, PreferTransposed).
  size_t trans_pack_a;
  // Nonzero: the transposed product of plain operands is not chosen where it would read B^T in
  // place (a row of B per k step) with B's rows a multiple of this many bytes apart, whose lines
  // then crowd a few L1 sets (gemm.cc, PreferTransposed).
  size_t trans_alias_bytes;
  // Whether the microkernel reads A in place row by row (F32GemmTileParams::a_rows).
  bool a_rows;
  // The widest N (columns of C) for which the driver has it do so (run.cc, RowsInPlace).
  size_t a_rows_max_n;
  // Whether the microkernel packs the rows of plain B it reads in place
  // (F32GemmTileParams::pack_b), so that the driver's B packing rides on the first tile of
  // each panel (run.cc, FusesPackB).
  bool fused_pack_b = false;
  // The same for A (F32GemmTileParams::pack_a): the first tile on each row panel reads plain A
  // row by row in place and packs it for the others (run.cc, FusesPackA).
  bool fused_pack_a = false;
  // kOther: the ISA's general row. Otherwise a variant of the row before it (same ISA, MR and
  // NR) tuned for this microarchitecture, chosen there instead of it.
  Uarch uarch = Uarch::kOther;
  // What the transposed product of plain operands pays, as a fraction of its multiply-adds, for
  // reading B^T in place (a row of B per k step) on this microarchitecture (gemm.cc,
  // PreferTransposed).
  double trans_in_place_extra = 0.0;
  // Whether the driver may read plain B in place, unpacked, for more than one row of tiles
  // (run.cc, ReadBInPlace); false: it packs B there.
  bool b_in_place = true;
  // Nonzero: where B's rows lie at least this many bytes apart, plain operands run the normal
  // product rather than the transposed one reading B^T in place (gemm.cc, PreferTransposed).
  size_t trans_far_rows_bytes = 0;
  // Whether the normal product of a thread that packs its own B blocks M by one tile, K so that
  // the tile's A panel stays in L1, and N so that the packed B block stays in L2 (run.cc,
  // ChooseBlocking): the tile then streams only B from L2, not A as well.
  bool a_panel_in_l1 = false;
};

// Rows from the oldest ISA to the newest, each ISA's variants after its general row.
std::span<const GemmUkernel> GemmUkernels();

// The newest ISA's row at most `cap` (and at most ActiveIsa()): its variant for this CPU's
// cores where the table has one, else its general row.
const GemmUkernel& SelectGemmUkernel(IsaLevel cap);
inline const GemmUkernel& SelectGemmUkernel() { return SelectGemmUkernel(ActiveIsa()); }

}  // namespace kiln::gemm
