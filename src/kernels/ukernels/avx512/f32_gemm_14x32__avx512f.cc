// 14x32 f32 GEMM microkernel for AVX-512F, with every smaller tile (1..14 rows, 1..32 columns)
// handled by its own instance so that edge tiles cost only their own work.
// Register budget of the full tile: 28 zmm accumulators (14 rows x 2 vectors) + 2 for the B row
// + 1 for a broadcast A value = 31 of 32. Per k step: 2 B loads (masked: free on AVX-512, and it
// lets B be read unpacked), 14 A broadcasts, 28 FMAs, 2 prefetches.
// Two forms of the A broadcast, one exported function each:
// - f32_gemm_14x32__avx512f: vbroadcastss into a register, then 2 FMAs. A core with two full-width
//   512-bit FMA pipes (Zen 5) does the 28 FMAs in 14 cycles, and an A operand inside each FMA
//   would make that 30 vector loads in 14 cycles, past its 2 a cycle: measured on a Zen 5 EPYC,
//   the tile alone on hot data (14 x 256 A, 256 x 32 B) ran 260 GFLOP/s with register broadcasts
//   against 228 with broadcasts inside the FMAs (peak 265).
// - f32_gemm_14x32__avx512f_zen4: the broadcast inside the FMA ({1to16}), one instruction where
//   GCC would emit two. Zen 4 runs a 512-bit FMA as two 256-bit halves (one a cycle), so its
//   loads have room, and the fewer instructions won: +1% at 1024^3 and 256^3 and +2-6% at
//   768x128x768 in paired runs on a Zen 4 EPYC.
#include <immintrin.h>

#include "kernels/ukernels/avx512/f32_transpose16x16.h"
#include "kernels/ukernels/f32_gemm.h"

// GCC 12's _mm512_max_ps/_mm512_min_ps pass an _mm512_undefined_ps() source that -O3 reports as
// uninitialized; the value is never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kiln::ukernels {
namespace {

constexpr int kMr = 14;
constexpr size_t kPrefetchK = 16, kPrefetchFarK = 32;
// An A read in place with its k values a row of B apart (the transposed product's B^T: a row
// of B a step, each on its own page, from L3 on the tile's first pass) is fetched this many
// steps ahead. Zen 4, bench_gemm, 1 thread, kiln/best, 16 -> 32 steps: with a memory copy loop
// on the other core (taskset) 64x3136x576 0.82 -> 0.90-0.93, 128x784x1152 0.94-0.97 -> 0.98
// (64 steps: 0.86-0.89 and 0.98-0.99); on the host alone 0.87-0.94 -> 0.91-0.97 and 0.96-0.97
// -> 0.98-1.00, 32x12544x288 and 16x12544x96 level.
constexpr size_t kPrefetchInPlaceAK = 32;
// A prepacked A (a model's weights: they stream from memory, as all of them exceed L3) is
// fetched this many k steps ahead, one line a step (a step reads 56 bytes of the panel; the
// panels of one block lie end to end, so the last steps fetch the next tile's). Measured, 1
// thread, 1x1 convolutions cycling through 40 weight copies: 256->1024@14 99 -> 105 GFLOP/s,
// 512->256@28 106 -> 109; 16 steps ahead recovered less, 64 the same.
constexpr size_t kPrefetchA = 32;
// The longest k loop whose tile fetches its C lines into L1; longer ones fetch them into L2.
constexpr size_t kPrefetchCToL1MaxK = 256;

// The tile stored transposed (params->trans_c): each 16-column vector of the kRows rows is
// transposed in registers into up to 16 columns of kRows values, stored as masked row segments
// of C. About 64 shuffles per 16 columns: 2-5% of a 14x32 tile at K = 160..512. Inlined: as an
// out-of-line call (GCC's choice once both broadcast forms instantiated it) it took acc by
// address, and the whole k loop then kept the accumulators on the stack (86 against 236 GFLOP/s).
template <int kRows, int kVecs>
[[gnu::always_inline]] inline void StoreTransposed(const __m512 (&acc)[kRows][kVecs], size_t nr, float* c, size_t ldc,
                     const F32GemmTileParams* params) {
  const __mmask16 rows = static_cast<__mmask16>((1u << kRows) - 1);
  const __m512 vmin = _mm512_set1_ps(params->min);
  const __m512 vmax = _mm512_set1_ps(params->max);
  const __m512 bm =
      params->bias_m ? _mm512_maskz_loadu_ps(rows, params->bias_m) : _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) {
    __m512 r[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) r[i] = i < kRows ? acc[i][v] : _mm512_setzero_ps();
    avx512::Transpose16x16(r);
    const size_t cols = nr - 16 * v < 16 ? nr - 16 * v : 16;
#pragma GCC unroll 16
    for (size_t j = 0; j < 16; ++j) {
      if (j >= cols) break;
      float* cj = c + (16 * v + j) * ldc;
      __m512 x = _mm512_add_ps(r[j], bm);
      if (params->bias_n) x = _mm512_add_ps(x, _mm512_set1_ps(params->bias_n[16 * v + j]));
      if (params->load_c) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(rows, cj));
      x = _mm512_min_ps(vmax, _mm512_max_ps(vmin, x));  // NaN stays (see Tile)
      _mm512_mask_storeu_ps(cj, rows, x);
    }
  }
}

// acc + a[0] * b. By value: GCC kept the accumulators on the stack when a helper took a row of
// them by reference.
template <bool kEmbed>
[[gnu::always_inline]] inline __m512 Fma(__m512 acc, __m512 b, const float* a) {
  if constexpr (kEmbed) {
    // GCC never folds a broadcast into the FMA itself: hence the asm (registers are still
    // allocated by the compiler).
    asm("vfmadd231ps %[a]%{1to16%}, %[b], %[c]" : [c] "+v"(acc) : [b] "v"(b), [a] "m"(*a));
    return acc;
  } else {
    // One vbroadcastss serves the row's two FMAs (GCC merges the two loads).
    return _mm512_fmadd_ps(_mm512_set1_ps(*a), b, acc);
  }
}

// Unpacked B rows lie a page or more apart, where the hardware prefetchers stop: the k loops
// fetch the row kPrefetchK steps ahead (a hint: it never faults, even past the end of B). With
// kFar they also pull rows into L2, the first and last line of one row a step, from `far`:
// - params->first_pass (the tile's own rows come from memory): its own rows kPrefetchFarK steps
//   ahead. A tile on a B panel out of memory (B of 29 MB, 64x12544x576) ran at 48 GFLOP/s
//   without, 73 with (Zen 4). Plain Sgemm in the normal orientation, 1 thread, best of 0.5-s
//   runs, two alternating runs: 64x12544x576 92-93 -> 105-107 GFLOP/s, 64x3136x2304 97-100 ->
//   108, 256x3136x1152 105-106 -> 111, 64x3136x576 (B in L3) 112.5-113.3 -> 113.8; 128x784x1152
//   level. 32 steps ahead beat 20, 24, 40, 48, 64 and 128 on all four.
// - params->prefetch_b: rows of a panel a later tile reads (run.cc, NextPanelShare), one a step
//   for the first prefetch_b_rows steps.
struct FarB {
  const float* p;
  size_t rows;  // the steps that move p on by a row; later ones fetch the same row again
};

template <int kVecs, bool kFar>
[[gnu::always_inline]] inline void PrefetchB(const float* b, size_t ldb, size_t k, FarB& far) {
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) {
    _mm_prefetch(reinterpret_cast<const char*>(b + kPrefetchK * ldb + 16 * v), _MM_HINT_T0);
  }
  if constexpr (kFar) {
    _mm_prefetch(reinterpret_cast<const char*>(far.p), _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(far.p + 16 * kVecs - 1), _MM_HINT_T1);
    far.p += k < far.rows ? ldb : 0;
  }
}

// A row of B read in place, stored as a row of its packed panel (F32GemmTileParams::pack_b):
// two stores a k step beside 28 FMAs, where the driver's separate packing pass read and wrote
// all of B once more. Returns the next row's place.
template <int kVecs>
[[gnu::always_inline]] inline float* Pack(const __m512 (&bv)[kVecs], float* pack) {
  _mm512_storeu_ps(pack, bv[0]);
  _mm512_storeu_ps(pack + 16, kVecs == 2 ? bv[kVecs - 1] : _mm512_setzero_ps());
  return pack + 32;
}

// The k loop over an A read in place from its rows (a[i * lda + k]): no packing at all, which
// for a narrow B (N = 128: each A value serves 4 tiles) cost as much as the gap to oneDNN.
template <int kRows, int kVecs, bool kFar, bool kEmbed, bool kPack = false>
[[gnu::always_inline]] inline void RowsInPlaceK(__m512 (&acc)[kRows][kVecs], size_t kc,
                                                const float* a, size_t lda, const float* b,
                                                size_t ldb, const __mmask16 (&masks)[2],
                                                FarB far, float* pack = nullptr) {
  constexpr int kGroups = (kRows + 2) / 3;
  const size_t rs = lda * sizeof(float);
  const char* p[kGroups];
#pragma GCC unroll 5
  for (int g = 0; g < kGroups; ++g) p[g] = reinterpret_cast<const char*>(a) + 3 * g * rs;
  for (size_t k = 0; k < kc; ++k) {
    __m512 bv[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) bv[v] = _mm512_maskz_loadu_ps(masks[v], b + 16 * v);
    PrefetchB<kVecs, kFar>(b, ldb, k, far);
    if constexpr (kPack) pack = Pack<kVecs>(bv, pack);
#pragma GCC unroll 14
    for (int i = 0; i < kRows; ++i) {
      // Row i's value: p[i / 3] plus 0, 1 or 2 row strides, one x86 address (base + index x 1
      // or 2), so five row pointers and the stride serve all 14 rows.
      const float* ai = reinterpret_cast<const float*>(p[i / 3] + (i % 3) * rs);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[i][v] = Fma<kEmbed>(acc[i][v], bv[v], ai);
    }
#pragma GCC unroll 5
    for (int g = 0; g < kGroups; ++g) p[g] += sizeof(float);
    b += ldb;
  }
}

// The lines of a tile's rows of C (up to 32 floats a row: 3 lines when C is not 64-byte aligned),
// into L1, or with kL2 into L2.
template <int kRows, bool kL2>
[[gnu::always_inline]] inline void PrefetchC(const float* c, size_t ldc, size_t nr) {
#pragma GCC unroll 14
  for (int i = 0; i < kRows; ++i) {
    const float* lines[3] = {c + i * ldc, c + i * ldc + 16, c + i * ldc + nr - 1};
#pragma GCC unroll 3
    for (const float* line : lines) {
      if constexpr (kL2) {
        _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T1);
      } else {
        _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T0);
      }
    }
  }
}

// The k loop over packed A panels (as = MR), or an A read in place with its k values as floats
// apart (a_stride: the transposed product's B^T).
// How PanelK reads A, a template argument so that the k loop carries no test for it: GCC kept
// both tests inside the loop (one of them a load from the stack, three branches a k step). The
// hot 14x32 tile (14 x 256 A, four 256 x 32 B panels), Intel Xeon, four paired runs: 199-220 ->
// 209-223 GFLOP/s; bench_gemm level within its noise.
enum class AIn { kPanel, kPanelFetched, kInPlace };

template <int kRows, int kVecs, bool kFar, bool kEmbed, AIn kA, bool kPack = false>
[[gnu::always_inline]] inline void PanelK(__m512 (&acc)[kRows][kVecs], size_t kc, const float* a,
                                          size_t as, const float* b, size_t ldb,
                                          const __mmask16 (&masks)[2], FarB far,
                                          float* pack = nullptr) {
  for (size_t k = 0; k < kc; ++k) {
    __m512 bv[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) bv[v] = _mm512_maskz_loadu_ps(masks[v], b + 16 * v);
    PrefetchB<kVecs, kFar>(b, ldb, k, far);
    if constexpr (kPack) pack = Pack<kVecs>(bv, pack);
    // The rows of an A read in place (a_stride) are fetched ahead too: kRows floats, one or two
    // lines per k.
    if constexpr (kA == AIn::kInPlace) {
      _mm_prefetch(reinterpret_cast<const char*>(a + kPrefetchInPlaceAK * as), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(a + kPrefetchInPlaceAK * as + kRows - 1),
                   _MM_HINT_T0);
    } else if constexpr (kA == AIn::kPanelFetched) {
      _mm_prefetch(reinterpret_cast<const char*>(a + kPrefetchA * kMr), _MM_HINT_T0);
    }
#pragma GCC unroll 14
    for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[i][v] = Fma<kEmbed>(acc[i][v], bv[v], a + i);
    }
    a += as;
    b += ldb;
  }
}

// PanelK with its A mode chosen once, outside the k loop.
template <int kRows, int kVecs, bool kFar, bool kEmbed, bool kPack = false>
[[gnu::always_inline]] inline void PanelKFor(AIn a_in, __m512 (&acc)[kRows][kVecs], size_t kc,
                                             const float* a, size_t as, const float* b,
                                             size_t ldb, const __mmask16 (&masks)[2], FarB far,
                                             float* pack = nullptr) {
  switch (a_in) {
    case AIn::kInPlace:
      return PanelK<kRows, kVecs, kFar, kEmbed, AIn::kInPlace, kPack>(acc, kc, a, as, b, ldb,
                                                                     masks, far, pack);
    case AIn::kPanelFetched:
      return PanelK<kRows, kVecs, kFar, kEmbed, AIn::kPanelFetched, kPack>(acc, kc, a, as, b,
                                                                          ldb, masks, far, pack);
    case AIn::kPanel:
      return PanelK<kRows, kVecs, kFar, kEmbed, AIn::kPanel, kPack>(acc, kc, a, as, b, ldb, masks,
                                                                   far, pack);
  }
}

// kRows rows; kVecs = 1 or 2 vectors of 16 columns, the last one masked by `last`.
template <int kRows, int kVecs, bool kEmbed>
void Tile(size_t nr, size_t kc, const float* a, const float* b, size_t ldb, float* c, size_t ldc,
          const F32GemmTileParams* params, __mmask16 last) {
  const __mmask16 masks[2] = {kVecs == 1 ? last : __mmask16(0xFFFF), last};
  // The parameters the epilogue reads, in locals up front: a store to C may alias *params
  // (floats) for all the compiler knows.
  const bool trans = params->trans_c != 0, load_c = params->load_c != 0;
  const float* bias_m = trans ? nullptr : params->bias_m;
  const float* bias_n = trans ? nullptr : params->bias_n;
  const float lo = params->min, hi = params->max;
  // The accumulators start from the biases (the transposed store adds its own), so that the
  // epilogue of a plain tile is the clamp it needs, if any, and the stores.
  __m512 bn[kVecs];
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) {
    bn[v] = bias_n ? _mm512_maskz_loadu_ps(masks[v], bias_n + 16 * v) : _mm512_setzero_ps();
  }
  __m512 acc[kRows][kVecs];
#pragma GCC unroll 14
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      acc[i][v] = bias_m ? _mm512_add_ps(bn[v], _mm512_set1_ps(bias_m[i])) : bn[v];
    }
  }
  // The tile's lines of C, fetched now so that they arrive during the k loop rather than
  // stalling the stores after it (C of a 1x1 convolution is megabytes, often out of L3 too).
  // Measured, 1 thread, layers cycling through 16 outputs and weight copies: 64->256@56 79 -> 85
  // GFLOP/s, 128->512@28 94 -> 99, 256->64@56 100 -> 107. Not for the transposed store (its 2
  // lines per column of the tile): 1024->2048@14 s2 ran 3% slower in ResNet-50. A long k loop
  // streams more than L1 holds before the stores, so there they go to L2 (prefetcht1): plain
  // Sgemm, 1 thread, median of 25 interleaved rounds, without -> with: 3072x128x768 108.8 ->
  // 110.3 GFLOP/s, 6144x128x768 106.9 -> 108.6, 1000^3 109.4 -> 111.2 (C of megabytes, its
  // lines out of L3 when the tile stores them); 1024^3, 128x784x1152, 256x196x2304 level.
  if (!params->trans_c) {
    if (kc <= kPrefetchCToL1MaxK) {
      PrefetchC<kRows, false>(c, ldc, nr);
    } else {
      PrefetchC<kRows, true>(c, ldc, nr);
    }
  }
  const AIn a_in = params->a_stride != 0 ? AIn::kInPlace
                   : params->prefetch_a   ? AIn::kPanelFetched
                                          : AIn::kPanel;
  const size_t as = a_in == AIn::kInPlace ? params->a_stride : kMr;
  FarB far{params->prefetch_b, params->prefetch_b_rows};
  if (params->first_pass) far = FarB{b + kPrefetchFarK * ldb, kc};
  const bool far_b = far.p != nullptr;  // the k loop pulls rows of B into L2 from far.p
  if (float* pack = params->pack_b; pack) {
    // The packing tile is the first to read its rows of B: it fetches them far ahead as well.
    if (!far_b) far = FarB{b + kPrefetchFarK * ldb, kc};
    if (params->a_rows) {
      RowsInPlaceK<kRows, kVecs, true, kEmbed, true>(acc, kc, a, params->a_rows, b, ldb, masks,
                                                     far, pack);
    } else {
      PanelKFor<kRows, kVecs, true, kEmbed, true>(a_in, acc, kc, a, as, b, ldb, masks, far, pack);
    }
  } else if (params->a_rows) {
    if (far_b) {
      RowsInPlaceK<kRows, kVecs, true, kEmbed>(acc, kc, a, params->a_rows, b, ldb, masks, far);
    } else {
      RowsInPlaceK<kRows, kVecs, false, kEmbed>(acc, kc, a, params->a_rows, b, ldb, masks, far);
    }
  } else if (far_b) {
    PanelKFor<kRows, kVecs, true, kEmbed>(a_in, acc, kc, a, as, b, ldb, masks, far);
  } else {
    PanelKFor<kRows, kVecs, false, kEmbed>(a_in, acc, kc, a, as, b, ldb, masks, far);
  }

  if (trans) return StoreTransposed<kRows, kVecs>(acc, nr, c, ldc, params);
  // Each step over the whole tile behind one test, and a clamp bound at infinity skipped. The
  // bound is the first operand: vmaxps/vminps return the second where either is NaN, so a NaN
  // stays NaN, as in the reference (with the bound second, a product without clamp turned NaN
  // into -inf through its max against -inf).
  if (load_c) {
#pragma GCC unroll 14
    for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) {
        const __m512 old = _mm512_maskz_loadu_ps(masks[v], c + i * ldc + 16 * v);
        acc[i][v] = _mm512_add_ps(acc[i][v], old);
      }
    }
  }
  if (lo > -__builtin_inff()) {
    const __m512 vmin = _mm512_set1_ps(lo);
#pragma GCC unroll 14
    for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[i][v] = _mm512_max_ps(vmin, acc[i][v]);
    }
  }
  if (hi < __builtin_inff()) {
    const __m512 vmax = _mm512_set1_ps(hi);
#pragma GCC unroll 14
    for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[i][v] = _mm512_min_ps(vmax, acc[i][v]);
    }
  }
#pragma GCC unroll 14
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      _mm512_mask_storeu_ps(c + i * ldc + 16 * v, masks[v], acc[i][v]);
    }
  }
}

template <int kVecs, bool kEmbed>
void Rows(size_t mr, size_t nr, size_t kc, const float* a, const float* b, size_t ldb, float* c,
          size_t ldc, const F32GemmTileParams* p, __mmask16 last) {
  switch (mr) {
    case 1: return Tile<1, kVecs, kEmbed>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 2: return Tile<2, kVecs, kEmbed>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 3: return Tile<3, kVecs, kEmbed>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 4: return Tile<4, kVecs, kEmbed>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 5: return Tile<5, kVecs, kEmbed>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 6: return Tile<6, kVecs, kEmbed>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 7: return Tile<7, kVecs, kEmbed>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 8: return Tile<8, kVecs, kEmbed>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 9: return Tile<9, kVecs, kEmbed>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 10: return Tile<10, kVecs, kEmbed>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 11: return Tile<11, kVecs, kEmbed>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 12: return Tile<12, kVecs, kEmbed>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 13: return Tile<13, kVecs, kEmbed>(nr, kc, a, b, ldb, c, ldc, p, last);
    default: return Tile<14, kVecs, kEmbed>(nr, kc, a, b, ldb, c, ldc, p, last);
  }
}

template <bool kEmbed>
void Gemm(size_t mr, size_t nr, size_t kc, const float* a, const float* b, size_t ldb, float* c,
          size_t ldc, const F32GemmTileParams* params) {
  const size_t tail = nr > 16 ? nr - 16 : nr;  // 1..16 columns in the last vector
  const __mmask16 last = static_cast<__mmask16>((1u << tail) - 1);
  if (nr > 16) {
    Rows<2, kEmbed>(mr, nr, kc, a, b, ldb, c, ldc, params, last);
  } else {
    Rows<1, kEmbed>(mr, nr, kc, a, b, ldb, c, ldc, params, last);
  }
}

}  // namespace

void f32_gemm_14x32__avx512f(size_t mr, size_t nr, size_t kc, const float* a, const float* b,
                             size_t ldb, float* c, size_t ldc, const F32GemmTileParams* params) {
  Gemm<false>(mr, nr, kc, a, b, ldb, c, ldc, params);
}

void f32_gemm_14x32__avx512f_zen4(size_t mr, size_t nr, size_t kc, const float* a,
                                  const float* b, size_t ldb, float* c, size_t ldc,
                                  const F32GemmTileParams* params) {
  Gemm<true>(mr, nr, kc, a, b, ldb, c, ldc, params);
}

}  // namespace kiln::ukernels
