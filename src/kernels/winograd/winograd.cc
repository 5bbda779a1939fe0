#include "kernels/winograd/winograd.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <mutex>

#include "kernels/gemm/epilogue.h"
#include "kernels/gemm/ukernel_table.h"
#include "kernels/ukernels/f32_winograd.h"
#include "kernels/winograd/tiles.h"

namespace kiln::winograd {
namespace {

using namespace tiles;  // NOLINT(build/namespaces): the grid helpers, shared with the NCHWc driver

// G (6x3): the filter transform, U = G g G^T.
constexpr float kG[6][3] = {{1.0f / 4, 0, 0},
                            {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                            {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                            {1.0f / 24, 1.0f / 12, 1.0f / 6},
                            {1.0f / 24, -1.0f / 12, 1.0f / 6},
                            {0, 0, 1}};

// One thread's workspace: V, O, and two 36 x tb buffers for the transforms.
size_t SlotFloats(size_t tb, size_t c, size_t m) { return kPoints * tb * (c + m + 2); }

// The passes of the transforms, vectorized across the tiles of a block, for `isa`.
struct Transforms {
  ukernels::F32WinoRowsFn input_rows, output_rows;
  ukernels::F32WinoGatherFn gather;
  ukernels::F32WinoScatterFn scatter;
};

Transforms TransformsFor(IsaLevel isa) {
  if (isa >= IsaLevel::kAvx512) {
    return {ukernels::f32_wino_input_rows__avx512f, ukernels::f32_wino_output_rows__avx512f,
            ukernels::f32_wino_gather__avx512f, ukernels::f32_wino_scatter__avx512f};
  }
  if (isa >= IsaLevel::kAvx2) {
    return {ukernels::f32_wino_input_rows__avx2, ukernels::f32_wino_output_rows__avx2,
            ukernels::f32_wino_gather__avx2, ukernels::f32_wino_scatter__avx2};
  }
  return {ukernels::f32_wino_input_rows__scalar, ukernels::f32_wino_output_rows__scalar,
          ukernels::f32_wino_gather__scalar, ukernels::f32_wino_scatter__scalar};
}

}  // namespace

bool WinogradSupported(size_t kh, size_t kw, size_t stride_h, size_t stride_w, size_t dilation_h,
                       size_t dilation_w, size_t group) {
  return kh == 3 && kw == 3 && stride_h == 1 && stride_w == 1 && dilation_h == 1 &&
         dilation_w == 1 && group == 1;
}

Expected<PreparedWinograd> PreparedWinograd::Prepare(size_t m, size_t c, const float* w,
                                                     std::optional<IsaLevel> isa, size_t block) {
  if (m == 0 || c == 0) return Status::Error("winograd: M = ", m, " and C = ", c, " must be > 0");
  if (!w) return Status::Error("winograd: the weight pointer is null");
  if (block != 1 && block != 8 && block != 16) {
    return Status::Error("winograd: channel block ", block, " is not 1, 8 or 16");
  }
  PreparedWinograd pw;
  pw.m_ = m;
  pw.c_ = c;
  pw.block_ = block;
  // U[p][m][c], one M x C matrix per transform point, then packed for the GEMM.
  std::vector<float> u(kPoints * m * c);
  for (size_t mi = 0; mi < m; ++mi) {
    for (size_t ci = 0; ci < c; ++ci) {
      const float* g = w + (mi * c + ci) * 9;
      float gg[6][3];  // G g
      for (size_t i = 0; i < 6; ++i) {
        for (size_t b = 0; b < 3; ++b) {
          gg[i][b] = kG[i][0] * g[b] + kG[i][1] * g[3 + b] + kG[i][2] * g[6 + b];
        }
      }
      for (size_t i = 0; i < 6; ++i) {
        for (size_t j = 0; j < 6; ++j) {
          const float v = gg[i][0] * kG[j][0] + gg[i][1] * kG[j][1] + gg[i][2] * kG[j][2];
          u[((i * 6 + j) * m + mi) * c + ci] = v;
        }
      }
    }
  }
  pw.u_.reserve(kPoints);
  // NCHWc: O[p]^T (tiles x Mp) = V[p]^T (tiles x Cp) U[p]^T, so U[p]^T is the packed B.
  const size_t cp = DivUp(c, block) * block, mp = DivUp(m, block) * block;
  std::vector<float> ut(block > 1 ? cp * mp : 0, 0.0f);
  for (size_t p = 0; p < kPoints; ++p) {
    const float* up = u.data() + p * m * c;
    if (block > 1) {
      for (size_t mi = 0; mi < m; ++mi) {
        for (size_t ci = 0; ci < c; ++ci) ut[ci * mp + mi] = up[mi * c + ci];
      }
    }
    Expected<gemm::PackedMatrix> packed = block > 1
                                              ? gemm::PackB(cp, mp, ut.data(), mp, false, isa)
                                              : gemm::PackA(m, c, up, c, false, isa);
    if (!packed.ok()) return packed.status();
    pw.isa_ = packed->isa();
    pw.u_.push_back(*std::move(packed));
  }
  if (block == 16 && pw.isa_ < IsaLevel::kAvx512) {
    return Status::Error("winograd: 16-channel blocks need AVX-512, not ", IsaName(pw.isa_));
  }
  return pw;
}

Expected<PreparedWinograd> PreparedWinograd::View(size_t m, size_t c,
                                                  std::vector<gemm::PackedMatrix> u,
                                                  size_t block) {
  if (m == 0 || c == 0) return Status::Error("winograd: M = ", m, " and C = ", c, " must be > 0");
  if (block != 1 && block != 8 && block != 16) {
    return Status::Error("winograd: channel block ", block, " is not 1, 8 or 16");
  }
  if (u.size() != kPoints) {
    return Status::Error("winograd: ", kPoints, " packed U matrices are needed, got ", u.size());
  }
  const bool is_a = block == 1;
  const size_t rows = is_a ? m : DivUp(c, block) * block;
  const size_t cols = is_a ? c : DivUp(m, block) * block;
  for (size_t i = 0; i < u.size(); ++i) {
    const gemm::PackedMatrix& pm = u[i];
    if (pm.is_a() != is_a || pm.rows() != rows || pm.cols() != cols || pm.isa() != u[0].isa() ||
        pm.data() == nullptr) {
      return Status::Error("winograd: U[", i, "] is ", pm.rows(), " x ", pm.cols(), " at ",
                           IsaName(pm.isa()), "; expected a packed ", is_a ? "A" : "B", " of ",
                           rows, " x ", cols, " at ", IsaName(u[0].isa()));
    }
  }
  if (block == 16 && u[0].isa() < IsaLevel::kAvx512) {
    return Status::Error("winograd: 16-channel blocks need AVX-512, not ", IsaName(u[0].isa()));
  }
  PreparedWinograd pw;
  pw.m_ = m;
  pw.c_ = c;
  pw.block_ = block;
  pw.isa_ = u[0].isa();
  pw.u_ = std::move(u);
  return pw;
}

size_t PreparedWinograd::TilesPerBlock(const WinogradConvParams& p, size_t threads) const {
  const Shape s = MakeShape(p);
  // Blocks as large as V and O of kBlockL2s x L2 allow (at least 16 tiles), cut evenly: each
  // block streams all of U (36 x M x C) past its V, and each GEMM's N is the block's tiles, so
  // a few large blocks beat many that keep V and O in L2 (the earlier bound, 1 x L2). The
  // transforms and GEMMs stream V and O in order, which the prefetchers follow. conv::Run,
  // Zen 5, median of 11 interleaved rounds, 1 / 2 threads, in GFLOP/s: 64 -> 64 at 56x56 (blocks
  // of 48 / 33 tiles -> 196 / 98) 388 -> 457 / 561 -> 786; 128 -> 128 at 28x28 (16 / 13 -> 49 /
  // 25) 435 -> 518 / 611 -> 847; 64 -> 64 at 112x112 465 -> 505 / 618 -> 914; 128 -> 192 at
  // 28x28 471 -> 547 / 687 -> 901 (blocks of 32). Where blocks are fewer than threads, a thread
  // idles: 128 -> 128 at 28x28 in one block of 49 tiles ran at 496 on two threads.
  constexpr size_t kBlockL2s = 4;
  const size_t tile_floats = kPoints * (c_ + m_);
  const size_t cap =
      std::max<size_t>(16, kBlockL2s * GetCpuInfo().l2_bytes / sizeof(float) / tile_floats);
  const size_t n = std::max<size_t>(p.n, 1), tiles = std::max<size_t>(s.tiles, 1);
  if (SharesBlocks(p.n, s.tiles, threads)) return std::min(cap, tiles);
  // A multiple of `threads` blocks in all (as far as the tiles allow), so that no thread idles
  // while another runs a last block.
  const size_t total = DivUp(n * DivUp(tiles, cap), threads) * threads;
  return std::max<size_t>(1, DivUp(tiles, DivUp(total, n)));
}

size_t PreparedWinograd::WorkspaceFloats(const WinogradConvParams& p, size_t threads) const {
  threads = std::max<size_t>(threads, 1);
  const size_t tb = TilesPerBlock(p, threads);
  return threads * (block_ > 1 ? SlotFloatsNchwc(tb) : SlotFloats(tb, c_, m_));
}

Status PreparedWinograd::Run(const WinogradConvParams& p, const float* x, const float* bias,
                             const gemm::Epilogue& ep, float* y, ThreadPool* pool,
                             float* workspace) const {
  if (u_.empty()) return Status::Error("winograd: the layer was not prepared");
  if (p.c != c_) {
    return Status::Error("winograd: the input has ", p.c, " channels; the weights expect ", c_);
  }
  constexpr size_t kBig = size_t{1} << 30;
  if (p.h >= kBig || p.w >= kBig || p.pad_top > kBig || p.pad_left > kBig || p.pad_bottom > kBig ||
      p.pad_right > kBig) {
    return Status::Error("winograd: input ", p.h, "x", p.w, " or its pads are too large");
  }
  const Shape s = MakeShape(p);
  if (p.n == 0 || s.oh == 0 || s.ow == 0) return Status::Ok();
  if (!x || !y) return Status::Error("winograd: null input or output pointer");
  if (ep.bias_kind == gemm::BiasKind::kPerColumn) {
    return Status::Error("winograd: a per-column bias has no meaning here (use one per channel)");
  }
  if (ep.bias_kind == gemm::BiasKind::kPerRow) {
    if (!ep.bias) return Status::Error("winograd: a bias is requested but its pointer is null");
    if (bias) return Status::Error("winograd: a bias is given both as an argument and in ep");
    bias = ep.bias;
  }
  auto ops = gemm::ResolveEpilogue(ep, gemm::SelectGemmUkernel(isa_), "winograd");
  if (!ops.ok()) return ops.status();
  const float lo = ops->min, hi = ops->max;
  const ukernels::F32VUnaryParamFn act = ops->act;

  const size_t threads = ThreadCount(pool);
  std::unique_ptr<float, void (*)(float*)> owned(nullptr, [](float* q) { std::free(q); });
  if (!workspace) {
    const size_t bytes = (WorkspaceFloats(p, threads) * sizeof(float) + 63) / 64 * 64;
    owned.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
    if (!owned) return Status::Error("winograd: out of memory for ", bytes, " bytes of scratch");
    workspace = owned.get();
  }
  if (block_ > 1) return RunNchwc(p, x, bias, lo, hi, act, y, pool, workspace);
  const size_t tb = TilesPerBlock(p, threads);
  const size_t blocks_per_image = DivUp(s.tiles, tb);
  const size_t blocks = p.n * blocks_per_image;
  const size_t slot_floats = SlotFloats(tb, c_, m_);
  const size_t c = c_, m = m_;
  const Transforms tf = TransformsFor(isa_);
  const ukernels::F32WinoRowsFn input_rows = tf.input_rows, output_rows = tf.output_rows;
  const ukernels::F32WinoGatherFn gather = tf.gather;
  const ukernels::F32WinoScatterFn scatter = tf.scatter;

  // The first GEMM error (there should be none: the shapes were checked above).
  Status gemm_status;
  std::mutex status_mu;
  // A slot: V (36 x C x tb), O (36 x M x tb), then d (36 x tb: gathered tiles, then output
  // rows) and e (36 x tb: after the row transform).
  auto v_of = [&](float* slot) { return slot; };
  auto o_of = [&](float* slot) { return slot + kPoints * c * tb; };
  auto d_of = [&](float* slot) { return slot + kPoints * (c + m) * tb; };
  auto e_of = [&](float* slot) { return slot + kPoints * (c + m + 1) * tb; };
  // The three phases of a block, each over part of its range: the input transform of channels
  // [c0, c1) into v, the GEMMs of points [p0, p1) from v into o, the output transform of
  // channels [m0, m1) from o; d and e are the caller's scratch.
  auto input_part = [&](size_t block, size_t c0, size_t c1, float* v, float* d, float* e) {
    const size_t img = block / blocks_per_image;
    const size_t t0 = block % blocks_per_image * tb;
    const size_t nt = std::min(tb, s.tiles - t0);
    const float* xi = x + img * c * p.h * p.w;
    const long pt = static_cast<long>(p.pad_top), pl = static_cast<long>(p.pad_left);
    const long h = static_cast<long>(p.h), w = static_cast<long>(p.w);

    // Input transform, channel by channel: V[p][c][t] = (B^T d B)[p]. The tiles of the block
    // are gathered into d[36][t] a run of one tile row at a time: the run's windows that lie
    // inside the input by the gather microkernel, the others (borders) value by value.
    for (size_t ci = c0; ci < c1; ++ci) {
      const float* xc = xi + ci * p.h * p.w;
      for (size_t t = 0; t < nt;) {
        const size_t tile = t0 + t;
        const size_t tx = tile % s.tiles_w;
        const size_t run = std::min(nt - t, s.tiles_w - tx);
        const long y0 = static_cast<long>(tile / s.tiles_w * kOut) - pt;
        const long x0 = static_cast<long>(tx * kOut) - pl;
        // Tiles [a, b) of the run: windows inside the input (x0 + 4 q >= 0, x0 + 4 q + 6 <= w).
        size_t a = run, b = run;
        if (y0 >= 0 && y0 + 6 <= h) {
          const long first = x0 >= 0 ? 0 : (3 - x0) / 4;
          const long last = w - x0 >= 6 ? (w - x0 - 6) / 4 + 1 : 0;
          a = static_cast<size_t>(std::min(first, static_cast<long>(run)));
          b = static_cast<size_t>(std::clamp(last, static_cast<long>(a), static_cast<long>(run)));
        }
        if (a < b) {
          const float* src = xc + y0 * w + x0 + 4 * static_cast<long>(a);
          for (size_t i = 0; i < 6; ++i) {
            gather(b - a, src + static_cast<long>(i) * w, d + i * 6 * tb + t + a, tb);
          }
        }
        for (size_t q = 0; q < run; ++q) {
          if (q == a) q = b;
          if (q >= run) break;
          const long qx = x0 + 4 * static_cast<long>(q);
          for (size_t i = 0; i < 6; ++i) {
            const long iy = y0 + static_cast<long>(i);
            for (size_t j = 0; j < 6; ++j) {
              const long ix = qx + static_cast<long>(j);
              d[(i * 6 + j) * tb + t + q] =
                  iy >= 0 && iy < h && ix >= 0 && ix < w ? xc[iy * w + ix] : 0.0f;
            }
          }
        }
        t += run;
      }
      // Columns of each row i (in[k] = d[i][k]), then rows of each column (in[k] = e[k][j]).
      for (size_t i = 0; i < 6; ++i) input_rows(nt, d + i * 6 * tb, tb, e + i * 6 * tb, tb);
      for (size_t j = 0; j < 6; ++j) {
        input_rows(nt, e + j * tb, 6 * tb, v + (j * c + ci) * tb, 6 * c * tb);
      }
    }

  };
  auto gemm_part = [&](size_t block, size_t p0, size_t p1, const float* v, float* o) {
    const size_t t0 = block % blocks_per_image * tb;
    const size_t nt = std::min(tb, s.tiles - t0);
    // O[p] = U[p] V[p]: M x nt, for each of the 36 points.
    gemm::Options opt;
    for (size_t pt_i = p0; pt_i < p1; ++pt_i) {
      Status st =
          gemm::SgemmPackedA(u_[pt_i], nt, v + pt_i * c * tb, tb, o + pt_i * m * tb, tb, opt);
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(status_mu);
        if (gemm_status.ok()) gemm_status = st;
      }
    }

  };
  auto output_part = [&](size_t block, size_t m0, size_t m1, const float* o, float* d, float* e) {
    const size_t img = block / blocks_per_image;
    const size_t t0 = block % blocks_per_image * tb;
    const size_t nt = std::min(tb, s.tiles - t0);
    // Output transform, channel by channel, with the bias and activation.
    float* yi = y + img * m * s.oh * s.ow;
    for (size_t mi = m0; mi < m1; ++mi) {
      float* rows = e;  // 4 x 6 x tb after the column pass
      for (size_t j = 0; j < 6; ++j) {
        output_rows(nt, o + (j * m + mi) * tb, 6 * m * tb, rows + j * tb, 6 * tb);
      }
      float* res = d;  // 16 x tb
      for (size_t i = 0; i < 4; ++i) output_rows(nt, rows + i * 6 * tb, tb, res + i * 4 * tb, tb);
      // The bias and clamp go with the scatter below, unless a vector activation must follow
      // them first.
      float sb = bias ? bias[mi] : 0.0f, slo = lo, shi = hi;
      if (act) {
        for (size_t k = 0; k < 16; ++k) {
          float* r = res + k * tb;
          for (size_t t = 0; t < nt; ++t) r[t] = std::min(std::max(r[t] + sb, lo), hi);
          act(nt, r, r, nullptr);
        }
        sb = 0.0f;
        slo = -std::numeric_limits<float>::infinity();
        shi = std::numeric_limits<float>::infinity();
      }
      // A run of one tile row at a time: whole 4x4 tiles by the scatter microkernel, the tiles
      // cut by the bottom or right border value by value.
      float* ym = yi + mi * s.oh * s.ow;
      for (size_t t = 0; t < nt;) {
        const size_t tile = t0 + t;
        const size_t tx = tile % s.tiles_w;
        const size_t run = std::min(nt - t, s.tiles_w - tx);
        const size_t oy = tile / s.tiles_w * kOut, ox = tx * kOut;
        const size_t rh = std::min(kOut, s.oh - oy);
        const size_t whole = rh == kOut && tx < s.ow / kOut ? std::min(run, s.ow / kOut - tx) : 0;
        for (size_t i = 0; i < kOut && whole > 0; ++i) {
          scatter(whole, res + i * 4 * tb + t, tb, sb, slo, shi, ym + (oy + i) * s.ow + ox);
        }
        for (size_t q = whole; q < run; ++q) {
          const size_t qx = ox + q * kOut, rw = std::min(kOut, s.ow - qx);
          for (size_t i = 0; i < rh; ++i) {
            for (size_t j = 0; j < rw; ++j) {
              const float r = res[(i * 4 + j) * tb + t + q] + sb;
              ym[(oy + i) * s.ow + qx + j] = std::min(std::max(r, slo), shi);
            }
          }
        }
        t += run;
      }
    }
  };

  if (SharesBlocks(p.n, s.tiles, threads)) {
    // Every thread takes a share of each phase; V and O are slot 0's, d and e each thread's own.
    float* v = v_of(workspace);
    float* o = o_of(workspace);
    for (size_t b = 0; b < blocks; ++b) {
      ParallelFor(pool, threads, [&](size_t i) {
        float* slot = workspace + i * slot_floats;
        input_part(b, c * i / threads, c * (i + 1) / threads, v, d_of(slot), e_of(slot));
      });
      ParallelFor(pool, threads, [&](size_t i) {
        gemm_part(b, kPoints * i / threads, kPoints * (i + 1) / threads, v, o);
      });
      ParallelFor(pool, threads, [&](size_t i) {
        float* slot = workspace + i * slot_floats;
        output_part(b, m * i / threads, m * (i + 1) / threads, o, d_of(slot), e_of(slot));
      });
    }
    return gemm_status;
  }
  // Thread i runs blocks i, i + threads, ... in its own slot.
  const size_t tasks = std::min(threads, blocks);
  auto task = [&](size_t i) {
    float* slot = workspace + i * slot_floats;
    for (size_t b = i; b < blocks; b += tasks) {
      input_part(b, 0, c, v_of(slot), d_of(slot), e_of(slot));
      gemm_part(b, 0, kPoints, v_of(slot), o_of(slot));
      output_part(b, 0, m, o_of(slot), d_of(slot), e_of(slot));
    }
  };
  ParallelFor(tasks > 1 ? pool : nullptr, tasks, task);
  return gemm_status;
}

}  // namespace kiln::winograd
