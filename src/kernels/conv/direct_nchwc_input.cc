// The input preparation of kDirectNchwc (direct_nchwc_input.h says what each function does).
#include "kernels/conv/direct_nchwc_input.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/conv/direct_nchwc_calls.h"

namespace kiln::conv::direct_nchwc {
namespace {

// Whether a padded layer convolves a padded copy. The copy pays where the clipped runs at the
// borders are a large share of a row (outputs up to 32 wide) or where it is cheap against the
// multiplies (M * KH * KW * OH * OW / (Hp * Wp) >= 256 per copied value). Elsewhere, runs of
// columns with the same clipped taps: a 3x3 16->16 at 224x224 runs 10% slower with the copy (6.5
// MB that leave the caches), and a 3x3 s2 16->16 at 112x112 9% (bench_conv, AVX-512).
bool CopyPays(const ConvParams& p, size_t c) {
  if (!(p.pad_top || p.pad_left || p.pad_bottom || p.pad_right)) return false;
  if (p.out_w() <= 32) return true;
  const double mults = static_cast<double>((p.m + c - 1) / c * c * p.kh * p.kw) *
                       static_cast<double>(p.out_h() * p.out_w());
  const double copied = static_cast<double>(p.h + p.pad_top + p.pad_bottom) *
                        static_cast<double>(p.w + p.pad_left + p.pad_right);
  return mults >= 256.0 * copied;
}

// The padded columns a left strip holds, or 0 where the whole input is copied. Where every
// window after a row's first tile lies inside the input's columns (3x3 s2 pad 1 on an even
// width), only the first tile's columns are copied, and rows are clipped in place. The whole
// copy took 3-5% of ResNet-50's 3x3 s2 layers; conv::Run, median of 21 rounds, copy -> strip:
// 128->128 at 56x56 254 -> 258 GFLOP/s, 256->256 at 28x28 248 -> 249 (17 of 30 columns).
// Clipping the first column in place instead (a 1-column call) ran at 228 and 242.
size_t StripWidth(const ConvParams& p, const ConvNchwcUkernel& uk) {
  const size_t c = uk.block, ow = p.out_w(), reach = (p.kw - 1) * p.dilation_w;
  // One output row takes the 1x1's groups (RunDirectNchwc), not the rows' ones planned here.
  if (ow == 0 || p.out_h() < 2 || p.kw == 1 || p.pad_left == 0 || uk.tile == 0) return 0;
  if ((ow - 1) * p.stride_w + reach >= p.pad_left + p.w) return 0;  // the right border pads too
  const BlockGroups groups =
      BlockGroups::Of((p.m + c - 1) / c, RowGroupBlocks(p, uk), HalfLast(p, c), true);
  // The first tiles of a row over the groups: the strip holds the widest, and the columns after
  // the narrowest must start inside the input.
  size_t widest = 0, narrowest = ow;
  for (size_t i = 0; i < groups.count; ++i) {
    const size_t first = TileCut(uk, groups.Size(i)).End(ow, 0);
    widest = std::max(widest, first);
    narrowest = std::min(narrowest, first);
  }
  if (widest >= ow || narrowest * p.stride_w < p.pad_left) return 0;
  const size_t width = (widest - 1) * p.stride_w + reach + 1;
  return width * 4 <= (p.w + p.pad_left + p.pad_right) * 3 ? width : 0;
}

}  // namespace

Padded PaddedOf(const ConvParams& p, const ConvNchwcUkernel& uk) {
  const size_t c = uk.block;
  Padded g;
  if (!CopyPays(p, c)) return g;
  g.hp = p.h + p.pad_top + p.pad_bottom;
  g.wp = p.w + p.pad_left + p.pad_right;
  if (const size_t strip = StripWidth(p, uk); strip != 0) {
    g.hp = p.h;
    g.wp = strip;
    g.strip = true;
  }
  g.floats = p.n * ((p.c + c - 1) / c) * g.hp * g.wp * c;
  return g;
}

void PadInput(const ConvParams& p, const Padded& g, size_t c, const float* x, float* dst,
              ThreadPool* pool) {
  const size_t rows = p.n * ((p.c + c - 1) / c) * g.hp;
  const size_t threads = std::min(ThreadCount(pool), rows);
  ParallelFor(pool, threads, [&](size_t t) {
    for (size_t r = rows * t / threads; r < rows * (t + 1) / threads; ++r) {
      const size_t plane = r / g.hp, row = r % g.hp;
      float* d = dst + r * g.wp * c;
      if (row < p.pad_top || row >= p.pad_top + p.h) {
        std::fill_n(d, g.wp * c, 0.0f);
        continue;
      }
      std::fill_n(d, p.pad_left * c, 0.0f);
      std::memcpy(d + p.pad_left * c, x + (plane * p.h + row - p.pad_top) * p.w * c,
                  p.w * c * sizeof(float));
      std::fill_n(d + (p.pad_left + p.w) * c, p.pad_right * c, 0.0f);
    }
  });
}

void StripInput(const ConvParams& p, const Padded& g, size_t c, const float* x, float* dst,
                ThreadPool* pool) {
  const size_t rows = p.n * ((p.c + c - 1) / c) * p.h;
  const size_t threads = std::min(ThreadCount(pool), rows);
  const size_t lo = std::min(p.pad_left, g.wp), hi = std::min(g.wp, p.pad_left + p.w);
  ParallelFor(pool, threads, [&](size_t t) {
    for (size_t r = rows * t / threads; r < rows * (t + 1) / threads; ++r) {
      float* d = dst + r * g.wp * c;
      std::fill_n(d, lo * c, 0.0f);
      std::memcpy(d + lo * c, x + r * p.w * c, (hi - lo) * c * sizeof(float));
      std::fill_n(d + hi * c, (g.wp - hi) * c, 0.0f);
    }
  });
}

bool Gathers(const ConvParams& p) {
  return p.kh == 1 && p.kw == 1 && (p.stride_h > 1 || p.stride_w > 1) && !p.pad_top &&
         !p.pad_left && !p.pad_bottom && !p.pad_right;
}

// A chunk's gathered pixels stay within this (with the weights of a group of blocks, in L2).
constexpr size_t kGatherBytes = 400u << 10;

size_t GatherChunkCap(const ConvParams& p, size_t c) {
  const size_t pixel = (p.c + c - 1) / c * c * sizeof(float);
  size_t cap = kMinChunk;
  while (cap * 2 <= kMaxChunk && cap * 2 * pixel <= kGatherBytes) cap *= 2;
  return std::min(cap, p.out_h() * p.out_w());
}

size_t GatherFloats(const ConvParams& p, size_t c, size_t threads) {
  if (!Gathers(p)) return 0;
  return std::max<size_t>(threads, 1) * ((p.c + c - 1) / c) * c * GatherChunkCap(p, c);
}

void SubsampleChunk(const ConvParams& p, size_t c, const float* x_n, size_t j0, size_t j1,
                    float* dst, size_t cb_stride) {
  // The shape in locals: out_h() is a call into another file, and the moves may alias `p` for
  // all the compiler knows; at each pixel of the prefetch loop below, out_h() took 2% of a 1x1 s2
  // 256 -> 512 at 56x56 (perf).
  const size_t ow = p.out_w(), oh = p.out_h(), cb_n = (p.c + c - 1) / c;
  const size_t plane_px = p.h * p.w, row_px = p.stride_h * p.w, sw = p.stride_w;
  // block: an integral_constant for the blocks the microkernels use, folded into the moves.
  auto copy = [&](auto block) {
    const size_t kc = block;
    for (size_t cb = 0; cb < cb_n; ++cb) {
      const float* plane = x_n + cb * plane_px * kc;
      float* d = dst + cb * cb_stride;
      for (size_t j = j0; j < j1;) {
        const size_t oy = j / ow, ox0 = j % ow, ox1 = std::min(ow, ox0 + (j1 - j));
        const float* src = plane + oy * row_px * kc;
        // The next row's pixels, while this one's move: the stride prefetcher retrains on
        // every short row (+2-3% on 256 -> 512 at 56x56).
        for (size_t ox = ox0; oy + 1 < oh && ox < ox1; ++ox) {
          __builtin_prefetch(src + (row_px + ox * sw) * kc, 0, 3);
        }
        for (size_t ox = ox0; ox < ox1; ++ox, d += kc) {
          std::memcpy(d, src + ox * sw * kc, kc * sizeof(float));
        }
        j += ox1 - ox0;
      }
    }
  };
  if (c == 16) {
    copy(std::integral_constant<size_t, 16>{});
  } else if (c == 8) {
    copy(std::integral_constant<size_t, 8>{});
  } else {
    copy(c);
  }
}

}  // namespace kiln::conv::direct_nchwc
