// Declarations of the f32 GEMM and activation microkernels of every ISA level. The table in
// kernels/gemm/ukernel_table.h lists them; nothing else should call them by name.
//
// The microkernel contract (DESIGN.md): no allocation, no OS calls, no globals, no CPU queries.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::ukernels {

// What a GEMM microkernel does after the k loop, on the tile still in registers.
struct F32GemmTileParams {
  // Nonzero: C tile is loaded and the product added to it; zero: C is overwritten.
  uint32_t load_c;
  // Null, or MR values added to the rows of the tile (per output channel in a conv).
  const float* bias_m;
  // Null, or NR values added to the columns of the tile (a Gemm/MatMul bias).
  const float* bias_n;
  // Clamp applied last (ReLU: 0, +inf; ReLU6: 0, 6; none: -inf, +inf).
  float min;
  float max;
  // Nonzero: the tile is stored transposed, element (i, j) at c[j * ldc + i] (load_c reads it
  // there too). Lets the driver run C^T = B^T A^T with the vector lanes along M when N is too
  // small or odd to fill them (a 1x1 convolution over 7x7 pixels: 49 = 32 + 17 columns).
  uint32_t trans_c;
  // Floats from one k of A to the next: 0 means MR (a packed panel); otherwise A is read in place
  // as a[k * a_stride + i], and only its rows i < mr are read (the transposed product reads the
  // rows of plain B this way instead of packing them).
  size_t a_stride;
  // Nonzero (kernels whose table row has a_rows set; a_stride is then 0): A is read in place
  // row by row, a[i * a_rows + k], only rows i < mr (plain row-major A, unpacked).
  size_t a_rows;
  // Nonzero: A is a packed panel that may still be in memory rather than cache (a prepacked
  // weight matrix on its first pass; a model's weights exceed L3), so kernels that can prefetch
  // it ahead of the k loop do. A hint only.
  uint32_t prefetch_a;
  // Nonzero: B is read in place (rows ldb apart) and this tile is the first in the call to read
  // its rows, which then likely come from memory (a B of megabytes), so kernels that can fetch
  // them further ahead do. A hint only.
  uint32_t first_pass;
  // Null, or rows of B (ldb apart) that a later tile reads, which the kernel may pull into L2
  // while it runs, up to prefetch_b_rows of them from there. A hint only.
  const float* prefetch_b;
  size_t prefetch_b_rows;
  // Null, or (kernels whose table row has fused_pack_b set) where the tile, reading plain B in
  // place (rows ldb apart), stores the rows it reads as a packed panel: pack_b[k * NR + j] for
  // k < kc, zero for j >= nr. The driver's B packing, fused into the first tile on each panel.
  float* pack_b;
  // Null, or (kernels whose table row has fused_pack_a set; a_rows is then nonzero) where the
  // tile, reading rows of plain A in place, stores the values it reads as a packed panel:
  // pack_a[k * MR + i] for i < mr (rows past mr are left as they are). The driver's A packing,
  // fused into the first tile on each row panel.
  float* pack_a;
};

// C[0:mr, 0:nr] (row stride ldc floats) = op(C) + A * B, then the tile epilogue, where
//   1 <= mr <= MR, 1 <= nr <= NR, kc >= 1;
//   A is a packed panel, k-major: a[k * MR + i], kc * MR floats (rows past mr may hold anything),
//   or with params->a_stride, a[k * a_stride + i] for i < mr only, or with params->a_rows,
//   a[i * a_rows + k] for i < mr only;
//   B row k is b + k * ldb: a packed panel (ldb = NR, zero-padded) or, for plain row-major B,
//   B itself (ldb = its row stride), of which only columns [0, nr) are read;
//   bias_m has mr values and bias_n has nr values.
// Nothing outside C[0:mr, 0:nr] is read or written, so edge tiles need no copies.
// With params->trans_c the same holds for the transposed tile: C[j * ldc + i], j < nr, i < mr.
using F32GemmFn = void (*)(size_t mr, size_t nr, size_t kc, const float* a, const float* b,
                           size_t ldb, float* c, size_t ldc, const F32GemmTileParams* params);

// Matrix-vector: y[i * ldy] = op(y) + dot(A row i, x) for i < m (A row-major, lda; x has k
// contiguous values; k >= 1), then bias_m[i] / bias_n[0] and the clamp of `params`.
using F32GemvFn = void (*)(size_t m, size_t k, const float* a, size_t lda, const float* x,
                           float* y, size_t ldy, const F32GemmTileParams* params);

// Packs rows [0, rows) x k [0, kc) of plain row-major A (row stride lda) into one panel,
// dst[k * mr + i], with rows [rows, mr) zeroed; rows <= mr.
using F32PackAFn = void (*)(size_t rows, size_t kc, const float* a, size_t lda, size_t mr,
                            float* dst);


// scalar
void f32_gemm_4x8__scalar(size_t mr, size_t nr, size_t kc, const float* a, const float* b,
                          size_t ldb, float* c, size_t ldc, const F32GemmTileParams* params);
void f32_gemv__scalar(size_t m, size_t k, const float* a, size_t lda, const float* x, float* y,
                      size_t ldy, const F32GemmTileParams* params);

// avx2 + fma
void f32_gemm_6x16__avx2_fma(size_t mr, size_t nr, size_t kc, const float* a, const float* b,
                             size_t ldb, float* c, size_t ldc, const F32GemmTileParams* params);
void f32_gemv__avx2_fma(size_t m, size_t k, const float* a, size_t lda, const float* x, float* y,
                        size_t ldy, const F32GemmTileParams* params);
void f32_packa__avx2(size_t rows, size_t kc, const float* a, size_t lda, size_t mr, float* dst);

// avx512 f/bw/dq/vl
void f32_gemm_14x32__avx512f(size_t mr, size_t nr, size_t kc, const float* a, const float* b,
                             size_t ldb, float* c, size_t ldc, const F32GemmTileParams* params);
void f32_gemm_14x32__avx512f_zen4(size_t mr, size_t nr, size_t kc, const float* a,
                                  const float* b, size_t ldb, float* c, size_t ldc,
                                  const F32GemmTileParams* params);
void f32_gemv__avx512f(size_t m, size_t k, const float* a, size_t lda, const float* x, float* y,
                       size_t ldy, const F32GemmTileParams* params);
void f32_packa__avx512f(size_t rows, size_t kc, const float* a, size_t lda, size_t mr,
                        float* dst);

}  // namespace kiln::ukernels
