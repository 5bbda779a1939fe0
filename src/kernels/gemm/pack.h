// Packing into microkernel panels. Source element (r, c) is src[r * rs + c * cs], so one routine
// serves both the plain and the transposed layout of an operand.
#pragma once

#include <cstddef>

namespace kiln::gemm {

// A block: rows [0, rows) x k [0, kc) into ceil(rows / mr) panels, panel p at
// dst + p * panel_stride holding dst[kk * mr + i] = A(p * mr + i, kk); rows past `rows` are zero.
void PackAPanels(const float* src, size_t rs, size_t cs, size_t rows, size_t kc, size_t mr,
                 float* dst, size_t panel_stride);

// B block: k [0, kc) x cols [0, cols) into ceil(cols / nr) panels, panel p at
// dst + p * panel_stride holding dst[kk * nr + j] = B(kk, p * nr + j); cols past `cols` are zero.
void PackBPanels(const float* src, size_t rs, size_t cs, size_t kc, size_t cols, size_t nr,
                 float* dst, size_t panel_stride);

}  // namespace kiln::gemm
