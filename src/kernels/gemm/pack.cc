#include "kernels/gemm/pack.h"

#include <algorithm>
#include <cstring>

namespace kiln::gemm {
namespace {

// A full panel of plain A with MR known at compile time: the row loop unrolls into MR loads and
// stores at fixed offsets. (With MR and the row count at run time it took 4.5 cycles a float,
// a quarter of the time of 3072x128x768; reading row by row measured slower still.)
template <size_t kMr>
void PackAFull(const float* s, size_t rs, size_t kc, float* d) {
  for (size_t kk = 0; kk < kc; ++kk, d += kMr) {
#pragma GCC unroll 16
    for (size_t i = 0; i < kMr; ++i) d[i] = s[i * rs + kk];
  }
}

// A full panel of A stored transposed (each k a contiguous run of kMr rows): the B^T operand of
// the transposed product, packed on every call, so worth a fixed-size copy per k (the generic
// loop, with the row stride at run time, copied a float at a time).
template <size_t kMr>
void PackATransFull(const float* s, size_t cs, size_t kc, float* d) {
  for (size_t kk = 0; kk < kc; ++kk, d += kMr, s += cs) {
#pragma GCC unroll 16
    for (size_t i = 0; i < kMr; ++i) d[i] = s[i];
  }
}

bool TryPackATransFull(const float* s, size_t cs, size_t kc, size_t mr, float* d) {
  switch (mr) {
    case 4:
      PackATransFull<4>(s, cs, kc, d);
      return true;
    case 6:
      PackATransFull<6>(s, cs, kc, d);
      return true;
    case 14:
      PackATransFull<14>(s, cs, kc, d);
      return true;
    default:
      return false;
  }
}

bool TryPackAFull(const float* s, size_t rs, size_t kc, size_t mr, float* d) {
  switch (mr) {
    case 4:
      PackAFull<4>(s, rs, kc, d);
      return true;
    case 6:
      PackAFull<6>(s, rs, kc, d);
      return true;
    case 14:
      PackAFull<14>(s, rs, kc, d);
      return true;
    default:
      return false;
  }
}

// n floats from s to d; the NR of the microkernels at sizes known here, so that the copy is a
// few inline moves rather than a call to memcpy per row piece.
inline void CopyPiece(const float* s, size_t n, float* d) {
  switch (n) {
    case 32: std::memcpy(d, s, 32 * sizeof(float)); return;
    case 16: std::memcpy(d, s, 16 * sizeof(float)); return;
    case 8: std::memcpy(d, s, 8 * sizeof(float)); return;
    default: std::memcpy(d, s, n * sizeof(float));
  }
}

}  // namespace

void PackAPanels(const float* src, size_t rs, size_t cs, size_t rows, size_t kc, size_t mr,
                 float* dst, size_t panel_stride) {
  for (size_t i0 = 0; i0 < rows; i0 += mr, dst += panel_stride) {
    const size_t h = std::min(mr, rows - i0);
    const float* s = src + i0 * rs;
    if (cs == 1) {
      // Plain A: h row streams, each read along k.
      if (h == mr && TryPackAFull(s, rs, kc, mr, dst)) continue;
      for (size_t kk = 0; kk < kc; ++kk) {
        float* d = dst + kk * mr;
        for (size_t i = 0; i < h; ++i) d[i] = s[i * rs + kk];
        for (size_t i = h; i < mr; ++i) d[i] = 0.0f;
      }
    } else {
      // Transposed A (rs == 1): each k is a contiguous run of h values.
      if (h == mr && rs == 1 && TryPackATransFull(s, cs, kc, mr, dst)) continue;
      for (size_t kk = 0; kk < kc; ++kk) {
        float* d = dst + kk * mr;
        const float* sk = s + kk * cs;
        for (size_t i = 0; i < h; ++i) d[i] = sk[i * rs];
        for (size_t i = h; i < mr; ++i) d[i] = 0.0f;
      }
    }
  }
}

void PackBPanels(const float* src, size_t rs, size_t cs, size_t kc, size_t cols, size_t nr,
                 float* dst, size_t panel_stride) {
  if (cs == 1) {
    // Plain B, row by row across all the panels: each row of the block is one sequential read
    // whose NR-wide pieces go to their panels. Panel by panel, every NR floats read started a
    // row rs away that the hardware prefetchers had not seen (software prefetches 12 rows ahead
    // only partly hid it): Sgemm 1024^3 on Zen 5, median of 15 interleaved rounds, 1 thread
    // 242.6 -> 246.9 GFLOP/s, 2 threads 462 -> 471; 2048^3 224.5 -> 227.6.
    const size_t full = cols / nr;
    for (size_t kk = 0; kk < kc; ++kk) {
      const float* row = src + kk * rs;
      float* d = dst + kk * nr;
      for (size_t p = 0; p < full; ++p) CopyPiece(row + p * nr, nr, d + p * panel_stride);
      if (const size_t w = cols - full * nr; w > 0) {
        float* dp = d + full * panel_stride;
        std::memcpy(dp, row + full * nr, w * sizeof(float));
        std::fill(dp + w, dp + nr, 0.0f);
      }
    }
    return;
  }
  for (size_t j0 = 0; j0 < cols; j0 += nr, dst += panel_stride) {
    const size_t w = std::min(nr, cols - j0);
    const float* s = src + j0 * cs;
    // Transposed B (rs == 1): walk each column along k, so reads stay sequential.
    for (size_t j = 0; j < w; ++j) {
      const float* sj = s + j * cs;
      for (size_t kk = 0; kk < kc; ++kk) dst[kk * nr + j] = sj[kk * rs];
    }
    for (size_t kk = 0; kk < kc; ++kk) {
      for (size_t j = w; j < nr; ++j) dst[kk * nr + j] = 0.0f;
    }
  }
}

}  // namespace kiln::gemm
