// Winograd F(4x4, 3x3) on the channel-blocked layout NCHWc (PreparedWinograd with block() > 1),
// so that a network whose other layers run NCHWc keeps its 3x3 layers there too, without
// reorders around them.
//
// Per block of tiles, as the NCHW driver (winograd.cc), but with the channels innermost: each
// vector holds cb channels of one pixel, so a tile's 36 input vectors (6 rows of 6 pixels) are
// transformed in registers, with no gather or scatter, into V[p]^T (tiles x Cp, channels
// contiguous); the 36 GEMMs are O[p]^T (tiles x Mp) = V[p]^T U[p]^T with U[p]^T packed as B
// once; and each tile's 36 output vectors become its 4x4 pixels of cb output channels, written
// straight into y. Cp and Mp are C and M rounded up to the block: the padding channels of x are
// multiplied by zero weights (whatever they hold, unless it is inf or NaN), and those of y get
// act(0).
#include <algorithm>
#include <cstring>
#include <mutex>

#include "kernels/ukernels/f32_winograd.h"
#include "kernels/winograd/tiles.h"
#include "kernels/winograd/winograd.h"

namespace kiln::winograd {
namespace {

using namespace tiles;  // NOLINT(build/namespaces): the grid helpers shared with winograd.cc

constexpr size_t kMaxBlock = 16;

struct BlockedTransforms {
  ukernels::F32WinoInputCFn input = nullptr;
  ukernels::F32WinoOutputCFn output = nullptr;
};

// The transforms for `block` lanes at `isa`; null where that pair has none (16 lanes below
// AVX-512).
BlockedTransforms BlockedTransformsFor(IsaLevel isa, size_t block) {
  if (block == 16) {
    if (isa < IsaLevel::kAvx512) return {};
    return {ukernels::f32_wino_input_c16__avx512f, ukernels::f32_wino_output_c16__avx512f};
  }
  if (block != 8) return {};
  if (isa >= IsaLevel::kAvx2) {
    return {ukernels::f32_wino_input_c8__avx2, ukernels::f32_wino_output_c8__avx2};
  }
  return {ukernels::f32_wino_input_c8__scalar, ukernels::f32_wino_output_c8__scalar};
}

}  // namespace

// One thread's workspace: V^T and O^T of a block of tiles.
size_t PreparedWinograd::SlotFloatsNchwc(size_t tb) const {
  const size_t cp = DivUp(c_, block_) * block_, mp = DivUp(m_, block_) * block_;
  return kPoints * tb * (cp + mp);
}

Status PreparedWinograd::RunNchwc(const WinogradConvParams& p, const float* x, const float* bias,
                                  float lo, float hi, ukernels::F32VUnaryParamFn act, float* y,
                                  ThreadPool* pool, float* workspace) const {
  const BlockedTransforms tf = BlockedTransformsFor(isa_, block_);
  if (!tf.input) {
    return Status::Error("winograd: no ", block_, "-channel transforms at ", IsaName(isa_));
  }
  const Shape s = MakeShape(p);
  const size_t cb = block_, cp = DivUp(c_, cb) * cb, mp = DivUp(m_, cb) * cb;
  const size_t threads = ThreadCount(pool);
  const size_t tb = TilesPerBlock(p, threads);
  const size_t blocks_per_image = DivUp(s.tiles, tb);
  const size_t blocks = p.n * blocks_per_image;
  const size_t slot_floats = SlotFloatsNchwc(tb);
  const long h = static_cast<long>(p.h), w = static_cast<long>(p.w);
  const long pt = static_cast<long>(p.pad_top), pl = static_cast<long>(p.pad_left);
  // V[p]^T: point p's tiles x Cp at v + p * tb * cp; O[p]^T likewise with Mp.
  auto o_of = [&](float* slot) { return slot + kPoints * tb * cp; };

  // Input transform of channel blocks [b0, b1) of every tile of `block`. A tile whose window
  // crosses the border is first copied, with zeros for the padding, into d.
  auto input_part = [&](size_t block, size_t b0, size_t b1, float* v) {
    const size_t img = block / blocks_per_image;
    const size_t t0 = block % blocks_per_image * tb, nt = std::min(tb, s.tiles - t0);
    alignas(64) float d[kPoints * kMaxBlock];
    for (size_t t = 0; t < nt; ++t) {
      const size_t tile = t0 + t;
      const long y0 = static_cast<long>(tile / s.tiles_w * kOut) - pt;
      const long x0 = static_cast<long>(tile % s.tiles_w * kOut) - pl;
      const bool inside = y0 >= 0 && x0 >= 0 && y0 + 6 <= h && x0 + 6 <= w;
      for (size_t bi = b0; bi < b1; ++bi) {
        const float* xc = x + (img * (cp / cb) + bi) * p.h * p.w * cb;
        float* vt = v + t * cp + bi * cb;
        if (inside) {
          tf.input(xc + (y0 * w + x0) * static_cast<long>(cb), p.w * cb, vt, tb * cp);
          continue;
        }
        for (long i = 0; i < 6; ++i) {
          for (long j = 0; j < 6; ++j) {
            float* dst = d + (i * 6 + j) * static_cast<long>(cb);
            const long iy = y0 + i, ix = x0 + j;
            if (iy >= 0 && iy < h && ix >= 0 && ix < w) {
              std::memcpy(dst, xc + (iy * w + ix) * static_cast<long>(cb), cb * sizeof(float));
            } else {
              std::memset(dst, 0, cb * sizeof(float));
            }
          }
        }
        tf.input(d, 6 * cb, vt, tb * cp);
      }
    }
  };
  Status gemm_status;
  std::mutex status_mu;
  auto gemm_part = [&](size_t block, size_t p0, size_t p1, const float* v, float* o) {
    const size_t nt = std::min(tb, s.tiles - block % blocks_per_image * tb);
    gemm::Options opt;
    for (size_t pi = p0; pi < p1; ++pi) {
      Status st = gemm::SgemmPackedB(nt, v + pi * tb * cp, cp, u_[pi], o + pi * tb * mp, mp, opt);
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(status_mu);
        if (gemm_status.ok()) gemm_status = st;
      }
    }
  };
  // Output transform of output channel blocks [b0, b1): whole tiles straight into y, those cut
  // by the bottom or right border (or followed by a vector activation) through buf.
  auto output_part = [&](size_t block, size_t b0, size_t b1, const float* o) {
    const size_t img = block / blocks_per_image;
    const size_t t0 = block % blocks_per_image * tb, nt = std::min(tb, s.tiles - t0);
    float* yi = y + img * mp * s.oh * s.ow;
    alignas(64) float buf[kOut * kOut * kMaxBlock];
    float bb[kMaxBlock];
    for (size_t bi = b0; bi < b1; ++bi) {
      for (size_t l = 0; l < cb; ++l) bb[l] = bias && bi * cb + l < m_ ? bias[bi * cb + l] : 0.0f;
      for (size_t t = 0; t < nt; ++t) {
        const size_t tile = t0 + t;
        const size_t oy = tile / s.tiles_w * kOut, ox = tile % s.tiles_w * kOut;
        const size_t rh = std::min(kOut, s.oh - oy), rw = std::min(kOut, s.ow - ox);
        const float* ot = o + t * mp + bi * cb;
        float* yt = yi + ((bi * s.oh + oy) * s.ow + ox) * cb;
        if (rh == kOut && rw == kOut && !act) {
          tf.output(ot, tb * mp, bb, lo, hi, yt, s.ow * cb);
          continue;
        }
        tf.output(ot, tb * mp, bb, lo, hi, buf, kOut * cb);
        if (act) act(kOut * kOut * cb, buf, buf, nullptr);
        for (size_t i = 0; i < rh; ++i) {
          std::memcpy(yt + i * s.ow * cb, buf + i * kOut * cb, rw * cb * sizeof(float));
        }
      }
    }
  };

  const size_t cblocks = cp / cb, mblocks = mp / cb;
  if (SharesBlocks(p.n, s.tiles, threads)) {
    // Every thread takes a share of each phase of each block, in slot 0.
    float* v = workspace;
    float* o = o_of(workspace);
    for (size_t b = 0; b < blocks; ++b) {
      ParallelFor(pool, threads, [&](size_t i) {
        input_part(b, cblocks * i / threads, cblocks * (i + 1) / threads, v);
      });
      ParallelFor(pool, threads, [&](size_t i) {
        gemm_part(b, kPoints * i / threads, kPoints * (i + 1) / threads, v, o);
      });
      ParallelFor(pool, threads, [&](size_t i) {
        output_part(b, mblocks * i / threads, mblocks * (i + 1) / threads, o);
      });
    }
    return gemm_status;
  }
  // Thread i runs blocks i, i + threads, ... in its own slot.
  const size_t tasks = std::min(threads, blocks);
  ParallelFor(tasks > 1 ? pool : nullptr, tasks, [&](size_t i) {
    float* slot = workspace + i * slot_floats;
    for (size_t b = i; b < blocks; b += tasks) {
      input_part(b, 0, cblocks, slot);
      gemm_part(b, 0, kPoints, slot, o_of(slot));
      output_part(b, 0, mblocks, o_of(slot));
    }
  });
  return gemm_status;
}

}  // namespace kiln::winograd
