#include "kernels/dwconv/dwconv.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/gemm/epilogue.h"
#include "kernels/gemm/ukernel_table.h"
#include "kernels/ukernels/f32_dwconv.h"

namespace kiln::dwconv {
namespace {

using namespace ukernels;  // NOLINT: the table names every kernel

// The one table of depthwise row kernels; rows from the oldest ISA to the newest. kernel == 0
// with stride == 0 is the generic row (any window and stride).
struct DwUkernel {
  const char* name;
  IsaLevel isa;
  size_t kernel;  // kh == kw
  size_t stride;  // horizontal stride (the driver steps the rows)
  F32DwConvRowFn fn;
};

constexpr DwUkernel kTable[] = {
    {"f32_dwconv__scalar", IsaLevel::kScalar, 0, 0, f32_dwconv__scalar},
    {"f32_dwconv3x3_s1__scalar", IsaLevel::kScalar, 3, 1, f32_dwconv3x3_s1__scalar},
    {"f32_dwconv3x3_s2__scalar", IsaLevel::kScalar, 3, 2, f32_dwconv3x3_s2__scalar},
    {"f32_dwconv5x5_s1__scalar", IsaLevel::kScalar, 5, 1, f32_dwconv5x5_s1__scalar},
    {"f32_dwconv5x5_s2__scalar", IsaLevel::kScalar, 5, 2, f32_dwconv5x5_s2__scalar},
    {"f32_dwconv3x3_s1__avx2_fma", IsaLevel::kAvx2, 3, 1, f32_dwconv3x3_s1__avx2_fma},
    {"f32_dwconv3x3_s2__avx2_fma", IsaLevel::kAvx2, 3, 2, f32_dwconv3x3_s2__avx2_fma},
    {"f32_dwconv5x5_s1__avx2_fma", IsaLevel::kAvx2, 5, 1, f32_dwconv5x5_s1__avx2_fma},
    {"f32_dwconv5x5_s2__avx2_fma", IsaLevel::kAvx2, 5, 2, f32_dwconv5x5_s2__avx2_fma},
    {"f32_dwconv3x3_s1__avx512f", IsaLevel::kAvx512, 3, 1, f32_dwconv3x3_s1__avx512f},
    {"f32_dwconv3x3_s2__avx512f", IsaLevel::kAvx512, 3, 2, f32_dwconv3x3_s2__avx512f},
    {"f32_dwconv5x5_s1__avx512f", IsaLevel::kAvx512, 5, 1, f32_dwconv5x5_s1__avx512f},
    {"f32_dwconv5x5_s2__avx512f", IsaLevel::kAvx512, 5, 2, f32_dwconv5x5_s2__avx512f},
};

constexpr bool TableIsWellFormed() {
  for (size_t i = 1; i < std::size(kTable); ++i) {
    if (kTable[i].isa < kTable[i - 1].isa) return false;
  }
  return kTable[0].isa == IsaLevel::kScalar && kTable[0].kernel == 0;
}
static_assert(TableIsWellFormed(), "rows go oldest ISA first, and start at the generic kernel");

// The rows pointer array lives on the stack: windows are bounded.
constexpr size_t kMaxWindow = 64;
// Row pointers of one NCHW microkernel call: the window of its first output row and stride_h
// more per further row.
constexpr size_t kMaxRowPointers = 2 * kMaxWindow;
// NCHWc copies one block's weights onto the stack.
constexpr size_t kMaxBlockedWindow = 7;
constexpr size_t kMaxBlock = 16;
// Row pointers of one NCHWc microkernel call (its output rows' windows, overlapping): the
// weights are loaded once per call, and a 7x7 or 14x14 plane goes in one call.
constexpr size_t kMaxBlockedRowPointers = 64;
// Output floats of one blocked call when an activation follows it (16 KB: half of L1).
constexpr size_t kActFloats = 4096;

// The channel-blocked row kernel for block width cb within `cap`.
F32DwConvRowCFn SelectRowC(size_t cb, IsaLevel cap) {
  if (cap >= IsaLevel::kAvx512 && cb % 16 == 0) return f32_dwconv_nchwc16__avx512f;
  if (cap >= IsaLevel::kAvx2 && cb % 8 == 0) return f32_dwconv_nchwc8__avx2_fma;
  return f32_dwconv_nchwc__scalar;
}

// The newest specialized row for this window and stride within `cap`, else the generic one.
const DwUkernel& SelectRow(const DwConvParams& p, IsaLevel cap) {
  // A 16-lane row kernel leaves more than half its lanes idle on rows of 8 or fewer outputs (the
  // 7x7 layers): the 8-lane one is faster there (960x7 3x3: 0.097 ms against 0.126).
  if (cap >= IsaLevel::kAvx512 && p.out_w() <= 8) cap = IsaLevel::kAvx2;
  const DwUkernel* best = &kTable[0];
  for (const DwUkernel& row : kTable) {
    if (row.isa <= cap && row.kernel == p.kh && row.kernel == p.kw && row.stride == p.stride_w) {
      best = &row;
    }
  }
  return *best;
}

// The arguments of a blocked row kernel call but its count and output.
F32DwConvRowC BlockedRowArgs(const DwConvParams& p, size_t cb, const float* const* rows,
                             const float* w, const float* bias, float lo, float hi) {
  F32DwConvRowC args{};
  args.kh = p.kh;
  args.kw = p.kw;
  args.stride = p.stride_w;
  args.cb = cb;
  args.in_w = p.w;
  args.out_w = p.out_w();
  args.pad_left = p.pad_left;
  args.row_step = p.stride_h;
  args.rows = rows;
  args.w = w;
  args.bias = bias;
  args.min = lo;
  args.max = hi;
  return args;
}

// NCHW through channel blocks (RunThroughBlocks): one call's input rows as [rows][W][cb], its
// output rows as [rows][out_w][cb] and then as [cb][rows * out_w], and the block's weights as
// [taps][cb], in floats of workspace. 64 KiB each: a 28x28 plane of 16 channels in one call.
constexpr size_t kThroughFloats = 16384;
constexpr size_t kThroughSlotFloats =
    3 * kThroughFloats + kMaxBlockedWindow * kMaxBlockedWindow * kMaxBlock;

// The channel block an NCHW layer runs through (RunThroughBlocks), or 0 for the NCHW row kernels.
// Those vectorize along a row, which leaves lanes idle on short rows and sets up 9 or 25 weights
// for every channel's few rows. Through blocks, each vector holds cb channels of one pixel, at the
// cost of two transposes (the GEMM's transposing packer) that stay in L1/L2. 1 thread, ReLU6,
// Zen 5, median of 21 interleaved rounds, rows -> blocks, GFLOP/s: 3x3 960@7 11.5 -> 69-73,
// 576@14 22 -> 87, 192@28 28 -> 84, 144@56 40 -> 67, 32@112 52 -> 56-64, s2 576@14 10.5 -> 45,
// s2 96@112 29-30 -> 31-34; 5x5 20@13 32 -> 106; 7 channels of 3x3 s2 at 9x9 6.6 -> 19. With
// KILN_ISA=avx2 (8 channels): 960@7 11.5 -> 33, 192@28 28 -> 52, s2 96@112 27.4 -> 26.8.
size_t ThroughBlock(const DwConvParams& p, IsaLevel cap) {
  if (p.channel_block != 1 || p.kh > kMaxBlockedWindow || p.kw > kMaxBlockedWindow) return 0;
  const size_t cb = cap >= IsaLevel::kAvx512 ? kMaxBlock : cap >= IsaLevel::kAvx2 ? 8 : 0;
  if (cb == 0 || !gemm::SelectGemmUkernel(cap).pack_a) return 0;
  if (p.kh * p.w * cb > kThroughFloats || p.out_w() * cb > kThroughFloats) return 0;
  return cb;
}

// Bands of rows per plane (or block of channels) for `threads`: whole planes per work item when
// there are enough of them; otherwise bands, so that every thread gets a share (a 7x7x1 batch-1
// layer still splits).
size_t Bands(const DwConvParams& p, size_t planes, size_t threads) {
  if (threads <= 1 || planes >= 4 * threads) return 1;
  return std::min(p.out_h(), (4 * threads + planes - 1) / planes);
}

// y = act(dwconv(x) + bias) on NCHW through blocks of cb channels: for each band of output rows
// of a block, its input rows are transposed into [row][W][cb], the blocked row kernel runs on
// them, and its output is transposed back into the cb planes. Task i runs items i, i + tasks, ...
// in slot i of the workspace.
void RunThroughBlocks(const DwConvParams& p, size_t cb, IsaLevel cap, const float* x,
                      const float* w, const float* bias, float lo, float hi,
                      F32VUnaryParamFn act, float* y, ThreadPool* pool, float* workspace) {
  const F32PackAFn transpose = gemm::SelectGemmUkernel(cap).pack_a;
  const F32DwConvRowCFn fn = SelectRowC(cb, cap);
  const size_t oh = p.out_h(), ow = p.out_w(), taps = p.kh * p.kw;
  const size_t blocks = (p.c + cb - 1) / cb, planes = p.n * blocks;
  // Output rows per call: as many as the scratch holds.
  const size_t chunk = std::min({(kThroughFloats / (p.w * cb) - p.kh) / p.stride_h + 1,
                                 kThroughFloats / (ow * cb),
                                 (kMaxBlockedRowPointers - p.kh) / p.stride_h + 1});
  const size_t threads = ThreadCount(pool), bands = Bands(p, planes, threads);
  const size_t items = planes * bands, tasks = std::min(threads, items);
  auto item = [&](size_t t, float* slot) {
    const size_t plane = t / bands, band = t % bands;
    const size_t img = plane / blocks, c0 = plane % blocks * cb, cn = std::min(cb, p.c - c0);
    const size_t oy0 = band * oh / bands, oy1 = (band + 1) * oh / bands;
    float* in = slot;
    float* out = slot + kThroughFloats;
    float* planar = slot + 2 * kThroughFloats;
    float* wb = slot + 3 * kThroughFloats;
    transpose(cn, taps, w + c0 * taps, taps, cb, wb);  // [cn][taps] -> [taps][cb], zeros past cn
    float bb[kMaxBlock];
    for (size_t l = 0; l < cb; ++l) bb[l] = l < cn && bias ? bias[c0 + l] : 0.0f;
    const float* xc = x + (img * p.c + c0) * p.h * p.w;
    float* yc = y + (img * p.c + c0) * oh * ow;
    const float* rows[kMaxBlockedRowPointers] = {};  // set per call below
    F32DwConvRowC args = BlockedRowArgs(p, cb, rows, wb, bb, lo, hi);
    args.out = out;
    for (size_t oy = oy0; oy < oy1; oy += chunk) {
      args.count = std::min(chunk, oy1 - oy);
      const size_t n_rows = (args.count - 1) * p.stride_h + p.kh;
      // The window's rows that lie in the input, [lo_p, hi_p) counted with pad_top.
      const size_t first = oy * p.stride_h;
      const size_t lo_p = std::max(first, p.pad_top);
      const size_t hi_p = std::min(first + n_rows, p.pad_top + p.h);
      const size_t iy0 = lo_p - p.pad_top;
      if (hi_p > lo_p) transpose(cn, (hi_p - lo_p) * p.w, xc + iy0 * p.w, p.h * p.w, cb, in);
      for (size_t r = 0; r < n_rows; ++r) {
        const size_t iy = first + r;
        rows[r] = iy >= lo_p && iy < hi_p ? in + (iy - lo_p) * p.w * cb : nullptr;
      }
      fn(&args);
      const size_t px = args.count * ow;
      if (act) act(px * cb, out, out, nullptr);
      // [px][cb] -> [cn][px]: straight into the planes when the rows are whole planes, else
      // each channel's run copied into its plane.
      if (px == oh * ow) {
        transpose(px, cn, out, cb, px, yc);
        continue;
      }
      transpose(px, cn, out, cb, px, planar);
      for (size_t l = 0; l < cn; ++l) {
        std::memcpy(yc + l * oh * ow + oy * ow, planar + l * px, px * sizeof(float));
      }
    }
  };
  ParallelFor(tasks > 1 ? pool : nullptr, tasks, [&](size_t i) {
    for (size_t t = i; t < items; t += tasks) item(t, workspace + i * kThroughSlotFloats);
  });
}

}  // namespace

void PackBlockedWeights(size_t c, size_t taps, size_t cb, const float* w, float* dst) {
  const size_t blocks = (c + cb - 1) / cb;
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t k = 0; k < taps; ++k) {
      for (size_t l = 0; l < cb; ++l) {
        const size_t ch = b * cb + l;
        dst[(b * taps + k) * cb + l] = ch < c ? w[ch * taps + k] : 0.0f;
      }
    }
  }
}

size_t DwConvWorkspaceFloats(const DwConvParams& p, size_t threads, std::optional<IsaLevel> isa) {
  if (!DwConvSupported(p)) return 0;
  const IsaLevel cap = std::min(isa.value_or(ActiveIsa()), ActiveIsa());
  const size_t cb = ThroughBlock(p, cap);
  if (cb == 0) return 0;
  const size_t planes = p.n * ((p.c + cb - 1) / cb);
  threads = std::max<size_t>(threads, 1);
  return std::min(threads, planes * Bands(p, planes, threads)) * kThroughSlotFloats;
}

bool DwConvSupported(const DwConvParams& p) {
  if (p.dilation_h != 1 || p.dilation_w != 1) return false;
  if (p.stride_h == 0 || p.stride_w == 0 || p.kh == 0 || p.kw == 0) return false;
  if (p.kh > kMaxWindow || p.kw > kMaxWindow) return false;
  if (p.channel_block != 1 && p.channel_block != 8 && p.channel_block != kMaxBlock) return false;
  if (p.channel_block > 1 && (p.kh > kMaxBlockedWindow || p.kw > kMaxBlockedWindow)) return false;
  // Keeps every index computation far from overflow.
  constexpr size_t kBig = size_t{1} << 30;
  if (p.h >= kBig || p.w >= kBig || p.pad_top >= kBig || p.pad_bottom >= kBig ||
      p.pad_left >= kBig || p.pad_right >= kBig || p.stride_h >= kBig || p.stride_w >= kBig) {
    return false;
  }
  return p.out_h() > 0 && p.out_w() > 0;
}

Status DwConv(const DwConvParams& p, const float* x, const float* w, const float* bias,
              const gemm::Epilogue& ep, float* y, ThreadPool* pool, std::optional<IsaLevel> isa,
              float* workspace) {
  if (!DwConvSupported(p)) {
    return Status::Error("dwconv: unsupported shape (", p.kh, "x", p.kw, " window, strides ",
                         p.stride_h, "x", p.stride_w, ", dilations ", p.dilation_h, "x",
                         p.dilation_w, ", input ", p.h, "x", p.w, ")");
  }
  if (p.n == 0 || p.c == 0) return Status::Ok();
  if (!x || !w || !y) return Status::Error("dwconv: null input, weight or output pointer");
  if (ep.bias_kind == gemm::BiasKind::kPerColumn) {
    return Status::Error("dwconv: a per-column bias has no meaning here (use one per channel)");
  }
  if (ep.bias_kind == gemm::BiasKind::kPerRow) {
    if (!ep.bias) return Status::Error("dwconv: a bias is requested but its pointer is null");
    if (bias) return Status::Error("dwconv: a bias is given both as an argument and in ep");
    bias = ep.bias;
  }
  const IsaLevel cap = std::min(isa.value_or(ActiveIsa()), ActiveIsa());
  auto ops = gemm::ResolveEpilogue(ep, gemm::SelectGemmUkernel(cap), "dwconv");
  if (!ops.ok()) return ops.status();
  const float lo = ops->min, hi = ops->max;
  const F32VUnaryParamFn act = ops->act;

  if (const size_t through = ThroughBlock(p, cap)) {
    std::vector<float> own;
    if (!workspace) {
      own.resize(DwConvWorkspaceFloats(p, ThreadCount(pool), cap));
      workspace = own.data();
    }
    RunThroughBlocks(p, through, cap, x, w, bias, lo, hi, act, y, pool, workspace);
    return Status::Ok();
  }
  const DwUkernel& uk = SelectRow(p, cap);
  const size_t oh = p.out_h(), ow = p.out_w();
  const size_t cb = p.channel_block;
  const size_t planes = p.n * ((p.c + cb - 1) / cb);
  const size_t threads = ThreadCount(pool), bands = Bands(p, planes, threads);
  const size_t tasks = planes * bands;
  if (cb > 1) {
    const F32DwConvRowCFn fn = SelectRowC(cb, cap);
    const size_t blocks = (p.c + cb - 1) / cb;
    // With an activation (applied after each call), the rows of one call stay within L1, so
    // the activation reads them from there: 62 rows of a 112-wide map are 444 KB.
    size_t chunk = (kMaxBlockedRowPointers - p.kh) / p.stride_h + 1;
    if (act) chunk = std::clamp<size_t>(kActFloats / (ow * cb), 1, chunk);
    auto task = [&](size_t t) {
      const size_t plane = t / bands, band = t % bands;
      const size_t c0 = plane % blocks * cb;
      const size_t oy0 = band * oh / bands, oy1 = (band + 1) * oh / bands;
      // This block's bias, zero in the padding lanes (its weights are packed already).
      float bb[kMaxBlock];
      const size_t taps = p.kh * p.kw;
      for (size_t l = 0; l < cb; ++l) bb[l] = c0 + l < p.c && bias ? bias[c0 + l] : 0.0f;
      const float* xp = x + plane * p.h * p.w * cb;
      const float* rows[kMaxBlockedRowPointers] = {};  // set per call below
      F32DwConvRowC args = BlockedRowArgs(p, cb, rows, w + c0 * taps, bb, lo, hi);
      for (size_t oy = oy0; oy < oy1; oy += chunk) {
        args.count = std::min(chunk, oy1 - oy);
        const size_t n_rows = (args.count - 1) * p.stride_h + p.kh;
        for (size_t r = 0; r < n_rows; ++r) {
          const size_t iy = oy * p.stride_h + r;  // the input row plus pad_top
          rows[r] = iy >= p.pad_top && iy - p.pad_top < p.h ? xp + (iy - p.pad_top) * p.w * cb
                                                             : nullptr;
        }
        args.out = y + (plane * oh + oy) * ow * cb;
        fn(&args);
        if (act) act(args.count * ow * cb, args.out, args.out, nullptr);
      }
    };
    ParallelFor(threads > 1 ? pool : nullptr, tasks, task);
    return Status::Ok();
  }
  // Output rows per microkernel call: as many as the row pointer array holds (a small window
  // makes the per-call setup, 9 or 25 weight broadcasts, a large share of a short row's work).
  const size_t chunk = std::max<size_t>(1, (kMaxRowPointers - p.kh) / p.stride_h + 1);
  auto task = [&](size_t t) {
    const size_t plane = t / bands, band = t % bands;
    const size_t ch = plane % p.c;
    const size_t oy0 = band * oh / bands, oy1 = (band + 1) * oh / bands;
    const float* xp = x + plane * p.h * p.w;
    const float* rows[kMaxRowPointers];
    F32DwConvRow args{};
    args.kh = p.kh;
    args.kw = p.kw;
    args.stride = p.stride_w;
    args.in_w = p.w;
    args.out_w = ow;
    args.pad_left = p.pad_left;
    args.row_step = p.stride_h;
    args.rows = rows;
    args.w = w + ch * p.kh * p.kw;
    args.bias = bias ? bias[ch] : 0.0f;
    args.min = lo;
    args.max = hi;
    for (size_t oy = oy0; oy < oy1; oy += chunk) {
      args.count = std::min(chunk, oy1 - oy);
      const size_t n_rows = (args.count - 1) * p.stride_h + p.kh;
      for (size_t r = 0; r < n_rows; ++r) {
        // Input row oy * stride + r - pad_top, or a padding row.
        const size_t iy = oy * p.stride_h + r;
        rows[r] = iy >= p.pad_top && iy - p.pad_top < p.h ? xp + (iy - p.pad_top) * p.w : nullptr;
      }
      args.out = y + (plane * oh + oy) * ow;
      uk.fn(&args);
      if (act) act(args.count * ow, args.out, args.out, nullptr);
    }
  };
  ParallelFor(threads > 1 ? pool : nullptr, tasks, task);
  return Status::Ok();
}

}  // namespace kiln::dwconv
