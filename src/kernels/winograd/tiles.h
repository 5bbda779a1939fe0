// The tile grid shared by the NCHW (winograd.cc) and NCHWc (winograd_nchwc.cc) drivers.
#pragma once

#include <cstddef>

#include "kernels/winograd/winograd.h"

namespace kiln::winograd::tiles {

inline constexpr size_t kTile = 6;  // input tile (alpha = m + r - 1)
inline constexpr size_t kOut = 4;   // output tile
static_assert(kPoints == kTile * kTile);

inline size_t DivUp(size_t a, size_t b) { return (a + b - 1) / b; }

struct Shape {
  size_t oh, ow, tiles_h, tiles_w, tiles;  // tiles per image
};

inline Shape MakeShape(const WinogradConvParams& p) {
  Shape s;
  s.oh = p.out_h();
  s.ow = p.out_w();
  s.tiles_h = DivUp(s.oh, kOut);
  s.tiles_w = DivUp(s.ow, kOut);
  s.tiles = s.tiles_h * s.tiles_w;
  return s;
}

// Too few tiles to give every thread blocks of its own (SqueezeNet's 13x13 maps have 16): the
// threads share each block instead, phase by phase (input channels, the 36 GEMMs, output
// channels). Two blocks of 8 tiles ran 1.12x faster on two threads than one of 16 on one.
inline bool SharesBlocks(size_t images, size_t tiles, size_t threads) {
  return threads > 1 && images * tiles < 16 * threads;
}

}  // namespace kiln::winograd::tiles
