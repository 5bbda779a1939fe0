// The GEMM driver: blocking, packing, the split over threads and the loops over microkernel tiles
// of one Problem (problem.h). The entry points that set a Problem up are in gemm.cc.
#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>

#include "kernels/gemm/driver.h"
#include "kernels/gemm/pack.h"
#include "kernels/gemm/problem.h"

namespace kiln::gemm {
namespace {

constexpr size_t kAlign = 64;

size_t DivUp(size_t a, size_t b) { return (a + b - 1) / b; }
size_t RoundUp(size_t a, size_t b) { return DivUp(a, b) * b; }

// Packing buffers grow per thread and are kept, so steady-state calls do not allocate.
struct Workspace {
  float* data = nullptr;
  size_t floats = 0;
  ~Workspace() { std::free(data); }
  float* Get(size_t n) {
    if (n > floats) {
      std::free(data);
      data = static_cast<float*>(std::aligned_alloc(kAlign, RoundUp(n * sizeof(float), kAlign)));
      if (!data) throw std::bad_alloc();
      floats = n;
    }
    return data;
  }
};

// The width of equal blocks of `total`, each a multiple of `unit` and at most `most` (rounded
// down to a unit, at least one): 300 at most 256 becomes 150 + 150, not 256 + 44.
size_t EqualBlock(size_t total, size_t most, size_t unit) {
  most = std::max(unit, most / unit * unit);
  return RoundUp(DivUp(total, DivUp(total, most)), unit);
}

Blocking ChooseBlocking(const GemmUkernel& uk, size_t m, size_t n, size_t k, bool c_trans,
                        bool b_packed, bool own_b, Blocking want) {
  const CpuInfo& cpu = GetCpuInfo();
  Blocking b;
  // A's panel in L1 (GemmUkernel::a_panel_in_l1; ukernel_table.cc has the measurements): M
  // blocks of one tile, whose panel of equal K blocks of at most 0.6 L1d / (MR * 4) floats (526
  // at 48 KiB: K = 1024 runs as 2 x 512) runs against every B panel of a block of half of L2.
  // Only where the usual blocking would stream both from L2: B's full-K panel larger than L1,
  // at least 8 row tiles to reuse each packed B block and 6 panels to reuse each A panel, and B
  // packed by this thread alone.
  constexpr size_t kMinRowTiles = 8, kMinPanels = 6;
  if (uk.a_panel_in_l1 && own_b && !want.kc && !want.mc && !want.nc && !c_trans && b_packed &&
      m >= kMinRowTiles * uk.mr && DivUp(n, uk.nr) >= kMinPanels &&
      k * uk.nr * sizeof(float) > cpu.l1d_bytes) {
    b.kc = EqualBlock(k, cpu.l1d_bytes * 3 / 5 / (uk.mr * sizeof(float)), 1);
    b.mc = uk.mr;
    b.nc = EqualBlock(n, cpu.l2_bytes / 2 / (b.kc * sizeof(float)), uk.nr);
    return b;
  }
  // KC: long K blocks amortize loading and storing the C tile once per block (costly when C's
  // rows are 4 KiB apart and share an L1 set). Measured on Zen 4 (1 MiB L2), a B micro-panel of
  // L2 / 16 streaming from L2 while the A panel stays in L1 was best: 14x32 at KC = 512 beat
  // 128/256/384 by 3-15% (768 and 1024: no better); 6x16 at KC = 1024 beat 512 by 9% at 1024^3.
  size_t kc = want.kc ? want.kc : std::clamp<size_t>(cpu.l2_bytes / 16 / (uk.nr * 4), 64, 1024);
  // The transposed product pays more per K block (the tile's transposed store, and load of C
  // after the first): 1.5x longer blocks. 64x3136x576 and 128x784x1152 ran 5-10% faster with
  // K = 576 blocks than with 288 and 384.
  if (c_trans && !want.kc) kc = kc * 3 / 2;
  // Twice as long where C (this thread's part) is more than twice L2 and B is packed: every K
  // block loads each C tile again from L3 or memory, a miss per row that the tile waits on. A
  // B read in place loses with long blocks (its rows stream from memory, 1 thread: 64x3136x2304
  // 223 -> 202 GFLOP/s at KC = 1536). Zen 5, median of interleaved rounds, 1 / 2 threads:
  // 2048^3 235 -> 248 / 449 -> 474, 1536^3 246 -> 254 / 466 -> 483, 2048x2048x4096 235 -> 247,
  // 1024x1024x4096 242 -> 245 / 441 -> 455.
  if (!want.kc && !c_trans && b_packed && m * n * sizeof(float) > 2 * cpu.l2_bytes) kc *= 2;
  // Up to twice the usual length, all of K goes in one block, so that each C tile is stored once
  // instead of loaded and stored again per K block (C of 1024^3 is 4 MiB, reloaded from L3).
  // Measured, 1 thread: 1024^3 at KC = 1024 ran 2% faster than at 512 (105.7 -> 108.2 GFLOP/s,
  // three alternating runs), 3072x128x768 4-6% faster at 768 than at 384 + 384. The transposed
  // product (its KC already 1.5x) does so only when all of B (K x N) fits in half of L2.
  // Up to 2.25 times, with all of B (K x N) in a quarter of L3 and, transposed, in 3/4 of L2:
  // median of 25 interleaved runs, 1 thread, two blocks -> one: 128x784x1152 (transposed)
  // 112.7-113.1 -> 113.7-113.9 GFLOP/s, 1000x1000x1152 107.7-108.4 -> 110.5-110.9,
  // 2048x128x1152 108.9-110.1 -> 111.7-112.0, 512x196x1152 level; B out of memory lost with one
  // block (1152 rows of an in-place B panel: 64x3136x1152 108 -> 105, 256x3136x1152 108 -> 102).
  const size_t b_bytes = k * RoundUp(n, uk.nr) * sizeof(float);
  // Not on an L2 under 1 MiB (Zen 3's 512 KiB) with B over twice L2: one block shrinks MC to
  // L2 / 2 / (K * 4) rows (56 at K = 1152), and each M block streams all of B from L3 again.
  // Zen 3, 1 thread, medians of 11 interleaved rounds, one block -> blocks of at most 512:
  // 128x784x1152 51.2-51.6 -> 55.9-57.3 GFLOP/s, 1000x1000x1152 58.0-60.2 -> 64.0-65.0, 1024^3
  // level; with the bound at L2, 2048x128x1152 (B of 590 KB) lost 10%.
  const bool one_block_ok = cpu.l2_bytes >= (1u << 20) || b_bytes <= 2 * cpu.l2_bytes;
  if (!want.kc && one_block_ok && ((k <= 2 * kc && (!c_trans || b_bytes <= cpu.l2_bytes / 2)) ||
                   (4 * k <= 9 * kc && b_bytes <= cpu.l3_bytes / 4 &&
                    (!c_trans || b_bytes <= cpu.l2_bytes / 4 * 3)))) {
    kc = k;
  }
  b.kc = EqualBlock(k, kc, 1);
  // MC: the packed A block (MC x KC) takes about half of L2.
  b.mc = EqualBlock(m, want.mc ? want.mc : cpu.l2_bytes / 2 / (b.kc * 4), uk.mr);
  // NC: the packed B block (KC x NC) takes a share of L3.
  b.nc = EqualBlock(n, want.nc ? want.nc : cpu.l3_bytes / 4 / (b.kc * 4), uk.nr);
  return b;
}

// Runs one tile (`rows` <= MR rows of C from row i, NR columns or a narrower edge) and the
// epilogue the microkernel applies (bias, clamp); the driver applies pb.act over several tiles
// at once (ActRegion). first_use: the tile reads its A panel for the first time in this call
// (the microkernel may prefetch a prepacked one, which may still be in memory; later uses find
// it in L2); first_b: the same for B's rows read in place; next_b, next_rows: rows of the next
// B panel for the tile to pull into L2.
void RunTile(const Problem& pb, size_t kc, const float* ap, size_t a_k, const float* bp,
             size_t ldb, size_t i, size_t rows, size_t j, bool first_k, bool last_k,
             bool first_use, bool first_b, const float* next_b, size_t next_rows,
             float* pack_b = nullptr, float* pack_a = nullptr) {
  const GemmUkernel& uk = *pb.uk;
  const size_t mr = rows, nr = std::min(uk.nr, pb.n - j);
  float* c = pb.c_trans ? pb.c + j * pb.ldc + i : pb.c + i * pb.ldc + j;
  ukernels::F32GemmTileParams params{};
  params.trans_c = pb.c_trans ? 1 : 0;
  params.a_stride = a_k;
  params.a_rows = pb.rows_a || pack_a ? pb.a.rs : 0;
  params.prefetch_a = pb.a.packed && first_use ? 1 : 0;
  params.first_pass = first_b ? 1 : 0;
  params.prefetch_b = next_b;
  params.prefetch_b_rows = next_rows;
  params.pack_b = pack_b;
  params.pack_a = pack_a;
  params.load_c = (!first_k || pb.accumulate) ? 1 : 0;
  params.min = last_k ? pb.min : -kInf;
  params.max = last_k ? pb.max : kInf;
  params.bias_m = last_k && pb.bias_m ? pb.bias_m + i : nullptr;
  params.bias_n = last_k && pb.bias_n ? pb.bias_n + j : nullptr;
  uk.gemm(mr, nr, kc, ap, bp, ldb, c, pb.ldc, &params);
}

// pb.act over C(i, j) for i in [i0, i1), j in [j0, j1), one call per row of the real C.
void ActRegion(const Problem& pb, size_t i0, size_t i1, size_t j0, size_t j1) {
  if (pb.c_trans) {
    for (size_t j = j0; j < j1; ++j) {
      float* c = pb.c + j * pb.ldc + i0;
      pb.act(i1 - i0, c, c, nullptr);
    }
  } else {
    for (size_t i = i0; i < i1; ++i) {
      float* c = pb.c + i * pb.ldc + j0;
      pb.act(j1 - j0, c, c, nullptr);
    }
  }
}

// The activation runs over spans of about this many floats of a row of C (8 AVX-512 vectors),
// over regions of at most kActRegion floats (32 KiB: still in L1 from the tiles' stores).
// Calling it per row of each tile cost more than the activation itself: rows of 14 floats in
// the transposed product (one masked vector a call, right after the tile's masked stores).
constexpr size_t kActSpan = 128, kActRegion = 8192;

// B[k0.., j0 : j0 + cols] (src points at (k0, j0)) into NR-column panels. A transposed B (its
// columns contiguous, as A^T is in the transposed product) goes through the ISA's transposing
// A packer: a panel of NR columns of B^T is a panel of NR rows.
void PackB(const Problem& pb, const float* src, size_t kc, size_t cols, float* dst) {
  const size_t nr = pb.uk->nr;
  if (pb.b.rs == 1 && pb.b.cs != 1 && pb.uk->pack_a) {
    for (size_t j = 0; j < cols; j += nr) {
      pb.uk->pack_a(std::min(nr, cols - j), kc, src + j * pb.b.cs, pb.b.cs, nr, dst + j * kc);
    }
    return;
  }
  PackBPanels(src, pb.b.rs, pb.b.cs, kc, cols, nr, dst, kc * nr);
}

// Whether the microkernel reads plain B (contiguous rows) in place through ldb rather than from
// packed panels, for a slab of `rows` rows of C. The packing is a copy that misses on every row
// (rows lie pages apart, out of the prefetchers' reach), so it pays only where the panel would
// thrash L1 when read in place. B is read in place:
// - for a single row of tiles (rows <= MR), which reuses nothing anyway;
// - over K blocks up to kShortK long at NR = 32 (in proportion at other NR): the panel (KC rows
//   of NR floats) stays in L1 for the next tiles. AVX-512, 1 thread, plain Sgemm, best of runs,
//   packed -> in place: 64x3136x64 96.2 -> 103.3 GFLOP/s, 128x784x128 105.6 -> 108.9,
//   256x3136x128 106.7 -> 109.3, 256x784x256 110.7 -> 113.4. At AVX2's NR = 16 the limit is
//   128: 1x1 224 -> 128 at 56x56 (K = 224) ran 13% slower in place (bench_conv);
// - with the 14x32 tile (a panel row is two lines, read once per 28 FMA cycles), for rows a
//   whole number of lines apart and not a multiple of 2 KiB (those put every row in one or two
//   L1 sets). Normal product, packed -> in place: 256^3 111.3 -> 112.7, 256x784x512 111.9 ->
//   114.7, 128x784x2304 105.4 -> 111.5, 64x3136x576 95.9 -> 113.4, 768^3 112.7 -> 114.1; 4 KiB
//   rows (1024^3) 110.2 -> 108.3, 6 KiB (1536^3) 108.6 -> 103.5, 16 KiB (256x4096x1024) 99.3 ->
//   91.3; 196-byte rows (512x49x4608, lines split unevenly) 3% slower. The 6x16 AVX2 tile (a
//   line per row, read once per 6 FMA cycles) loses 6-26% in place on all of those (256^3 96.8
//   -> 91.3, 512^3 103.9 -> 85.5, 768^3 104.4 -> 77.2): it packs them.
bool ReadBInPlace(const Problem& pb, size_t rows) {
  constexpr size_t kShortK = 256, kShortKAtNr = 32;
  if (pb.b.packed || pb.b.cs != 1) return false;
  if (rows <= pb.uk->mr) return true;
  // Some tiles lose on any plain B read in place over more than one row of tiles
  // (ukernel_table.cc, IntelAvx512Variant).
  if (!pb.uk->b_in_place) return false;
  if (pb.kc * kShortKAtNr <= kShortK * pb.uk->nr) return true;
  return LongRowsInPlace(*pb.uk, pb.b.rs * sizeof(float));
}

// Where B is read in place and comes from memory, the first tile on each panel waited on its
// rows: on a panel evicted from L3 a 14x32 tile ran at 0.45-0.5 of the next tiles' speed,
// with its rows fetched 16 to 32 steps ahead or more (a core has only so many misses in flight).
// So the other tiles of the first M block each pull a share of the next panel's rows into L2
// while they run on the current one, which then arrives over a whole panel's work. 1 thread,
// plain Sgemm, median of 11 interleaved rounds on a Zen 5 EPYC: 64x12544x576 179 -> 203
// GFLOP/s, 64x3136x2304 207 -> 228; 2 threads 371 -> 405 and 375 -> 446 (with
// PreferTransposed's turn to the normal product there). With B in L3 the extra prefetches cost
// about 1% (64x3136x576 254 -> 251), hence only for B out of it.
// Returns the rows [r0, r1) of a kc-row panel that tile `t` of `tiles` pulls.
std::pair<size_t, size_t> NextPanelShare(size_t t, size_t tiles, size_t kc) {
  if (t == 0 || tiles < 2) return {0, 0};  // the first tile fetches its own panel ahead
  return {(t - 1) * kc / (tiles - 1), t * kc / (tiles - 1)};
}

// The rows [r0, r1) of tile t of `tiles` over `rows` rows (tiles = ceil(rows / MR)): with
// `even`, split as evenly as the tiles allow, 16 rows as 8 + 8 rather than 14 + 2, and 49 as 5 x
// 5 + 4 x 6 rather than 8 x 6 + 1, whose last tile has too few accumulators to cover the FMA
// latency (2 for 1 row at AVX2: 4 cycles a k step for a sixth of the work). Zen 5, 1 thread,
// rows of A in place, median of 21 interleaved rounds: Winograd NCHWc 256->256 at 14x14
// (16-tile GEMMs) 517 -> 558 GFLOP/s, 512->512 427 -> 458; Sgemm 49x512x512 235 -> 240. A
// packed here, normal product, median of 15-21: AVX-512 15x1024x1024 95 -> 105, 29x1024x1024
// 142 -> 158; AVX2 13x1024x1024 48-49 -> 51, 128x784x1152 90 -> 92; 256^3 and 1024^3 level.
std::pair<size_t, size_t> TileRows(size_t t, size_t tiles, size_t rows, size_t mr, bool even) {
  if (!even) return {t * mr, std::min(rows, (t + 1) * mr)};
  return {t * rows / tiles, (t + 1) * rows / tiles};
}

// Whether RunSlab's packing of plain B (contiguous rows) rides on the first tile of each panel
// (GemmUkernel::fused_pack_b): that tile reads the panel's rows in place and stores them packed
// for the panel's other tiles, instead of a pass over all of B before the tiles (the pass's
// reads of B missed in L1 on every row, and its writes took store slots the FMA-bound tile
// leaves free). Zen 5, 1 thread, median of 21 interleaved rounds, pass -> fused: AVX2 256^3
// 103 -> 106 GFLOP/s, 512^3 105 -> 106; AVX-512 512^3 201 -> 208; bench_gemm, two
// alternating runs, AVX-512 1024^3 0.96 -> 1.00 of oneDNN; the other shapes level (they read B
// in place or transposed). Not for a transposed B (the ISA's transposing packer), nor the
// threads' shared packing (RunSharedB).
bool FusesPackB(const Problem& pb, bool shared, bool direct_b) {
  return pb.uk->fused_pack_b && !shared && !pb.b.packed && !direct_b && pb.b.cs == 1;
}

// The same for A packed here (GemmUkernel::fused_pack_a): the first tile on each row panel
// reads plain A row by row in place and stores it packed for the tiles on the other panels.
// The pass took 5.6% of AVX2 256x196x2304 (perf; its rows of 2304 floats come from L3). AVX2,
// 1 thread, median of 31 interleaved rounds, pass -> fused: 256x196x2304 106.3 -> 109.4
// GFLOP/s; 256^3, 512^3, 1024^3 (rows 4 KiB apart: one tile in 64 reads them in place) and
// 128x784x1152 level (0.997-1.002); of 15: 1000^3 and 2048x256x1024 +1%.
bool FusesPackA(const Problem& pb) {
  return pb.uk->fused_pack_a && !pb.a.packed && !pb.in_place_a && !pb.rows_a && pb.a.cs == 1;
}

// One block of B, rows [pc0, pc1) (one K block) of one N block, that the threads packed together
// into NR-column panels kc * NR floats apart.
struct SharedB {
  const float* panels = nullptr;
  size_t pc0 = 0, pc1 = 0;
};

// C[m0:m1, n0:n1]; m0 (n0) is a multiple of MR (NR) when A (B) is prepacked. With `shared`, only
// its K block, over one N block [n0, n1), B read from its panels.
// Loop order as in BLIS: N blocks (L3), K blocks, M blocks (L2), then NR panels and MR panels.
void RunSlab(const Problem& pb, size_t m0, size_t m1, size_t n0, size_t n1,
             const SharedB* shared = nullptr) {
  const size_t mr = pb.uk->mr, nr = pb.uk->nr;
  // With a single M block every B panel is used once, right away: pack it just before use (it is
  // still in L1/L2 when the microkernel reads it) rather than writing the whole block out.
  const bool direct_b = !shared && ReadBInPlace(pb, m1 - m0);
  const bool spread_b = direct_b && BFromMemory(pb.k, pb.n);
  const bool lazy_b = !shared && !pb.b.packed && !direct_b && m1 - m0 <= pb.mc;
  const bool fuse_b = FusesPackB(pb, shared != nullptr, direct_b);
  thread_local Workspace a_ws, b_ws;
  float* a_buf = pb.a.packed || pb.in_place_a || pb.rows_a ? nullptr : a_ws.Get(pb.mc * pb.kc);
  const bool fuse_a = FusesPackA(pb);  // a_buf is then the packed block
  float* b_buf =
      shared || pb.b.packed || direct_b ? nullptr : b_ws.Get((lazy_b ? nr : pb.nc) * pb.kc);
  for (size_t jc = n0; jc < n1; jc += pb.nc) {
    const size_t nc = std::min(pb.nc, n1 - jc);
    for (size_t pc = shared ? shared->pc0 : 0; pc < (shared ? shared->pc1 : pb.k); pc += pb.kc) {
      const size_t kc = std::min(pb.kc, pb.k - pc);
      const bool first_k = pc == 0, last_k = pc + kc == pb.k;
      const float* b_panels = b_buf;
      size_t b_stride = kc * nr;
      if (shared) {
        b_panels = shared->panels;
      } else if (pb.b.packed) {
        b_panels = pb.b.packed + jc / nr * (pb.k * nr) + pc * nr;
        b_stride = pb.k * nr;
      } else if (!lazy_b && !direct_b) {
        if (!fuse_b) PackB(pb, pb.b.p + pc * pb.b.rs + jc * pb.b.cs, kc, nc, b_buf);
      }
      for (size_t ic = m0; ic < m1; ic += pb.mc) {
        const size_t mc = std::min(pb.mc, m1 - ic);
        // With an activation, tiles go in groups whose rows of C are kActSpan long: along M in
        // the transposed product (C's rows are its columns), along N otherwise. Without one
        // the groups change nothing.
        const bool act = last_k && pb.act;
        const size_t i_group = act && pb.c_trans ? std::max<size_t>(1, kActSpan / mr) * mr : mc;
        const size_t j_group =
            act && !pb.c_trans ? std::max<size_t>(1, std::min(kActSpan, kActRegion / mc) / nr) * nr
                               : nc;
        // Tiles split each group's rows evenly (TileRows) where A is not prepacked; A packed
        // here is packed at those rows, so only over one group.
        const bool even = !pb.a.packed && (pb.rows_a || pb.in_place_a || i_group >= mc);
        const float* a_panels = a_buf;
        size_t a_stride = kc * mr, a_k = 0;
        if (pb.a.packed) {
          a_panels = pb.a.packed + ic / mr * (pb.k * mr) + pc * mr;
          a_stride = pb.k * mr;
        } else if (pb.in_place_a) {
          a_panels = pb.a.p + ic + pc * pb.a.cs;
          a_stride = mr;
          a_k = pb.a.cs;
        } else if (pb.rows_a) {
          a_panels = pb.a.p + ic * pb.a.rs + pc;
          a_stride = mr * pb.a.rs;
        } else if (!fuse_a) {
          // Panels at the even split's rows (TileRows): panel t holds tile t's rows.
          const float* src = pb.a.p + ic * pb.a.rs + pc * pb.a.cs;
          const size_t tiles = DivUp(mc, mr);
          for (size_t t = 0; t < tiles; ++t) {
            const auto [r0, r1] = TileRows(t, tiles, mc, mr, even);
            float* dst = a_buf + t * kc * mr;
            if (pb.uk->pack_a && pb.a.cs == 1) {
              pb.uk->pack_a(r1 - r0, kc, src + r0 * pb.a.rs, pb.a.rs, mr, dst);
            } else {
              PackAPanels(src + r0 * pb.a.rs, pb.a.rs, pb.a.cs, r1 - r0, kc, mr, dst, kc * mr);
            }
          }
        }
        for (size_t jg = 0; jg < nc; jg += j_group) {
          const size_t jg_end = std::min(nc, jg + j_group);
          for (size_t jr = jg; jr < jg_end; jr += nr) {
            const float* bp;
            size_t ldb = nr;
            if (direct_b) {
              bp = pb.b.p + pc * pb.b.rs + jc + jr;
              ldb = pb.b.rs;
            } else if (lazy_b) {
              const size_t j = jc + jr;
              if (!fuse_b) {
                PackB(pb, pb.b.p + pc * pb.b.rs + j * pb.b.cs, kc, std::min(nr, n1 - j), b_buf);
              }
              bp = b_buf;
            } else {
              bp = b_panels + jr / nr * b_stride;
            }
            const bool spread = spread_b && ic == m0 && jr + nr < nc;
            for (size_t ig = 0; ig < mc; ig += i_group) {
              const size_t ig_end = std::min(mc, ig + i_group), tiles = DivUp(ig_end - ig, mr);
              for (size_t t = 0; t < tiles; ++t) {
                const auto [r0, r1] = TileRows(t, tiles, ig_end - ig, mr, even);
                const size_t ir = ig + r0, rows = r1 - r0;
                const float* ap = pb.rows_a     ? a_panels + ir * pb.a.rs
                                  : pb.in_place_a ? a_panels + ir
                                  : a_panels + (ig / mr + t) * a_stride;
                // The row panel's first tile reads A in place and packs it for the others.
                float* packs_a = fuse_a && jr == 0 ? a_buf + (ig / mr + t) * a_stride : nullptr;
                const auto [p0, p1] = spread ? NextPanelShare(ig / mr + t, DivUp(mc, mr), kc)
                                             : std::pair<size_t, size_t>{0, 0};
                // The panel's first tile reads B in place and packs it for the others.
                const bool packs = fuse_b && ic == m0 && ir == 0;
                RunTile(pb, kc, packs_a ? pb.a.p + (ic + ir) * pb.a.rs + pc : ap, a_k,
                        packs ? pb.b.p + pc * pb.b.rs + jc + jr : bp,
                        packs ? pb.b.rs : ldb, ic + ir, rows, jc + jr, first_k, last_k,
                        jc == n0 && jr == 0, (direct_b || packs) && ic == m0 && ir == 0,
                        p1 > p0 ? bp + nr + p0 * ldb : nullptr, p1 - p0,
                        packs ? b_buf + (lazy_b ? 0 : jr / nr * b_stride) : nullptr, packs_a);
              }
              if (act && pb.c_trans) {
                ActRegion(pb, ic + ig, ic + ig_end, jc + jr, jc + std::min(jr + nr, nc));
              }
            }
          }
          if (act && !pb.c_trans) ActRegion(pb, ic, ic + mc, jc + jg, jc + jg_end);
        }
      }
    }
  }
}

// The M split with B packed once for all threads: per block of B (one K block of one N block),
// the threads pack a share of its panels each, then all run their rows on it; two fork-joins a
// block, where each thread packing all of B for its own rows kept a copy each in L3. 2 threads,
// medians of rounds alternating with oneDNN's sgemm, a copy each -> shared: 1024^3 432 -> 447
// GFLOP/s, 1000^3 440 -> 459, 2048^3 413 -> 427; bench_gemm, three alternating runs, 1024^3
// 0.95 -> 0.97-0.98 of oneDNN, the other shapes level (most split along N, read B in place, or
// fit one M block a thread). Later, with the cores farther apart (see Run), 1024^3 451 -> 454,
// 2048^3 475 -> 482.
void RunSharedB(const Problem& pb, ThreadPool* pool, size_t threads, size_t tiles) {
  const size_t mr = pb.uk->mr, nr = pb.uk->nr;
  thread_local Workspace shared_ws;
  float* buf = shared_ws.Get(pb.nc * pb.kc);
  for (size_t jc = 0; jc < pb.n; jc += pb.nc) {
    const size_t nc = std::min(pb.nc, pb.n - jc), panels = DivUp(nc, nr);
    for (size_t pc = 0; pc < pb.k; pc += pb.kc) {
      const size_t kc = std::min(pb.kc, pb.k - pc);
      ParallelFor(pool, threads, [&](size_t t) {
        const size_t p0 = t * panels / threads, p1 = (t + 1) * panels / threads;
        if (p0 == p1) return;
        PackB(pb, pb.b.p + pc * pb.b.rs + (jc + p0 * nr) * pb.b.cs, kc,
              std::min(nc, p1 * nr) - p0 * nr, buf + p0 * kc * nr);
      });
      const SharedB shared{buf, pc, pc + kc};
      ParallelFor(pool, threads, [&](size_t t) {
        const size_t lo = t * tiles / threads, hi = (t + 1) * tiles / threads;
        RunSlab(pb, lo * mr, std::min(pb.m, hi * mr), jc, jc + nc, &shared);
      });
    }
  }
}

// K == 0: C = act(op(C) + bias), no microkernel involved.
void RunEmptyK(const Problem& pb) {
  const size_t rs = pb.c_trans ? 1 : pb.ldc, cs = pb.c_trans ? pb.ldc : 1;
  for (size_t i = 0; i < pb.m; ++i) {
    float* c = pb.c + i * rs;
    for (size_t j = 0; j < pb.n; ++j) {
      float v = pb.accumulate ? c[j * cs] : 0.0f;
      if (pb.bias_m) v += pb.bias_m[i];
      if (pb.bias_n) v += pb.bias_n[j];
      c[j * cs] = std::min(std::max(v, pb.min), pb.max);
      if (pb.act) pb.act(1, c + j * cs, c + j * cs, nullptr);
    }
  }
}

// N == 1 with plain A and contiguous x: a matrix-vector product, rows split over the threads.
// Packing A would cost as much as the product itself.
bool TryGemv(const Problem& pb, ThreadPool* pool) {
  if (pb.n != 1 || pb.k == 0 || pb.c_trans || pb.a.packed || pb.b.packed || pb.a.cs != 1 ||
      pb.b.rs != 1) {
    return false;
  }
  size_t threads = ThreadCount(pool);
  if (static_cast<double>(pb.m) * pb.k < 65536.0) threads = 1;
  threads = std::min(threads, DivUp(pb.m, 16));
  auto task = [&](size_t t) {
    const size_t lo = t * pb.m / threads, hi = (t + 1) * pb.m / threads;
    if (lo == hi) return;
    ukernels::F32GemmTileParams params{};
    params.load_c = pb.accumulate ? 1 : 0;
    params.bias_m = pb.bias_m ? pb.bias_m + lo : nullptr;
    params.bias_n = pb.bias_n;
    params.min = pb.min;
    params.max = pb.max;
    float* y = pb.c + lo * pb.ldc;
    pb.uk->gemv(hi - lo, pb.k, pb.a.p + lo * pb.a.rs, pb.a.rs, pb.b.p, y, pb.ldc, &params);
    if (pb.act) {
      if (pb.ldc == 1) {
        pb.act(hi - lo, y, y, nullptr);
      } else {
        for (size_t i = 0; i < hi - lo; ++i) pb.act(1, y + i * pb.ldc, y + i * pb.ldc, nullptr);
      }
    }
  };
  if (threads <= 1) {
    task(0);
  } else {
    ParallelFor(pool, threads, task);
  }
  return true;
}

// Whether to split C along N rather than M over `threads`. Both splits are in whole tiles, so a
// prepacked operand is indexed at panel boundaries either way. The cost of the busiest thread
// (the first: it gets full tiles) is estimated for each, per unit of K: its share of C plus
// packing its part of an unpacked operand (all of B when splitting M, all of A when splitting
// N). Ties keep the M split. Always splitting M under a prepacked A (as 1x1 convolutions are)
// split 16..64 output channels badly at MR = 14 (16 rows: 14 + 2) and packed all of B on each
// thread: N splits made 16 x 3025 x 64 and 48 x 169 x 256 about 20% faster on two threads.
bool SplitN(const Problem& pb, size_t m_tiles, size_t n_tiles, size_t threads) {
  if (threads <= 1) return n_tiles >= m_tiles;
  const size_t mr = pb.uk->mr, nr = pb.uk->nr;
  // One packed element costs about as much as kCopy multiply-adds of a tile where the packing
  // copies runs that are contiguous in the source (a copy moves a few floats a cycle; the
  // microkernel does 2 x 16 lanes of FMA a cycle), and kTranspose where the panels run across
  // the source's contiguous rows (A row-major, B^T: the ISA's transposing packer). An A the
  // microkernel reads in place costs nothing to pack: a transposed product's B^T (in_place_a)
  // is free, but rows of A (rows_a) are charged as a copy, since each thread then streams all
  // of them from memory.
  // Measured, 2 threads, bench_gemm, N against M split, two alternating runs each: 256x196x2304
  // (B^T transposed for each thread) 0.89-0.90 -> 0.98-0.99 of oneDNN, 128x784x1152 (A in
  // place) 0.97-0.98 -> 1.01-1.02, 64x3136x576 and 1024^3 level; but 768x128x768 and
  // 3072x128x768 (rows of A in place) 0.95-0.96 -> 0.91-0.92 and 0.96-0.97 -> 0.89-0.90.
  constexpr double kCopy = 4.0, kTranspose = 16.0;
  const double a_cost = pb.a.packed || pb.in_place_a ? 0.0
                        : pb.a.cs == 1 && !pb.rows_a ? kTranspose
                                                     : kCopy;
  const double b_cost = pb.b.packed ? 0.0 : pb.b.rs == 1 && pb.b.cs != 1 ? kTranspose : kCopy;
  const double m = static_cast<double>(pb.m), n = static_cast<double>(pb.n);
  const size_t rows = std::min(pb.m, DivUp(m_tiles, std::min(threads, m_tiles)) * mr);
  const size_t cols = std::min(pb.n, DivUp(n_tiles, std::min(threads, n_tiles)) * nr);
  // A slab of one tile row reads plain B in place (RunSlab's direct_b) rather than packing it:
  // 24 x 3136 x 116 split along M into 14 + 10 rows ran 2.1x faster on two threads than on one.
  double cost_m = static_cast<double>(rows) * n;
  if (rows > mr) cost_m += b_cost * n;
  double cost_n = m * static_cast<double>(cols);
  if (pb.m > mr) cost_n += b_cost * static_cast<double>(cols);
  cost_n += a_cost * m;
  return cost_n < cost_m;
}

// Whether the microkernel reads plain row-major A in place (F32GemmTileParams::a_rows) rather
// than packing it. The packing copy moved every A value once per N block to serve N / NR tiles,
// visible when N is small; reading A in place, 14 row streams, costs nothing extra unless the
// rows lie a multiple of 4 KiB apart: then all 14 share one L1 set (8 ways) and 4K-alias the
// other streams. Measured, 1 thread, bench_gemm kiln/best: 768x128x768 0.94 -> 0.99,
// 3072x128x768 0.92 -> 0.98, 256^3 0.96 -> 0.99, 2000x64x1000 0.93 -> 1.05, 1000x256x1000
// 0.95 -> 0.99, 128x784x1152 and 1000^3 no slower; but 1024x256x1024 104 -> 61 GFLOP/s and
// 1024^3 105 -> 60 in place, hence the exception. (Those are the 14x32 tile's; the 6x16 one
// reads rows in place only up to its table row's a_rows_max_n.)
bool RowsInPlace(const Problem& pb) {
  constexpr size_t kAliasBytes = 4096;
  return pb.uk->a_rows && pb.n <= pb.uk->a_rows_max_n && !pb.c_trans && !pb.a.packed &&
         pb.a.cs == 1 && pb.a.rs * sizeof(float) % kAliasBytes != 0;
}

}  // namespace

bool LongRowsInPlace(const GemmUkernel& uk, size_t row_bytes) {
  constexpr size_t kLine = 64, kSetAlias = 2048;
  return uk.nr * sizeof(float) >= 2 * kLine && row_bytes % kLine == 0 &&
         (row_bytes <= kSetAlias || row_bytes % kSetAlias != 0);
}

bool BFromMemory(size_t k, size_t n) {
  return static_cast<double>(k) * static_cast<double>(n) * sizeof(float) >
         static_cast<double>(GetCpuInfo().l3_bytes / 2);
}

void Transpose(Problem& pb) {
  std::swap(pb.m, pb.n);
  std::swap(pb.a, pb.b);
  std::swap(pb.a.rs, pb.a.cs);
  std::swap(pb.b.rs, pb.b.cs);
  std::swap(pb.bias_m, pb.bias_n);
  pb.c_trans = !pb.c_trans;
}

// Splits C over the pool's threads along M or N in whole tiles (SplitN chooses); each thread
// packs its own operands, except for a B that every thread of an M split would pack whole: the
// threads pack that one together (RunSharedB).
void Run(Problem& pb, ThreadPool* pool, Blocking want, Orientation orientation) {
  if (pb.k == 0) return RunEmptyK(pb);
  if (TryGemv(pb, pool)) return;
  // Only a product with both operands plain may turn (a packed A of NR-row panels was turned by
  // SgemmPackedA already).
  if (!pb.a.packed && !pb.b.packed && !pb.c_trans) {
    const bool turn = orientation == Orientation::kAuto
                          ? PreferTransposed(*pb.uk, pb.m, pb.n, pb.k, pb.b.cs == 1)
                          : orientation == Orientation::kTransposed;
    if (turn) Transpose(pb);
  }
  // The transposed product's A is B^T; of plain B, each k is a contiguous run of rows (a 1x1
  // convolution's input: one channel's pixels), which the microkernel can read in place.
  pb.in_place_a = pb.c_trans && !pb.a.packed && pb.a.rs == 1 && pb.a.cs != 1 &&
                  TransposedReadsInPlace(pb.uk->nr, pb.n);
  pb.rows_a = RowsInPlace(pb);
  const size_t mr = pb.uk->mr, nr = pb.uk->nr;
  const size_t m_tiles = DivUp(pb.m, mr), n_tiles = DivUp(pb.n, nr);
  size_t threads = ThreadCount(pool);
  // Below ~64^3 multiply-adds a second thread costs more to wake than it saves. Counted in whole
  // tiles, as the microkernel computes them: a matrix-vector product on a prepacked A (the 1x1
  // convolutions of squeeze-excitation blocks, 48 x 1 x 1152) does MR x NR tiles of work per K
  // step, and took 20-36 us on one thread.
  if (static_cast<double>(RoundUp(pb.m, mr)) * RoundUp(pb.n, nr) * pb.k < 262144.0) threads = 1;
  const bool split_n = SplitN(pb, m_tiles, n_tiles, threads);
  const size_t tiles = split_n ? n_tiles : m_tiles;
  threads = std::min(threads, tiles);
  const size_t slab_m = split_n ? pb.m : RoundUp(DivUp(pb.m, threads), mr);
  const size_t slab_n = split_n ? RoundUp(DivUp(pb.n, threads), nr) : pb.n;
  // Whether the driver reads B from packed panels (prepacked, or packed here) rather than in
  // place (ReadBInPlace: long rows of whole lines).
  const bool b_packed = pb.b.packed || pb.b.cs != 1 || !pb.uk->b_in_place ||
                        !LongRowsInPlace(*pb.uk, pb.b.rs * sizeof(float));
  const Blocking blk =
      ChooseBlocking(*pb.uk, slab_m, slab_n, pb.k, pb.c_trans, b_packed,
                     threads == 1 || split_n, want);
  pb.kc = blk.kc;
  pb.mc = blk.mc;
  pb.nc = blk.nc;
  // Both operands read in place, with B panels of at least half of L1 and a tile's rows of A of
  // at most half: M blocks of one tile, so that the tile's A rows stay in L1 while the B panels
  // stream from L2 (rather than a panel in L1 and 14 rows of A from L2 for every tile), where a
  // thread has at least 8 panels to run each tile's rows against. Zen 5, median of 21
  // interleaved rounds, 1 thread: 256^3 243 -> 247 GFLOP/s, 256x512x256 237 -> 245, 512x256x256
  // 244 -> 247, 384^3 249 -> 253; 128^3 (16 KiB panels) 232 -> 229, hence the bound;
  // 768x128x768 (A rows of 43 KiB) and the AVX2 tile level. 2 threads, alternating with
  // oneDNN: 256x512x256 470 -> 481 (8 panels a thread), but 256^3 (4 a thread) 483 -> 476.
  if (!want.mc && pb.rows_a && DivUp(slab_n, nr) >= 8 && ReadBInPlace(pb, slab_m) &&
      !BFromMemory(pb.k, pb.n)) {
    const size_t l1 = GetCpuInfo().l1d_bytes;
    if (pb.kc * nr * sizeof(float) * 2 >= l1 && mr * pb.kc * sizeof(float) * 2 <= l1) pb.mc = mr;
  }
  // Split along M, each thread would pack all of B for its own rows (and keep its own copy in
  // L3): where every thread's rows span more than one M block and B is not read in place, the
  // threads share its packing instead.
  const size_t min_rows = tiles / threads * mr;  // the smallest thread's
  if (threads > 1 && !split_n && !pb.b.packed && min_rows > pb.mc && !ReadBInPlace(pb, min_rows)) {
    return RunSharedB(pb, pool, threads, tiles);
  }
  // Not the same for A along N: packing all of A once for both threads ran 256x196x2304 (the
  // transposed product, A = B^T through the transposing packer) at 453-458 GFLOP/s against
  // 440-442 with a copy each in one session, and at 381-385 against 435-440 in another, on the
  // same binary: the shared panels cross between the cores, whose distance on this VM varies
  // (the M split's shared B, with four times the work per byte, stayed level or ahead).
  auto task = [&](size_t t) {
    const size_t lo = t * tiles / threads, hi = (t + 1) * tiles / threads;
    if (split_n) {
      RunSlab(pb, 0, pb.m, lo * nr, std::min(pb.n, hi * nr));
    } else {
      RunSlab(pb, lo * mr, std::min(pb.m, hi * mr), 0, pb.n);
    }
  };
  if (threads == 1) {
    task(0);
  } else {
    ParallelFor(pool, threads, task);
  }
}

}  // namespace kiln::gemm
