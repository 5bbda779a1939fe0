// 6x16 f32 GEMM microkernel for AVX2 + FMA, with every smaller tile (1..6 rows, 1..16 columns)
// handled by its own instance so that edge tiles cost only their own work.
// Register budget of the full tile: 12 ymm accumulators (6 rows x 2 vectors) + 2 for the B row
// + 1 broadcast of A = 15 of 16. Per k step: 2 B loads, 6 broadcasts, 12 FMAs (96 flops in 6
// cycles at two FMA pipes). The tile alone on hot data (6 x 256 A, 256 x 16 B) ran 111 GFLOP/s
// on a Zen 5 EPYC at the AVX2 level, 96% of the FMA peak measured there (115).
// It reads rows of plain A in place (a_rows) as the AVX-512 tile does, and stores a transposed
// tile through 8x8 register transposes. Only a tile with a partial last vector goes through
// vmaskmovps (AMD microcodes its store form). Measured with the driver, KILN_ISA=avx2 against
// oneDNN capped at AVX2 (bench_gemm, 1 thread, three alternating runs, kiln/oneDNN): rows of A
// in place 768x128x768 0.85-0.88 -> 0.96-0.97, 3072x128x768 0.93-0.95 -> 0.99-1.02; the
// vectorized transposed store (with TransposedReadsInPlace) 128x784x1152 0.82-0.83 -> 0.90-0.95,
// 256x196x2304 0.84-0.89 -> 0.93-0.95, 64x3136x576 0.89-0.90 -> 0.94-0.99.
#include <immintrin.h>

#include "kernels/ukernels/avx2/f32_clamp_tile.h"
#include "kernels/ukernels/avx2/f32_transpose8x8.h"
#include "kernels/ukernels/f32_gemm.h"

namespace kiln::ukernels {
namespace {

constexpr int kMr = 6;
// Unpacked B rows lie a page or more apart, where the hardware prefetchers stop: the k loop
// fetches the row this many steps ahead (a hint: it never faults, even past the end of B).
constexpr size_t kPrefetchK = 16;
// The tile that packs B (F32GemmTileParams::pack_b) is the first to read the panel's rows, from
// L3 or memory rather than L2: it fetches them further ahead. Zen 5 at AVX2, 1 thread, normal
// product, median of 21 interleaved rounds against 16 steps: 48 steps 256x196x2304 +1.3%,
// 128x784x1152 +4.1%, 512^3 +1.1%, 1024^3 +0.7%; 32 and 96 steps within a percent of 48.
constexpr size_t kPackPrefetchK = 48;
// A prepacked A (a model's weights, from memory on their first pass) is fetched this many k
// steps ahead: a step reads 24 bytes of the panel, so one line every other step suffices.
constexpr size_t kPrefetchA = 32;
// The longest k loop whose tile fetches its C lines into L1; longer ones fetch them into L2
// (they stream more than L1 holds before the stores).
constexpr size_t kPrefetchCToL1MaxK = 256;

// The tile stored transposed (params->trans_c): C[j * ldc + i]. Each 8-column vector of the
// kRows rows is transposed in registers (rows past kRows zero) into 8 columns of kRows values,
// stored with narrow plain stores (no vmaskmovps). The former stack copy and 96 scalar
// updates cost about 24 k steps of the full tile; this about 8 (ukernel_table.cc, trans_k).
// Inlined: as a call it takes acc by address, and GCC then keeps the accumulators in memory
// through the whole k loop (a third of the speed).
template <int kRows, int kVecs>
[[gnu::always_inline]] inline void StoreTransposed(const __m256 (&acc)[kRows][kVecs], size_t nr, float* c, size_t ldc,
                     const F32GemmTileParams* params) {
  const __m256i rows =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(kRows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256 vmin = _mm256_set1_ps(params->min), vmax = _mm256_set1_ps(params->max);
  const __m256 bm =
      params->bias_m ? _mm256_maskload_ps(params->bias_m, rows) : _mm256_setzero_ps();
  const bool load_c = params->load_c != 0;
  const float* bias_n = params->bias_n;
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) {
    __m256 r[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) r[i] = i < kRows ? acc[i][v] : _mm256_setzero_ps();
    avx2::Transpose8x8(r);
    const size_t cols = nr - 8 * v < 8 ? nr - 8 * v : 8;
#pragma GCC unroll 8
    for (size_t j = 0; j < 8; ++j) {
      if (j >= cols) break;
      float* cj = c + (8 * v + j) * ldc;
      __m256 x = _mm256_add_ps(r[j], bm);
      if (bias_n) x = _mm256_add_ps(x, _mm256_broadcast_ss(bias_n + 8 * v + j));
      if (load_c) x = _mm256_add_ps(x, _mm256_maskload_ps(cj, rows));
      x = _mm256_min_ps(vmax, _mm256_max_ps(vmin, x));  // NaN stays (see Tile)
      avx2::StoreFirst(cj, x, kRows);
    }
  }
}

// Vector v of a row: plain where it is whole (kPartial false, or not the last vector), else
// through the mask.
template <bool kPartial>
[[gnu::always_inline]] inline __m256 Load(const float* p, int v, int vecs, __m256i mask) {
  if (kPartial && v == vecs - 1) return _mm256_maskload_ps(p, mask);
  return _mm256_loadu_ps(p);
}
template <bool kPartial>
[[gnu::always_inline]] inline void Store(float* p, int v, int vecs, __m256i mask, __m256 x) {
  if (kPartial && v == vecs - 1) return _mm256_maskstore_ps(p, mask, x);
  _mm256_storeu_ps(p, x);
}

// The lines of a tile's rows of C (16 floats a row: 2 lines when C is not 64-byte aligned), into
// L1, or with kL2 into L2.
template <int kRows, bool kL2>
[[gnu::always_inline]] inline void PrefetchC(const float* c, size_t ldc, size_t nr) {
#pragma GCC unroll 6
  for (int i = 0; i < kRows; ++i) {
    const char* first = reinterpret_cast<const char*>(c + i * ldc);
    const char* last = reinterpret_cast<const char*>(c + i * ldc + nr - 1);
    if constexpr (kL2) {
      _mm_prefetch(first, _MM_HINT_T1);
      _mm_prefetch(last, _MM_HINT_T1);
    } else {
      _mm_prefetch(first, _MM_HINT_T0);
      _mm_prefetch(last, _MM_HINT_T0);
    }
  }
}

// The k loop. kMode: kPanel (a packed panel, or an A read in place with its k values a_stride
// apart: the transposed product's B^T), kRowsA (rows of A read in place, a[i * lda + k]).
// kPrefetchB: B is read in place (its rows ldb apart), fetched kPrefetchK rows ahead. kPack:
// each row of B read is also stored to `pack`, 16 floats a k (F32GemmTileParams::pack_b): two
// stores a k step beside 12 FMAs, where the driver's separate packing pass read and wrote all
// of B once more. kPackA (rows of A in place only): each A value read is also stored to
// `pack_a`, a panel of kMr floats a k (F32GemmTileParams::pack_a), the driver's A packing.
enum class AMode { kPanel, kRowsA };

template <int kRows, int kVecs, bool kPartial, AMode kMode, bool kPrefetchB, bool kPack,
          bool kPackA>
[[gnu::always_inline]] inline void KLoop(__m256 (&acc)[kRows][kVecs], size_t kc, const float* a,
                                         size_t as, bool prefetch_a, const float* b, size_t ldb,
                                         __m256i last, float* pack, float* pack_a) {
  static_assert(!kPackA || kMode == AMode::kRowsA);
  // Rows of A in place: two row pointers and the stride (row i: base + (i % 3) * stride).
  const size_t rs = as * sizeof(float);
  const char* r0 = reinterpret_cast<const char*>(a);
  const char* r3 = kRows > 3 ? r0 + 3 * rs : r0;
  constexpr size_t kAhead = kPack ? kPackPrefetchK : kPrefetchK;  // rows of B
  auto step = [&](__m256 (&ac)[kRows][kVecs]) __attribute__((always_inline)) {
    __m256 bv[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) bv[v] = Load<kPartial>(b + 8 * v, v, kVecs, last);
    if constexpr (kPack) {
      _mm256_storeu_ps(pack, bv[0]);
      _mm256_storeu_ps(pack + 8, kVecs == 2 ? bv[kVecs - 1] : _mm256_setzero_ps());
      pack += 2 * 8;
    }
    if constexpr (kPrefetchB) {
      _mm_prefetch(reinterpret_cast<const char*>(b + kAhead * ldb), _MM_HINT_T0);
      if constexpr (kVecs == 2) {
        _mm_prefetch(reinterpret_cast<const char*>(b + kAhead * ldb + 15), _MM_HINT_T0);
      }
    }
    if constexpr (kMode == AMode::kPanel) {
      if (prefetch_a) _mm_prefetch(reinterpret_cast<const char*>(a + kPrefetchA * kMr), _MM_HINT_T0);
    }
#pragma GCC unroll 6
    for (int i = 0; i < kRows; ++i) {
      const float* ai;
      if constexpr (kMode == AMode::kRowsA) {
        ai = reinterpret_cast<const float*>((i < 3 ? r0 : r3) + (i % 3) * rs);
      } else {
        ai = a + i;
      }
      const __m256 av = _mm256_broadcast_ss(ai);
      if constexpr (kPackA) _mm_store_ss(pack_a + i, _mm256_castps256_ps128(av));
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) ac[i][v] = _mm256_fmadd_ps(av, bv[v], ac[i][v]);
    }
    if constexpr (kPackA) pack_a += kMr;
    if constexpr (kMode == AMode::kRowsA) {
      r0 += sizeof(float);
      r3 += sizeof(float);
    } else {
      a += as;
    }
    b += ldb;
  };
  // Fewer than 8 accumulators leave the two FMA pipes idle for part of their 4-cycle latency
  // (a 1-vector edge tile of 6 rows: 4 cycles a k step for 6 FMAs): a second set takes the odd
  // k steps, and the two are summed after the loop. Zen 5 at AVX2, 1 thread, median of 21-31
  // interleaved rounds, normal product: 512x49x4608 (a 1-column edge) +2.6%, 256x196x2304 (4
  // columns) +1.7%, 64x7x2000 68.8 -> 83.4 GFLOP/s, 100x4x1000 39.9 -> 47.8, 2x256x256 52.4 ->
  // 59.4; 1..3-row products over long rows of B (memory-bound) level.
  if constexpr (kRows * kVecs <= 6) {
    __m256 odd[kRows][kVecs];
#pragma GCC unroll 6
    for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) odd[i][v] = _mm256_setzero_ps();
    }
    size_t k = 0;
    for (; k + 2 <= kc; k += 2) {
      step(acc);
      step(odd);
    }
    if (k < kc) step(acc);
#pragma GCC unroll 6
    for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[i][v] = _mm256_add_ps(acc[i][v], odd[i][v]);
    }
  } else {
    for (size_t k = 0; k < kc; ++k) step(acc);
  }
}

// The k loop for B's three forms: read in place and packed (pack, F32GemmTileParams::pack_b),
// read in place (rows ldb apart), or a packed panel (ldb = 16).
template <int kRows, int kVecs, bool kPartial, AMode kMode, bool kPackA>
[[gnu::always_inline]] inline void KLoopB(__m256 (&acc)[kRows][kVecs], size_t kc, const float* a,
                                          size_t as, bool prefetch_a, const float* b, size_t ldb,
                                          __m256i last, float* pack, float* pack_a) {
  if (pack) {
    KLoop<kRows, kVecs, kPartial, kMode, true, true, kPackA>(acc, kc, a, as, prefetch_a, b, ldb,
                                                             last, pack, pack_a);
  } else if (ldb != 16) {
    KLoop<kRows, kVecs, kPartial, kMode, true, false, kPackA>(acc, kc, a, as, prefetch_a, b, ldb,
                                                              last, nullptr, pack_a);
  } else {
    KLoop<kRows, kVecs, kPartial, kMode, false, false, kPackA>(acc, kc, a, as, prefetch_a, b,
                                                               ldb, last, nullptr, pack_a);
  }
}

// kRows rows; kVecs = 1 or 2 vectors of 8 columns; kPartial: the last vector holds fewer than 8
// columns (`last` masks them; its B vector is loaded through the mask too, as a row of unpacked
// B may end there).
template <int kRows, int kVecs, bool kPartial>
void Tile(size_t nr, size_t kc, const float* a, const float* b, size_t ldb, float* c, size_t ldc,
          const F32GemmTileParams* params, __m256i last) {
  // The parameters the epilogue reads, in locals up front: a store to C may alias *params
  // (floats) for all the compiler knows.
  const bool trans = params->trans_c != 0, load_c = params->load_c != 0;
  const float* bias_m = trans ? nullptr : params->bias_m;
  const float* bias_n = trans ? nullptr : params->bias_n;
  // The accumulators start from the biases (the transposed store adds its own).
  __m256 bn[kVecs];
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) {
    bn[v] = bias_n ? Load<kPartial>(bias_n + 8 * v, v, kVecs, last) : _mm256_setzero_ps();
  }
  __m256 acc[kRows][kVecs];
#pragma GCC unroll 6
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      acc[i][v] = bias_m ? _mm256_add_ps(bn[v], _mm256_broadcast_ss(bias_m + i)) : bn[v];
    }
  }
  // C's lines, fetched now so that they arrive during the k loop rather than stalling the
  // stores after it (C of a 1x1 convolution is megabytes, often out of L3).
  if (!trans) {
    if (kc <= kPrefetchCToL1MaxK) {
      PrefetchC<kRows, false>(c, ldc, nr);
    } else {
      PrefetchC<kRows, true>(c, ldc, nr);
    }
  }
  float* pack_b = params->pack_b;
  if (params->a_rows && params->pack_a) {
    KLoopB<kRows, kVecs, kPartial, AMode::kRowsA, true>(acc, kc, a, params->a_rows, false, b, ldb,
                                                        last, pack_b, params->pack_a);
  } else if (params->a_rows) {
    KLoopB<kRows, kVecs, kPartial, AMode::kRowsA, false>(acc, kc, a, params->a_rows, false, b,
                                                         ldb, last, pack_b, nullptr);
  } else {
    KLoopB<kRows, kVecs, kPartial, AMode::kPanel, false>(
        acc, kc, a, params->a_stride ? params->a_stride : kMr, params->prefetch_a != 0, b, ldb,
        last, pack_b, nullptr);
  }

  if (trans) return StoreTransposed<kRows, kVecs>(acc, nr, c, ldc, params);
  // Each step over the whole tile behind one test (ClampTile: the bounds, NaN).
  if (load_c) {
#pragma GCC unroll 6
    for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) {
        acc[i][v] = _mm256_add_ps(acc[i][v], Load<kPartial>(c + i * ldc + 8 * v, v, kVecs, last));
      }
    }
  }
  avx2::ClampTile(acc, &params->min, &params->max);
#pragma GCC unroll 6
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) Store<kPartial>(c + i * ldc + 8 * v, v, kVecs, last, acc[i][v]);
  }
}

template <int kVecs, bool kPartial>
void Rows(size_t mr, size_t nr, size_t kc, const float* a, const float* b, size_t ldb, float* c,
          size_t ldc, const F32GemmTileParams* p, __m256i last) {
  switch (mr) {
    case 1: return Tile<1, kVecs, kPartial>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 2: return Tile<2, kVecs, kPartial>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 3: return Tile<3, kVecs, kPartial>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 4: return Tile<4, kVecs, kPartial>(nr, kc, a, b, ldb, c, ldc, p, last);
    case 5: return Tile<5, kVecs, kPartial>(nr, kc, a, b, ldb, c, ldc, p, last);
    default: return Tile<6, kVecs, kPartial>(nr, kc, a, b, ldb, c, ldc, p, last);
  }
}

}  // namespace

void f32_gemm_6x16__avx2_fma(size_t mr, size_t nr, size_t kc, const float* a, const float* b,
                             size_t ldb, float* c, size_t ldc, const F32GemmTileParams* params) {
  const int tail = static_cast<int>(nr > 8 ? nr - 8 : nr);  // 1..8 columns in the last vector
  const __m256i last =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(tail), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  if (nr == 16) {
    Rows<2, false>(mr, nr, kc, a, b, ldb, c, ldc, params, last);
  } else if (nr > 8) {
    Rows<2, true>(mr, nr, kc, a, b, ldb, c, ldc, params, last);
  } else if (nr == 8) {
    Rows<1, false>(mr, nr, kc, a, b, ldb, c, ldc, params, last);
  } else {
    Rows<1, true>(mr, nr, kc, a, b, ldb, c, ldc, params, last);
  }
}

}  // namespace kiln::ukernels
