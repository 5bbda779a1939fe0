// Internal to kernels/gemm: what the driver (gemm.cc) and the packers of operands
// (packed.cc) share. Not part of the library's interface.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include "kernels/gemm/gemm.h"
#include "kernels/gemm/ukernel_table.h"

namespace kiln::gemm {

struct PackedMatrixAccess {
  static PackedMatrix Make(size_t rows, size_t cols, size_t panel, IsaLevel isa, bool is_a,
                           std::shared_ptr<const float> data) {
    PackedMatrix p;
    p.rows_ = rows;
    p.cols_ = cols;
    p.panel_ = panel;
    p.isa_ = isa;
    p.is_a_ = is_a;
    p.data_ = std::move(data);
    return p;
  }
  static bool IsA(const PackedMatrix& p) { return p.is_a_; }
};

// The transposed product reads its A (B^T) in place rather than packing it when each tile row
// serves at most this many columns of panels (M <= 128 before turning): the packing then costs
// more than the reuse saves. Counted in columns, not panels, as the rule was measured with the
// AVX-512 tile (4 panels of 32); at AVX2's NR = 16, 8 panels: 128x784x1152 (KILN_ISA=avx2, 1
// thread, bench_gemm) 0.84 -> 0.92 of oneDNN.
constexpr size_t kInPlaceMaxColumns = 128;
inline bool TransposedReadsInPlace(size_t nr, size_t m) {
  return (m + nr - 1) / nr * nr <= kInPlaceMaxColumns;
}

// Whether the microkernel reads plain B in place well over a long k loop, with its rows
// row_bytes apart (run.cc explains the rule: whole lines, no 2 KiB aliasing).
bool LongRowsInPlace(const GemmUkernel& uk, size_t row_bytes);

// Whether a plain K x N B is too large for the last-level cache to keep between calls (more
// than half of it: A, C and other processes' data share the rest), so its first pass comes
// from memory.
bool BFromMemory(size_t k, size_t n);

// Whether C^T = B^T * A^T should run instead of C = A * B (gemm.cc explains the model).
// b_rows_plain: B is plain with contiguous rows. a_prepacked: A is packed once ahead (PackA), so
// the choice costs no packing either way.
bool PreferTransposed(const GemmUkernel& uk, size_t m, size_t n, size_t k, bool b_rows_plain,
                      bool a_prepacked = false);

// An error unless ld >= need.
Status CheckLd(const char* what, size_t ld, size_t need);

// The microkernel row for `isa` (capped by the CPU), or the best one.
const GemmUkernel& KernelFor(const std::optional<IsaLevel>& isa);

}  // namespace kiln::gemm
