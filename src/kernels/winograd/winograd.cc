#include "kernels/winograd/winograd.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <mutex>

#include "kernels/gemm/ukernel_table.h"
#include "kernels/ukernels/f32_winograd.h"

namespace kiln::winograd {
namespace {

constexpr size_t kTile = 6;  // input tile (alpha = m + r - 1)
constexpr size_t kOut = 4;   // output tile
static_assert(kPoints == kTile * kTile);

size_t DivUp(size_t a, size_t b) { return (a + b - 1) / b; }

// G (6x3): the filter transform, U = G g G^T.
constexpr float kG[6][3] = {{1.0f / 4, 0, 0},
                            {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                            {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                            {1.0f / 24, 1.0f / 12, 1.0f / 6},
                            {1.0f / 24, -1.0f / 12, 1.0f / 6},
                            {0, 0, 1}};

// out[k][t] = (B^T in)[k][t] over six rows of n values: the rows of B^T written out, so that
// the loops over t (tiles, contiguous) vectorize.
void InputRows(const float* const in[6], float* const out[6], size_t n) {
  const float *d0 = in[0], *d1 = in[1], *d2 = in[2], *d3 = in[3], *d4 = in[4], *d5 = in[5];
  float *r0 = out[0], *r1 = out[1], *r2 = out[2], *r3 = out[3], *r4 = out[4], *r5 = out[5];
  for (size_t t = 0; t < n; ++t) {
    r0[t] = 4.0f * d0[t] - 5.0f * d2[t] + d4[t];
    r1[t] = d3[t] + d4[t] - 4.0f * (d1[t] + d2[t]);
    r2[t] = d4[t] - d3[t] + 4.0f * (d1[t] - d2[t]);
    r3[t] = d4[t] - d2[t] + 2.0f * (d3[t] - d1[t]);
    r4[t] = d4[t] - d2[t] + 2.0f * (d1[t] - d3[t]);
    r5[t] = 4.0f * d1[t] - 5.0f * d3[t] + d5[t];
  }
}

// out[k][t] = (A^T in)[k][t], four rows from six.
void OutputRows(const float* const in[6], float* const out[4], size_t n) {
  const float *o0 = in[0], *o1 = in[1], *o2 = in[2], *o3 = in[3], *o4 = in[4], *o5 = in[5];
  float *s0 = out[0], *s1 = out[1], *s2 = out[2], *s3 = out[3];
  for (size_t t = 0; t < n; ++t) {
    const float a = o1[t] + o2[t], b = o1[t] - o2[t], c = o3[t] + o4[t], d = o3[t] - o4[t];
    s0[t] = o0[t] + a + c;
    s1[t] = b + 2.0f * d;
    s2[t] = a + 4.0f * c;
    s3[t] = b + 8.0f * d + o5[t];
  }
}

struct Shape {
  size_t oh, ow, tiles_h, tiles_w, tiles;  // tiles per image
};

Shape MakeShape(const WinogradConvParams& p) {
  Shape s;
  s.oh = p.out_h();
  s.ow = p.out_w();
  s.tiles_h = DivUp(s.oh, kOut);
  s.tiles_w = DivUp(s.ow, kOut);
  s.tiles = s.tiles_h * s.tiles_w;
  return s;
}

constexpr size_t kPatchRows = 6;
// Tiles per tile row from which the transforms run along the rows (see Run). Measured on AVX-512:
// 14 tiles (56x56) 10% faster that way, 7 tiles (28x28) 10% slower.
constexpr size_t kMinRowTiles = 12;
size_t PatchWidth(size_t tb) { return kOut * tb + 2; }

// One thread's workspace: V, O, the input patch and the output tiles that cross the border.
size_t SlotFloats(size_t tb, size_t c, size_t m) {
  return kPoints * tb * (c + m) + kPatchRows * PatchWidth(tb) + kOut * kOut * tb + 2 * kPoints * tb;
}

struct Transforms {
  ukernels::F32WinoInputFn input;
  ukernels::F32WinoOutputFn output;
};

Transforms TransformsFor(IsaLevel isa) {
  if (isa >= IsaLevel::kAvx512) {
    return {ukernels::f32_wino_input__avx512f, ukernels::f32_wino_output__avx512f};
  }
  if (isa >= IsaLevel::kAvx2) return {ukernels::f32_wino_input__avx2, ukernels::f32_wino_output__avx2};
  return {ukernels::f32_wino_input__scalar, ukernels::f32_wino_output__scalar};
}

}  // namespace

bool WinogradSupported(size_t kh, size_t kw, size_t stride_h, size_t stride_w, size_t dilation_h,
                       size_t dilation_w, size_t group) {
  return kh == 3 && kw == 3 && stride_h == 1 && stride_w == 1 && dilation_h == 1 &&
         dilation_w == 1 && group == 1;
}

Expected<PreparedWinograd> PreparedWinograd::Prepare(size_t m, size_t c, const float* w,
                                                     std::optional<IsaLevel> isa) {
  if (m == 0 || c == 0) return Status::Error("winograd: M = ", m, " and C = ", c, " must be > 0");
  if (!w) return Status::Error("winograd: the weight pointer is null");
  PreparedWinograd pw;
  pw.m_ = m;
  pw.c_ = c;
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
  for (size_t p = 0; p < kPoints; ++p) {
    KILN_ASSIGN_OR_RETURN(gemm::PackedMatrix packed,
                          gemm::PackA(m, c, u.data() + p * m * c, c, false, isa));
    pw.isa_ = packed.isa();
    pw.u_.push_back(std::move(packed));
  }
  return pw;
}

Expected<PreparedWinograd> PreparedWinograd::View(size_t m, size_t c,
                                                  std::vector<gemm::PackedMatrix> u) {
  if (m == 0 || c == 0) return Status::Error("winograd: M = ", m, " and C = ", c, " must be > 0");
  if (u.size() != kPoints) {
    return Status::Error("winograd: ", kPoints, " packed U matrices are needed, got ", u.size());
  }
  for (size_t i = 0; i < u.size(); ++i) {
    const gemm::PackedMatrix& pm = u[i];
    if (!pm.is_a() || pm.rows() != m || pm.cols() != c || pm.isa() != u[0].isa() ||
        pm.data() == nullptr) {
      return Status::Error("winograd: U[", i, "] is ", pm.rows(), " x ", pm.cols(), " at ",
                           IsaName(pm.isa()), "; expected a packed A of ", m, " x ", c, " at ",
                           IsaName(u[0].isa()));
    }
  }
  PreparedWinograd pw;
  pw.m_ = m;
  pw.c_ = c;
  pw.isa_ = u[0].isa();
  pw.u_ = std::move(u);
  return pw;
}

size_t PreparedWinograd::TilesPerBlock(const WinogradConvParams& p, size_t threads) const {
  const Shape s = MakeShape(p);
  // V and O of one block in about L2 (the GEMM streams U[p] from L2/L3 past them).
  const size_t l2_floats = GetCpuInfo().l2_bytes / sizeof(float);
  size_t tb = l2_floats / (kPoints * (c_ + m_));
  tb = std::clamp<size_t>(tb / 16 * 16, 16, 256);
  tb = std::min(tb, std::max<size_t>(s.tiles, 1));
  // Enough blocks for every thread.
  const size_t per_image = std::max<size_t>(1, DivUp(threads, std::max<size_t>(p.n, 1)));
  if (DivUp(s.tiles, tb) < per_image) tb = std::max<size_t>(1, DivUp(s.tiles, per_image));
  return tb;
}

size_t PreparedWinograd::WorkspaceFloats(const WinogradConvParams& p, size_t threads) const {
  threads = std::max<size_t>(threads, 1);
  return threads * SlotFloats(TilesPerBlock(p, threads), c_, m_);
}

Status PreparedWinograd::Run(const WinogradConvParams& p, const float* x, const float* bias,
                             const gemm::Epilogue& ep, float* y, ThreadPool* pool,
                             float* workspace) const {
  if (u_.empty()) return Status::Error("winograd: the layer was not prepared");
  if (p.c != c_) {
    return Status::Error("winograd: the input has ", p.c, " channels; the weights expect ", c_);
  }
  constexpr size_t kBig = size_t{1} << 30;
  if (p.h >= kBig || p.w >= kBig || p.pad_top > kBig || p.pad_left > kBig ||
      p.pad_bottom > kBig || p.pad_right > kBig) {
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
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  ukernels::F32VUnaryFn act = nullptr;
  const gemm::GemmUkernel& guk = gemm::SelectGemmUkernel(isa_);
  switch (ep.activation) {
    case gemm::Activation::kNone:
      break;
    case gemm::Activation::kRelu:
      lo = 0.0f;
      break;
    case gemm::Activation::kClip:
      if (!(ep.clip_min <= ep.clip_max)) {
        return Status::Error("winograd: clip bounds are [", ep.clip_min, ", ", ep.clip_max,
                             "]; min must not exceed max");
      }
      lo = ep.clip_min;
      hi = ep.clip_max;
      break;
    case gemm::Activation::kSilu:
      act = guk.silu;
      break;
    case gemm::Activation::kHardSwish:
      act = guk.hswish;
      break;
    case gemm::Activation::kGelu:
      act = guk.gelu;
      break;
  }

  const size_t threads = ThreadCount(pool);
  const size_t tb = TilesPerBlock(p, threads);
  const size_t blocks_per_image = DivUp(s.tiles, tb);
  const size_t blocks = p.n * blocks_per_image;
  const size_t slot_floats = SlotFloats(tb, c_, m_);
  std::unique_ptr<float, void (*)(float*)> owned(nullptr, [](float* q) { std::free(q); });
  if (!workspace) {
    const size_t bytes = (threads * slot_floats * sizeof(float) + 63) / 64 * 64;
    owned.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
    if (!owned) return Status::Error("winograd: out of memory for ", bytes, " bytes of scratch");
    workspace = owned.get();
  }
  const size_t c = c_, m = m_;
  const Transforms tf = TransformsFor(isa_);
  const ukernels::F32WinoInputFn input = tf.input;
  const ukernels::F32WinoOutputFn output = tf.output;
  // Two ways to transform. by_rows: the transform microkernels, vectorized across the tiles of
  // one tile row, reading the input and writing the output in place; it needs rows of many
  // tiles to fill the vectors. Otherwise (narrow maps): each tile gathered into a 36 x tb
  // buffer, transformed by portable loops vectorized across all the tiles of the block.
  const bool by_rows = s.tiles_w >= kMinRowTiles;

  // The first GEMM error (there should be none: the shapes were checked above).
  Status gemm_status;
  std::mutex status_mu;
  auto run_block = [&](size_t block, float* slot) {
    const size_t img = block / blocks_per_image;
    const size_t t0 = block % blocks_per_image * tb;
    const size_t nt = std::min(tb, s.tiles - t0);
    float* v = slot;                       // 36 x C x tb
    float* o = v + kPoints * c * tb;       // 36 x M x tb
    float* patch = o + kPoints * m * tb;   // 6 x (4 tb + 2): windows that cross the border
    float* ytmp = patch + kPatchRows * PatchWidth(tb);  // 4 x 4 tb: tiles that cross the border
    float* d = ytmp + kOut * kOut * tb;    // 36 x tb: gathered tiles, then output rows
    float* e = d + kPoints * tb;           // 36 x tb: after the row transform
    const float* xi = x + img * c * p.h * p.w;
    const long pt = static_cast<long>(p.pad_top), pl = static_cast<long>(p.pad_left);
    const long h = static_cast<long>(p.h), w = static_cast<long>(p.w);
    const size_t pw = PatchWidth(tb);

    if (by_rows) {
      // Input transform, channel by channel, a run of tiles of one tile row at a time: V[p][c][t].
      // Windows inside the input are read in place; the others from a zero-padded patch.
      for (size_t ci = 0; ci < c; ++ci) {
        const float* xc = xi + ci * p.h * p.w;
        float* vc = v + ci * tb;
        for (size_t t = 0; t < nt;) {
          const size_t tile = t0 + t;
          const size_t ty = tile / s.tiles_w, tx = tile % s.tiles_w;
          const size_t run = std::min(nt - t, s.tiles_w - tx);
          const long y0 = static_cast<long>(ty * kOut) - pt;
          const long x0 = static_cast<long>(tx * kOut) - pl;
          // Tiles [a, b) of the run have their windows inside the input.
          size_t a = run, b = run;
          if (y0 >= 0 && y0 + 6 <= h) {
            const long first = x0 >= 0 ? 0 : (-x0 + 3) / 4;
            const long last = w >= x0 + 6 ? (w - x0 - 6) / 4 + 1 : 0;  // tiles with x0 + 4 q + 6 <= w
            a = static_cast<size_t>(std::min<long>(first, static_cast<long>(run)));
            b = static_cast<size_t>(std::clamp<long>(last, static_cast<long>(a), static_cast<long>(run)));
          }
          if (a < b) {
            input(b - a, xc + y0 * w + x0 + 4 * static_cast<long>(a), p.w, vc + t + a, c * tb);
          }
          // The rest: [0, a) and [b, run) through the patch.
          for (auto [q0, q1] : {std::pair<size_t, size_t>{0, a}, std::pair<size_t, size_t>{b, run}}) {
            if (q0 >= q1) continue;
            const long px = x0 + 4 * static_cast<long>(q0);
            const size_t cols = 4 * (q1 - q0) + 2;
            for (size_t i = 0; i < kPatchRows; ++i) {
              const long iy = y0 + static_cast<long>(i);
              float* dst = patch + i * pw;
              for (size_t j = 0; j < cols; ++j) {
                const long ix = px + static_cast<long>(j);
                dst[j] = iy >= 0 && iy < h && ix >= 0 && ix < w ? xc[iy * w + ix] : 0.0f;
              }
            }
            input(q1 - q0, patch, pw, vc + t + q0, c * tb);
          }
          t += run;
        }
      }
    } else {
      // Input transform, channel by channel: V[p][c][t] = (B^T d B)[p].
      for (size_t ci = 0; ci < c; ++ci) {
        const float* xc = xi + ci * p.h * p.w;
        for (size_t t = 0; t < nt; ++t) {
          const size_t tile = t0 + t;
          const long y0 = static_cast<long>(tile / s.tiles_w * kOut) - pt;
          const long x0 = static_cast<long>(tile % s.tiles_w * kOut) - pl;
          if (y0 >= 0 && x0 >= 0 && y0 + 6 <= h && x0 + 6 <= w) {
            const float* src = xc + y0 * w + x0;
            for (size_t i = 0; i < 6; ++i) {
              for (size_t j = 0; j < 6; ++j) d[(i * 6 + j) * tb + t] = src[i * w + j];
            }
          } else {
            for (size_t i = 0; i < 6; ++i) {
              const long iy = y0 + static_cast<long>(i);
              for (size_t j = 0; j < 6; ++j) {
                const long ix = x0 + static_cast<long>(j);
                d[(i * 6 + j) * tb + t] =
                    iy >= 0 && iy < h && ix >= 0 && ix < w ? xc[iy * w + ix] : 0.0f;
              }
            }
          }
        }
        // Columns of each row i (in[k] = d[i][k]), then rows of each column (in[k] = e[k][j]).
        for (size_t i = 0; i < 6; ++i) {
          const float* in[6];
          float* out[6];
          for (size_t k = 0; k < 6; ++k) {
            in[k] = d + (i * 6 + k) * tb;
            out[k] = e + (i * 6 + k) * tb;
          }
          InputRows(in, out, nt);
        }
        for (size_t j = 0; j < 6; ++j) {
          const float* in[6];
          float* out[6];
          for (size_t k = 0; k < 6; ++k) {
            in[k] = e + (k * 6 + j) * tb;
            out[k] = v + ((k * 6 + j) * c + ci) * tb;
          }
          InputRows(in, out, nt);
        }
      }
    }

    // O[p] = U[p] V[p]: M x nt, for each of the 36 points.
    gemm::Options opt;
    for (size_t pt_i = 0; pt_i < kPoints; ++pt_i) {
      Status st = gemm::SgemmPackedA(u_[pt_i], nt, v + pt_i * c * tb, tb, o + pt_i * m * tb, tb,
                                     opt);
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(status_mu);
        if (gemm_status.ok()) gemm_status = st;
      }
    }

    if (by_rows) {
      // Output transform with the bias and clamp, then the other activations: full tiles straight
      // into y, tiles that cross the bottom or right border through ytmp.
      float* yi = y + img * m * s.oh * s.ow;
      for (size_t mi = 0; mi < m; ++mi) {
        const float bv = bias ? bias[mi] : 0.0f;
        const float* om = o + mi * tb;
        float* ym = yi + mi * s.oh * s.ow;
        for (size_t t = 0; t < nt;) {
          const size_t tile = t0 + t;
          const size_t ty = tile / s.tiles_w, tx = tile % s.tiles_w;
          const size_t run = std::min(nt - t, s.tiles_w - tx);
          const size_t oy = ty * kOut, ox = tx * kOut;
          const size_t rh = std::min(kOut, s.oh - oy);
          const size_t full = rh == kOut ? std::min(run, s.ow / kOut - std::min(s.ow / kOut, tx)) : 0;
          if (full > 0) {
            float* dst = ym + oy * s.ow + ox;
            output(full, om + t, m * tb, bv, lo, hi, dst, s.ow);
            if (act) {
              for (size_t i = 0; i < kOut; ++i) act(full * kOut, dst + i * s.ow, dst + i * s.ow);
            }
          }
          if (full < run) {
            const size_t n = run - full, cols = std::min(n * kOut, s.ow - (ox + full * kOut));
            output(n, om + t + full, m * tb, bv, lo, hi, ytmp, kOut * tb);
            for (size_t i = 0; i < rh; ++i) {
              float* dst = ym + (oy + i) * s.ow + ox + full * kOut;
              std::copy_n(ytmp + i * kOut * tb, cols, dst);
              if (act) act(cols, dst, dst);
            }
          }
          t += run;
        }
      }
    } else {
      // Output transform, channel by channel, with the bias and activation.
      float* yi = y + img * m * s.oh * s.ow;
      for (size_t mi = 0; mi < m; ++mi) {
        float* rows = e;  // 4 x 6 x tb after the column pass
        for (size_t j = 0; j < 6; ++j) {
          const float* in[6];
          float* out[4];
          for (size_t k = 0; k < 6; ++k) in[k] = o + ((k * 6 + j) * m + mi) * tb;
          for (size_t k = 0; k < 4; ++k) out[k] = rows + (k * 6 + j) * tb;
          OutputRows(in, out, nt);
        }
        float* res = d;  // 16 x tb
        for (size_t i = 0; i < 4; ++i) {
          const float* in[6];
          float* out[4];
          for (size_t k = 0; k < 6; ++k) in[k] = rows + (i * 6 + k) * tb;
          for (size_t k = 0; k < 4; ++k) out[k] = res + (i * 4 + k) * tb;
          OutputRows(in, out, nt);
        }
        const float b = bias ? bias[mi] : 0.0f;
        for (size_t k = 0; k < 16; ++k) {
          float* r = res + k * tb;
          for (size_t t = 0; t < nt; ++t) r[t] = std::min(std::max(r[t] + b, lo), hi);
          if (act) act(nt, r, r);
        }
        float* ym = yi + mi * s.oh * s.ow;
        for (size_t t = 0; t < nt; ++t) {
          const size_t tile = t0 + t;
          const size_t oy = tile / s.tiles_w * kOut, ox = tile % s.tiles_w * kOut;
          const size_t rh = std::min(kOut, s.oh - oy), rw = std::min(kOut, s.ow - ox);
          for (size_t i = 0; i < rh; ++i) {
            for (size_t j = 0; j < rw; ++j) ym[(oy + i) * s.ow + ox + j] = res[(i * 4 + j) * tb + t];
          }
        }
      }
    }
  };

  for (size_t b0 = 0; b0 < blocks; b0 += threads) {
    const size_t n = std::min(threads, blocks - b0);
    auto task = [&](size_t i) { run_block(b0 + i, workspace + i * slot_floats); };
    ParallelFor(n > 1 ? pool : nullptr, n, task);
  }
  return gemm_status;
}

}  // namespace kiln::winograd
