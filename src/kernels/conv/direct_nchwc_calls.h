// Internal to kDirectNchwc (direct_nchwc.cc): how a layer's output channel blocks and output
// rows split into microkernel calls. Not part of the library's interface.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <utility>

#include "kernels/conv/conv.h"
#include "kernels/conv/conv_ukernels.h"
#include "support/cpu.h"

namespace kiln::conv::direct_nchwc {

// How a layer's mb_n output blocks split into the groups that one microkernel call computes:
// `lead` groups of lead_size blocks, then groups of g (the last one may be short).
struct BlockGroups {
  size_t mb_n = 0, g = 1, lead = 0, lead_size = 0, count = 0;

  // half_last: the last block holds at most half a block of real channels. even: a remainder
  // narrower than g - 1 leads as groups of g - 1. odd_lead (0: none): in groups of 2, an odd
  // count leads with one group of odd_lead blocks (ConvNchwcUkernel::odd_lead_blocks).
  static BlockGroups Of(size_t mb_n, size_t g, bool half_last, bool even, size_t odd_lead = 0) {
    BlockGroups b{mb_n, g};
    const size_t r = mb_n % g;
    if (odd_lead != 0 && g == 2 && r == 1 && mb_n >= odd_lead) {
      b.lead = 1, b.lead_size = odd_lead;
    } else if (g > 1 && mb_n > 1 && r == 1 && half_last) {
      b.lead = 1, b.lead_size = 1;
    } else if (even && g > 2 && r != 0 && r < g - 1 && mb_n >= (g - r) * (g - 1)) {
      b.lead = g - r, b.lead_size = g - 1;
    }
    const size_t rest = mb_n - b.lead * b.lead_size;
    b.count = b.lead + (rest + g - 1) / g;
    return b;
  }
  size_t Start(size_t i) const {
    return i < lead ? i * lead_size : lead * lead_size + (i - lead) * g;
  }
  size_t Size(size_t i) const {
    if (i >= count) return 0;
    return std::min(i < lead ? lead_size : g, mb_n - Start(i));
  }
};

// How a row of output columns splits into microkernel calls for a group of nob blocks: whole
// tiles, then the rest, as the microkernel cuts a row, unless the rest would be narrower than
// tile_min: then tiles of equal width (14 columns at AVX-512 run as 7 + 7, not 12 + 2), as long
// as those are not narrower themselves: 7 columns at AVX2 run faster as 6 + 1 than as 3 + 4
// (bench_conv KILN_ISA=avx2, 3x3 s2 512->512 at 14x14: 3.4 against 3.7 ms).
struct TileCut {
  size_t tile = 0, tile_min = 0;  // tile 0: no cut, one call

  // tile_min counts accumulators: at least those of tile_min columns of max_oc_blocks, rounded
  // up (AVX2's 3 x 4 tiles cut 14 columns as 4 + 4 + 3 + 3, not 4 + 4 + 4 + 2).
  TileCut(const ConvNchwcUkernel& uk, size_t nob)
      : tile(uk.tile * uk.max_oc_blocks / nob),
        tile_min((uk.tile_min * uk.max_oc_blocks + nob - 1) / nob) {}
  size_t Tiles(size_t span) const { return tile == 0 ? 1 : (span + tile - 1) / tile; }
  bool Equal(size_t span) const {
    return tile == 0 ||
           (span % tile != 0 && span % tile < tile_min && span / Tiles(span) >= tile_min);
  }
  // Whether the cut of `span` columns ends with a tile narrower than tile_min.
  bool LeavesNarrow(size_t span) const {
    return tile != 0 && span % tile != 0 && span % tile < tile_min && !Equal(span);
  }
  // The end of tile i of a row of `span` columns (tile i - 1 ends where it starts).
  size_t End(size_t span, size_t i) const {
    return Equal(span) ? span * (i + 1) / Tiles(span) : std::min(span, (i + 1) * tile);
  }
};

inline bool HalfLast(const ConvParams& p, size_t c) { return p.m % c != 0 && p.m % c <= c / 2; }

// Output blocks of one call on the rows of a 3x3 and the like. Strided rows 24 or more wide take
// the 1x1's taller groups (4 x 6 at AVX-512: fewer loads per FMA than 3 x 8) while a group's
// weights fit a third of L2. conv::Run, Zen 5, median of 21 rounds, warm / 3 MB evicted between
// calls: 3x3 s2 128->128 at 56x56 267 -> 272 / 262 -> 269 GFLOP/s, 64->64 249 -> 263 / 248 ->
// 263; but at stride 1 128->128 at 56x56 270 -> 258 cold, 160->160 at 14x14 -7%, and past the
// bound 256->256 s2 at 28x28 -16%.
// Each row of a group reads all the group's weights from L2; where those of the wider groups
// (conv_oc_blocks) pass half of L2, the rows evict them, and calls of max_oc_blocks run instead.
// conv::Run, Zen 5, median of 21 interleaved rounds (11 with the caches evicted before each
// call), 3 blocks -> 2: 512->512 at 7x7 (884 KiB against 590 KiB) 250 -> 263 GFLOP/s, evicted
// 226 -> 241, 2 threads 499 -> 516; s2 512->512 at 14x14 248 -> 252, evicted 209 -> 215, 2
// threads 399 -> 414; s2 256->256 at 28x28 (442 KiB) level or 2% slower, hence the bound.
// Not where the rows cut into tiles of max_oc_blocks leave one narrower than tile_min (AVX2's 2
// x 6 tile cuts a 7x7 map's rows as 6 + 1, its last tile 2 accumulators deep, latency-bound):
// the wider groups stay (3 x 4: 4 + 3). bench_conv --blocked, 1 thread, Zen 3 (512 KiB L2,
// 884 KiB of weights a group of 3), kiln/oneDNN, best rounds of the two of three alternating
// runs that the host left alone, 2 blocks -> 3: 3x3 512->512 at 7x7 0.96-0.97 -> 1.03, s2 at
// 14x14 0.87-0.88 -> 1.02-1.05.
inline size_t RowGroupBlocks(const ConvParams& p, const ConvNchwcUkernel& uk) {
  const size_t c = uk.block, g = std::max(uk.max_oc_blocks, uk.conv_oc_blocks);
  const size_t tall = uk.pointwise_oc_blocks;
  const size_t block_bytes = ((p.c + c - 1) / c) * p.kh * p.kw * c * c * sizeof(float);
  const size_t l2 = GetCpuInfo().l2_bytes;
  if (tall > g && p.stride_w >= 2 && p.out_w() >= 24 && tall * block_bytes * 3 <= l2) {
    return tall;
  }
  if (g > uk.max_oc_blocks && g * block_bytes * 2 > l2 &&
      !TileCut(uk, uk.max_oc_blocks).LeavesNarrow(p.out_w())) {
    return uk.max_oc_blocks;
  }
  return g;
}

// Runs the call `k` of a 1x1 over pixels in passes over at most `pass` input blocks each (0 or
// at least k.ic_blocks: one pass), the output accumulating between them: bias and `accumulate`
// on the first, the clamp on the last. A tile of one pass reads a few lines of each input block's
// plane per step, and planes of a 56x56 map are 98 KiB apart (2 KiB past a multiple of 4 KiB):
// with all 32 blocks of 256 channels in one pass their lines crowd 6 sets of an 8-way L1, and
// the weights of a pair (256 channels x 2 blocks, 16 KiB) leave with them. In passes of 8 blocks
// (4 lines a set at most, 4 KiB of weights) the output is reloaded from L1 once a pass, 24 loads
// and stores against 768 FMAs a tile. bench_conv --blocked, 1 thread, Zen 3 (32 KiB 8-way L1):
// see the AVX2 row in conv_ukernels.cc.
inline void CallInPasses(const ConvNchwcUkernel& uk, const ukernels::F32ConvNchwcParams& k,
                         size_t pass) {
  const size_t cb_n = k.ic_blocks;
  if (pass == 0 || cb_n <= pass) return uk.fn(&k);
  const size_t parts = (cb_n + pass - 1) / pass;
  ukernels::F32ConvNchwcParams s = k;
  for (size_t i = 0; i < parts; ++i) {
    const size_t b0 = cb_n * i / parts, b1 = cb_n * (i + 1) / parts;
    const bool first = i == 0, last = i + 1 == parts;
    s.input = k.input + b0 * k.in_cb_stride;
    s.weights = k.weights + b0 * k.w_cb_stride;
    s.ic_blocks = b1 - b0;
    s.ic_last = last ? k.ic_last : 0;
    s.bias = first ? k.bias : nullptr;
    s.accumulate = first ? k.accumulate : 1;
    s.min = last ? k.min : -std::numeric_limits<float>::infinity();
    s.max = last ? k.max : std::numeric_limits<float>::infinity();
    s.prefetch = first ? k.prefetch : nullptr;
    uk.fn(&s);
  }
}

// The most work (columns x blocks) that a thread gets when `images` x groups x chunks of
// `width` columns (the last one shorter) split into equal counts of consecutive items, ordered
// by chunk then group (by_chunk) or by group then chunk.
inline size_t BusiestLoad(const BlockGroups& groups, size_t images, size_t cols, size_t width,
                          bool by_chunk, size_t threads) {
  const size_t chunks = (cols + width - 1) / width, items = images * groups.count * chunks;
  size_t most = 0;
  for (size_t t = 0; t < threads; ++t) {
    size_t load = 0;
    for (size_t i = items * t / threads; i < items * (t + 1) / threads; ++i) {
      const size_t part = by_chunk ? i / groups.count % chunks : i % chunks;
      const size_t group = by_chunk ? i % groups.count : i / chunks % groups.count;
      load += (std::min(cols, (part + 1) * width) - part * width) * groups.Size(group);
    }
    most = std::max(most, load);
  }
  return most;
}

// The chunk width, at most `widest`, whose busiest thread has the least work (ties: the widest),
// and that work: over 1 to 2x as many chunks as `widest` makes, each as wide as an even split in
// whole tiles (`quantum` columns).
inline std::pair<size_t, size_t> BalancedChunk(const BlockGroups& groups, size_t images,
                                               size_t cols, size_t widest, bool by_chunk,
                                               size_t threads, size_t quantum) {
  const size_t fewest = (cols + widest - 1) / widest;
  size_t best = widest, best_load = BusiestLoad(groups, images, cols, widest, by_chunk, threads);
  for (size_t n = fewest; n <= 2 * fewest; ++n) {
    const size_t even = (cols + n - 1) / n;
    const size_t width = std::min(widest, (even + quantum - 1) / quantum * quantum);
    const size_t load = BusiestLoad(groups, images, cols, width, by_chunk, threads);
    if (load < best_load) best = width, best_load = load;
  }
  return {best, best_load};
}

}  // namespace kiln::conv::direct_nchwc
