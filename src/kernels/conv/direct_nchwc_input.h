// Internal to kDirectNchwc (direct_nchwc.cc): how a layer's input is prepared for the
// microkernels, a zero-padded copy or a left strip of it, or a strided 1x1's pixels gathered
// chunk by chunk. Not part of the library's interface.
#pragma once

#include <cstddef>

#include "kernels/conv/conv.h"
#include "kernels/conv/conv_ukernels.h"
#include "support/thread_pool.h"

namespace kiln::conv::direct_nchwc {

// The zero-padded copy of the input: n * ceil(C/c) planes of hp x wp pixels (no copy: floats 0).
// strip: only the padded columns [0, wp) of the input's own rows (hp = H), which the first tile
// of each row reads (StripWidth); the other tiles read the input in place.
struct Padded {
  size_t hp = 0, wp = 0;
  size_t floats = 0;
  bool strip = false;
};

// The copy a layer convolves, if any (none: floats 0).
Padded PaddedOf(const ConvParams& p, const ConvNchwcUkernel& uk);

// Copies x (NCHWc: n * ceil(C/c) planes of h x w) into `dst` inside its zero border.
void PadInput(const ConvParams& p, const Padded& g, size_t c, const float* x, float* dst,
              ThreadPool* pool);

// Copies the padded columns [0, g.wp) of every row of x into `dst` (StripWidth), zero outside
// the input.
void StripInput(const ConvParams& p, const Padded& g, size_t c, const float* x, float* dst,
                ThreadPool* pool);

// An unpadded 1x1 at a stride above 1 reads one pixel in stride_h * stride_w: it runs as the
// stride-1 layer over the pixels it reads (one row of OH * OW, where tiles stay full instead of
// cut row by row, with unit-stride loads). Each thread gathers the pixels of the chunk it works
// on into its own buffer, which the chunk's output blocks then read from L2. Gathering the whole
// plane first took 10-15% of a 1x1 s2 256 -> 512 at 56x56 (perf): the memory-bound copy ran
// alone, and its output was read back from L3 by every group of blocks.
bool Gathers(const ConvParams& p);

constexpr size_t kMinChunk = 96, kMaxChunk = 4 * kMinChunk;  // columns of a 1x1 over pixels

// The longest chunk a gathering layer may grow to: kMinChunk doubled while the gathered pixels
// stay within 400 KiB (beside a group's weights in L2), at most kMaxChunk and the plane.
size_t GatherChunkCap(const ConvParams& p, size_t c);

// The workspace floats a gathering layer's threads take (0 for any other layer).
size_t GatherFloats(const ConvParams& p, size_t c, size_t threads);

// Pixels [j0, j1) of the subsampled plane (pixel j: oy = j / OW, ox = j % OW, read at (oy *
// stride_h, ox * stride_w)) of every input block of one image x_n (NCHWc) into dst, a block's
// pixels `cb_stride` floats apart. A pixel's block moves at a size known at compile time: one
// or two vector moves, where a copy of c floats at run time called memmove per pixel.
void SubsampleChunk(const ConvParams& p, size_t c, const float* x_n, size_t j0, size_t j1,
                    float* dst, size_t cb_stride);

}  // namespace kiln::conv::direct_nchwc
