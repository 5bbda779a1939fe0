#include "kernels/dwconv/dwconv.h"

#include <algorithm>
#include <limits>

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
              const gemm::Epilogue& ep, float* y, ThreadPool* pool, std::optional<IsaLevel> isa) {
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

  const DwUkernel& uk = SelectRow(p, cap);
  const size_t oh = p.out_h(), ow = p.out_w();
  const size_t cb = p.channel_block;
  const size_t planes = p.n * ((p.c + cb - 1) / cb);
  // Whole planes per task when there are enough of them; otherwise bands of rows, so that every
  // thread gets a share (a 7x7x1 batch-1 layer still splits).
  const size_t threads = ThreadCount(pool);
  size_t bands = 1;
  if (threads > 1 && planes < 4 * threads) bands = std::min(oh, (4 * threads + planes - 1) / planes);
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
      const float* rows[kMaxBlockedRowPointers];
      F32DwConvRowC args{};
      args.kh = p.kh;
      args.kw = p.kw;
      args.stride = p.stride_w;
      args.cb = cb;
      args.in_w = p.w;
      args.out_w = ow;
      args.pad_left = p.pad_left;
      args.row_step = p.stride_h;
      args.rows = rows;
      args.w = w + c0 * taps;
      args.bias = bb;
      args.min = lo;
      args.max = hi;
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
