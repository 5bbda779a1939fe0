// Reorders between plain NCHW and the channel-blocked NCHWc layout of kDirectNchwc:
// [N][ceil(C / c)][H][W][c], where the channels past C of the last block are zero.
#pragma once

#include <cstddef>

#include "support/thread_pool.h"

namespace kiln::conv {

// Floats in an NCHWc tensor of this shape.
inline size_t NchwcSize(size_t n, size_t c, size_t h, size_t w, size_t block) {
  return n * ((c + block - 1) / block) * block * h * w;
}

// dst holds NchwcSize(n, c, h, w, block) floats; the padding channels are written as zeros.
void NchwToNchwc(size_t n, size_t c, size_t h, size_t w, size_t block, const float* src, float* dst,
                 ThreadPool* pool = nullptr);

// dst holds n * c * h * w floats; the padding channels of src are ignored.
void NchwcToNchw(size_t n, size_t c, size_t h, size_t w, size_t block, const float* src, float* dst,
                 ThreadPool* pool = nullptr);

}  // namespace kiln::conv
