// The tables of the conv microkernels (direct NCHWc, grouped rows); dispatch and tests read them.
#pragma once

#include <span>

#include "kernels/ukernels/f32_conv.h"
#include "kernels/ukernels/f32_gconv.h"
#include "support/cpu.h"

namespace kiln::conv {

struct ConvNchwcUkernel {
  const char* name;
  IsaLevel isa;
  size_t block;  // c of NCHWc
  size_t max_oc_blocks;
  ukernels::F32ConvNchwcFn fn;
  // Output columns of one register tile with max_oc_blocks blocks (twice as many with one);
  // the driver cuts a row into tiles of equal width when none is narrower than tile_min (twice
  // that with one block), since the microkernel's own cut (whole tiles, then the remainder)
  // leaves a narrow last tile: FMA-latency-bound, and streaming all the weights for a few
  // columns. 0: no cut.
  size_t tile = 0, tile_min = 0;
  // Output channel blocks of one call on a 1x1 over pixels, where the whole layer is one row and
  // a taller tile (AVX-512: 4 blocks x 6 columns) loads fewer weights and broadcasts per FMA;
  // 0: max_oc_blocks. Tiles with nob blocks are tile * max_oc_blocks / nob columns wide.
  size_t pointwise_oc_blocks = 0;
  // The same for the rows of every other layer (3x3 and the like); 0: max_oc_blocks.
  size_t conv_oc_blocks = 0;
  // Nonzero: on a 1x1 over pixels in calls of 2 blocks, an odd count of blocks leads with one
  // call of this many instead of ending with a lone block (see BlockGroups).
  size_t odd_lead_blocks = 0;
  // Whether the microkernel cuts a row evenly itself (F32ConvNchwcParams::even_cut), so that the
  // driver's equal cut of a run with the same taps is one call.
  bool even_cut = false;
  // Nonzero: a call on a 1x1 over pixels runs in passes over at most this many input blocks
  // (direct_nchwc::CallInPasses) on cores with an L1d of at most 32 KiB; 0: all of them in one
  // pass.
  size_t pointwise_ic_blocks = 0;
  // Whether those passes run only where the layer's input plane is larger than L2, and then at
  // most two (passes of half the input blocks where that is more than pointwise_ic_blocks).
  bool pointwise_passes_past_l2 = false;
  // Whether those passes run on any L1d, wherever a call's weights (its output blocks over all
  // the input channels) are larger than the L1d, each pass then over a third of the L1d's worth
  // of them (pointwise_ic_blocks unused); the rule above still holds for the others.
  bool pointwise_passes_past_l1 = false;
  // Whether the taller calls of a 1x1 over pixels (pointwise_oc_blocks) run only where their
  // weights fit in half of the L1d; past that, calls of max_oc_blocks load half the weights per
  // FMA (a weight vector serves twice the columns) from where they stream, L2.
  bool pointwise_tall_in_half_l1 = false;
  // kOther: any core of the ISA; otherwise a variant of the general row before it (same
  // microkernel and block), chosen on that core only.
  Uarch uarch = Uarch::kOther;
};

// Rows from the oldest ISA to the newest.
std::span<const ConvNchwcUkernel> ConvNchwcUkernels();

// The newest row whose ISA is at most `cap` (and at most ActiveIsa()), this core's variant of
// it where the table has one.
const ConvNchwcUkernel& SelectConvNchwcUkernel(IsaLevel cap);

// The grouped-convolution microkernels (kGroupedDirect).
struct GConvUkernel {
  const char* name;
  IsaLevel isa;
  size_t chunk;  // output indices per step: x is read up to count rounded up to it
  ukernels::F32GConvFn fn;
  ukernels::F32Deinterleave2Fn deinterleave2;  // the copy of a stride-2 layer's input rows
};
std::span<const GConvUkernel> GConvUkernels();
const GConvUkernel& SelectGConvUkernel(IsaLevel cap);

}  // namespace kiln::conv
