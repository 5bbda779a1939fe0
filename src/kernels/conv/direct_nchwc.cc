// kDirectNchwc: direct convolution on NCHWc (groups == 1). A padded layer first copies its input
// into a zero-padded buffer in the workspace, so that the tiles of an output row are cut freely
// and each reads its window at fixed offsets. Clipping the window at the borders instead (no
// copy) splits each row into runs with the same clipped taps: on a 7x7 map with pad 1, runs of
// 1, 5 and 1 columns, and a 1-column run keeps 2 accumulators, latency-bound. The copy costs one
// pass over the input against C_out * KH * KW multiplies per input value; where those are few on
// a wide map, the window is clipped in place (CopyPays). Taps that read only padding for a
// whole row or a whole tile are skipped either way (over the copy: a third of the work of the
// first and last rows of a 7x7 map). bench_conv --set 3x3 --blocked, 1 thread, Zen 4, AVX-512:
// 3x3 512->512 at 7x7 3.2 -> 2.04 ms, GoogLeNet's 7x7 layers 0.456 -> 0.378 ms, 3x3 s2 512->512
// at 14x14 3.1 -> 2.2 ms; 56x56 maps unchanged. Where only the left padding is read (3x3 s2
// pad 1 on an even width), only a strip for each row's first tile is copied (StripWidth). Work
// items are (image, pair of output channel blocks, output row, chunk of the row).
#include <algorithm>
#include <memory>

#include "kernels/conv/conv_ukernels.h"
#include "kernels/conv/direct_nchwc_calls.h"
#include "kernels/conv/direct_nchwc_input.h"
#include "kernels/conv/drivers.h"
#include "support/cpu.h"

namespace kiln::conv {

Status PrepareDirectNchwc(const float* weights, PreparedConv* conv) {
  using A = PreparedConvAccess;
  const ConvParams& p = A::params(*conv);
  const ConvNchwcUkernel& uk = SelectConvNchwcUkernel(A::isa(*conv));
  const size_t c = uk.block, cb_n = (p.c + c - 1) / c, mb_n = (p.m + c - 1) / c;
  const size_t taps = p.kh * p.kw;
  const size_t size = mb_n * cb_n * taps * c * c;
  std::shared_ptr<float> w(new float[size](), std::default_delete<float[]>());
  for (size_t m = 0; m < p.m; ++m) {
    for (size_t ci = 0; ci < p.c; ++ci) {
      for (size_t t = 0; t < taps; ++t) {
        const size_t dst = (((m / c * cb_n + ci / c) * taps + t) * c + ci % c) * c + m % c;
        w.get()[dst] = weights[(m * p.c + ci) * taps + t];
      }
    }
  }
  A::weights(*conv) = std::move(w);
  A::block(*conv) = c;
  return Status::Ok();
}

namespace {

using direct_nchwc::BalancedChunk;
using direct_nchwc::BlockGroups;
using direct_nchwc::BusiestLoad;
using direct_nchwc::CallInPasses;
using direct_nchwc::GatherChunkCap;
using direct_nchwc::GatherFloats;
using direct_nchwc::Gathers;
using direct_nchwc::HalfLast;
using direct_nchwc::kMaxChunk;
using direct_nchwc::kMinChunk;
using direct_nchwc::Padded;
using direct_nchwc::PaddedOf;
using direct_nchwc::PadInput;
using direct_nchwc::RowGroupBlocks;
using direct_nchwc::StripInput;
using direct_nchwc::SubsampleChunk;
using direct_nchwc::TileCut;

// The taps [lo, hi) of output position `o`'s window (in padded coordinates: taps starting at
// o * stride, dilation apart) that land in the input [pad, pad + size); false when none do.
bool ClipRange(size_t o, size_t taps, size_t dilation, size_t pad, size_t size, size_t stride,
               size_t* lo, size_t* hi) {
  const size_t start = o * stride;
  size_t l = 0;
  while (l < taps && start + l * dilation < pad) ++l;
  size_t h = l;
  while (h < taps && start + h * dilation < pad + size) ++h;
  *lo = l;
  *hi = h;
  return l < h;
}

// Outputs whose window misses the input entirely: the bias (plus the output's contents when
// accumulating), clamped.
void FillEmpty(const float* bias, bool accumulate, size_t nob, size_t c, size_t cols,
               size_t ob_stride, const Clamp& clamp, float* out) {
  for (size_t ob = 0; ob < nob; ++ob) {
    for (size_t j = 0; j < cols; ++j) {
      for (size_t co = 0; co < c; ++co) {
        float& o = out[ob * ob_stride + j * c + co];
        const float v = (bias ? bias[ob * c + co] : 0.0f) + (accumulate ? o : 0.0f);
        o = std::min(std::max(v, clamp.min), clamp.max);
      }
    }
  }
}

}  // namespace

size_t DirectNchwcWorkspace(const PreparedConv& conv, size_t threads) {
  return std::max(PaddedOf(conv.params(), SelectConvNchwcUkernel(conv.isa())).floats,
                  GatherFloats(conv.params(), conv.block(), threads));
}

Status RunDirectNchwc(const PreparedConv& conv, const float* x, float* y, const RunOptions& o,
                      float* workspace) {
  ConvParams p = conv.params();
  const ConvNchwcUkernel& uk = SelectConvNchwcUkernel(conv.isa());
  const size_t c = uk.block;
  if (c != conv.block()) return Status::Error("conv: NCHWc block changed since prepare");
  const size_t oh_n = p.out_h(), ow_n = p.out_w();
  const Padded pad = PaddedOf(p, uk);
  const float* strip = nullptr;  // the left strip (StripWidth), beside the input in place
  if (pad.floats > 0 && !workspace) {
    return Status::Error("conv: direct_nchwc needs its workspace");
  }
  if (pad.strip) {
    StripInput(p, pad, c, x, workspace, o.pool);
    strip = workspace;
  } else if (pad.floats > 0) {
    PadInput(p, pad, c, x, workspace, o.pool);
    // From here on the layer is the unpadded one over the copy, with the same output size.
    x = workspace;
    p.h = pad.hp;
    p.w = pad.wp;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 0;
  }
  const size_t x_image = (p.c + c - 1) / c * p.h * p.w * c;  // floats of an image of x
  const bool gather = Gathers(conv.params());  // unpadded: x is the input itself
  if (gather) {
    if (!workspace) return Status::Error("conv: direct_nchwc needs its workspace");
    p.h = oh_n;
    p.w = ow_n;
    p.stride_h = p.stride_w = 1;
  }
  const ConvParams& q = conv.params();
  // Padding clips the window: over the copy, the taps that read only padding are skipped; on
  // the input itself, the taps outside it must be.
  bool clip = q.pad_top || q.pad_left || q.pad_bottom || q.pad_right;
  const bool copied = pad.floats > 0 && !pad.strip;
  // An unpadded 1x1 at stride 1 is a GEMM over the pixels: its input and output planes are one
  // row of H * W pixels each, so a tile fills its 12 or 24 columns even on 7x7 planes (a row of
  // 7 would leave most of the tile empty), cut into chunks of whole tiles for the threads.
  size_t rows = oh_n, cols = ow_n;
  size_t chunk_w = 0;  // 0: one work item per output row
  if (p.kh == 1 && p.kw == 1 && p.stride_h == 1 && p.stride_w == 1 && (!clip || copied)) {
    p.w *= p.h;
    p.h = 1;
    cols *= rows;
    rows = 1;
    chunk_w = kMinChunk;
    clip = false;  // a padded 1x1: the rows of the padded plane run as one
  }
  const size_t cb_n = (p.c + c - 1) / c, mb_n = (p.m + c - 1) / c;
  const size_t chunk0 = chunk_w == 0 ? cols : std::min(chunk_w, cols);
  const size_t chunks0 = (cols + chunk0 - 1) / chunk0;
  // "Pairs": the groups of up to mob output blocks, each one microkernel call wide (2, or the
  // microkernel's wider tiles: pointwise_oc_blocks on a 1x1 over pixels, conv_oc_blocks
  // elsewhere). A count of blocks that leaves one over, the last holding at most half a block of
  // real channels (40 = 16 + 16 + 8 at c = 16 in pairs), leads with the lone block, so the half
  // block runs inside a group (AVX-512: a 12 x (16 + 8) tile) rather than alone (24 columns x 8
  // channels: one ymm FMA per broadcast, load-bound). bench_conv --blocked, 1 thread, in pairs:
  // 240 -> 40 at 28x28 0.174 -> 0.152 ms, 120 -> 40 0.088 -> 0.077 ms, 24 -> 72 at 56x56 0.135 ->
  // 0.127 ms. Otherwise, on rows of a 3x3 and the like, a remainder of whole blocks narrower
  // than g - 1 leads as groups of g - 1 (16 blocks in threes: 2 + 2 + 4 x 3, not 5 x 3 + 1,
  // whose lone block is load-bound too). Not on a 1x1 over pixels: 16 -> 96 at 112x112 ran 4%
  // slower as 3 + 3 than as 4 + 2, 24 -> 144 at 56x56 2% as 3 + 3 + 3 than as 4 + 4 + 1.
  const bool half_last = HalfLast(p, c);
  // A 1x1 over pixels in pairs at AVX2 leads an odd count with 3 blocks (a 3 x 4 tile): the lone
  // block's 1 x 12 tile broadcasts 12 inputs per 12 FMAs, and ran at 82-92 GFLOP/s on hot data
  // where 2 x 6 and 3 x 4 ran 107-114 (Zen 5 at the AVX2 level, K = 16..144).
  auto groups_for = [&](size_t g) {
    return BlockGroups::Of(mb_n, g, half_last, rows > 1, rows == 1 ? uk.odd_lead_blocks : 0);
  };
  // The taller groups of a 1x1 over pixels, unless they leave the threads more uneven work: a
  // 7x7 map is one chunk per group, and 160 -> 960 splits as 8 + 7 groups of 4 on 2 threads
  // against 15 + 15 pairs.
  const size_t threads = ThreadCount(o.pool);
  size_t mob = uk.max_oc_blocks;
  const size_t block_weights = cb_n * p.kh * p.kw * c * c * sizeof(float);  // an output block's
  // (Fewer blocks than one tall call holds run as one call either way, their half last block
  // inside it: 120 -> 40 at 28x28 lost 4% in calls of 1 + 2 blocks.)
  const bool tall_fits = !uk.pointwise_tall_in_half_l1 || mb_n < uk.pointwise_oc_blocks ||
                         2 * uk.pointwise_oc_blocks * block_weights <= GetCpuInfo().l1d_bytes;
  if (rows == 1 && uk.pointwise_oc_blocks > mob && tall_fits) {
    // Output blocks x chunks of the busiest thread: each chunk counted as one column.
    auto busiest = [&](size_t g) {
      return BusiestLoad(groups_for(g), p.n, chunks0, 1, false, threads);
    };
    if (busiest(uk.pointwise_oc_blocks) <= busiest(mob)) mob = uk.pointwise_oc_blocks;
  } else if (rows > 1) {
    mob = RowGroupBlocks(q, uk);
  }
  const BlockGroups groups = groups_for(mob);
  const size_t pairs = groups.count;
  // Chunks of whole tiles, 96 columns for the split above; then as long as at least 8 items
  // per thread remain, up to 4x longer (a call per chunk and its setup cost ~3% of a short-K
  // chunk of 96). bench_conv --blocked, 1 thread, three alternating runs against chunks of 96:
  // 32 -> 16 at 112x112 97.0-97.3 -> 98.4-99.2 GFLOP/s, 16 -> 96 95.0-95.1 -> 96.6-97.3,
  // 24 -> 144 at 56x56 99.3-99.6 -> 100.8-101.1. Not where an activation pass follows each
  // chunk: it reads the chunk's output from L1 (4 blocks x 96 columns: 24 KiB).
  const ukernels::F32VUnaryParamFn act = VectorActivation(o.epilogue, conv.isa());
  // Nor past the width at which a chunk's input, with the weights, would stop fitting in L2
  // where the plane streams from L3 once (streams_once, below): 512 -> 256 at 28x28 (512 KB of
  // weights), chunks of 384 by group -> 192 by chunk, 0.91-0.98 -> 1.00-1.01 of oneDNN (Zen 4,
  // 1 thread, three alternating runs).
  //
  // The input plane of a 1x1 over pixels streams from L3 where it is larger than L2 (a
  // gathering layer's microkernels read its chunk's pixels from L2 instead).
  const size_t l2 = GetCpuInfo().l2_bytes, in_pixel = cb_n * c * sizeof(float);
  const bool plane_past_l2 = chunk_w != 0 && !gather && p.w * in_pixel > l2;
  // Whether items of chunks `w` wide go chunk by chunk so that such a plane streams once: more
  // than one group, and a chunk's input fits in L2 with every group's weights (a 1x1's: mb_n
  // blocks of c output channels over all the input pixel's channels).
  auto streams_once = [&](size_t w) {
    return plane_past_l2 && pairs > 1 && (w + mb_n * c) * in_pixel <= l2;
  };
  size_t chunk = chunk0;
  const size_t chunk_cap = gather ? GatherChunkCap(q, c) : kMaxChunk;
  while (chunk_w != 0 && !act && chunk < cols && chunk * 2 <= chunk_cap &&
         p.n * pairs * ((cols + chunk * 2 - 1) / (chunk * 2)) >= 8 * threads &&
         (!streams_once(chunk) || streams_once(std::min(chunk * 2, cols)))) {
    chunk = std::min(chunk * 2, cols);
  }
  // With more than one thread, where the busiest thread has over 5% more than its share of the
  // work (threads take equal counts of consecutive items), the chunk width (at most the one
  // above, in whole tiles of the groups) and the order of the items that give it the least. A
  // gathering layer's items always go by chunk (a chunk's groups follow its gathering), so full
  // chunks and a short last one left a thread idle: 2 threads, 1x1 s2 512 -> 1024 at 28x28,
  // 196 pixels in chunks of 192 + 4, ran at one thread's speed (bench_conv 265 GFLOP/s, now
  // 102 + 94: 501). Elsewhere items go by group (its weights stay in cache over its chunks)
  // unless by chunk evens the threads out: 480 -> 112 at 14x14, groups of 4 + 3 blocks, 0.90 ->
  // 0.95-0.97 of oneDNN. Not below the 5%: on 112x112 planes (the output streams to L3) both
  // narrower chunks and items by chunk ran 10-30% slower (conv::Run, 2 threads, 16 -> 96 at
  // 112x112 440 -> 363 / 306 GFLOP/s) for a 1% better split.
  //
  // A 1x1 over pixels whose input plane is larger than L2 also goes by chunk where a chunk's
  // input and all the groups' weights fit in L2 together: by group, every group streams the
  // whole plane from L3 again (ResNet-50's 256 -> 128 at 56x56: 3.2 MB, twice); by chunk, the
  // plane streams once and the groups after the first read the chunk from L2. Zen 4 (1 MiB L2),
  // bench_conv --blocked, 1 thread, three alternating runs, kiln/oneDNN by median: 256 -> 128 at
  // 56x56 0.74-0.78 -> 0.99-1.02 (a busy host; 0.86-0.97 by group on a quieter one).
  bool by_chunk = gather || streams_once(chunk);
  if (chunk_w != 0 && threads > 1) {
    const size_t load = BusiestLoad(groups, p.n, cols, chunk, by_chunk, threads);
    const size_t share = p.n * cols * mb_n / threads;
    if (load * 20 > share * 21) {
      const size_t quantum = std::max<size_t>(1, uk.tile * uk.max_oc_blocks / mob);
      auto [width, least] = BalancedChunk(groups, p.n, cols, chunk, by_chunk, threads, quantum);
      if (!by_chunk) {
        const auto [width2, least2] =
            BalancedChunk(groups, p.n, cols, chunk, true, threads, quantum);
        if (least2 < least) width = width2, by_chunk = true;
      }
      chunk = width;
    }
  }
  const size_t chunks = (cols + chunk - 1) / chunk;
  const size_t items = p.n * pairs * rows * chunks;
  const Clamp clamp = ClampOf(o.epilogue);
  const float* bias = o.epilogue.bias_kind == gemm::BiasKind::kPerRow ? o.epilogue.bias : nullptr;
  const float* weights = PreparedConvAccess::weights(conv);

  ukernels::F32ConvNchwcParams base{};
  base.ic_blocks = cb_n;
  base.ic_last = p.c % c;  // a partial last input block: the kernel skips its zero lanes
  base.kh = p.kh;
  base.kw = p.kw;
  base.in_cb_stride = (gather ? chunk : p.h * p.w) * c;
  base.in_kh_stride = p.dilation_h * p.w * c;
  base.in_kw_stride = p.dilation_w * c;
  base.in_ow_stride = p.stride_w * c;
  base.w_cb_stride = p.kh * p.kw * c * c;
  base.w_kh_stride = p.kw * c * c;
  base.w_ob_stride = cb_n * base.w_cb_stride;
  base.out_ob_stride = rows * cols * c;
  base.min = clamp.min;
  base.max = clamp.max;
  base.accumulate = o.accumulate ? 1 : 0;

  // Where a pair's weights are at most 128 KB, the last item of each pair pulls the next
  // pair's weights into L2 during its first tile. A model reads each layer's weights once per
  // inference, from L3 or memory, and on a 7x7 map (one chunk per pair, 5 tiles) the first tile
  // waited on them: bench_conv --cold, 160 -> 960 at 7x7 0.181 -> 0.161 ms, 192 -> 1152 0.255
  // -> 0.231 ms; kiln profile --iters 20, direct_nchwc steps of EfficientNet-B0 7.57 -> 7.33
  // ms, MobileNetV2 5.43 -> 5.28 ms (Zen 4). Larger pairs (1152 input channels) stream well
  // enough on their own and lost a little. On Zen 5 the weights stream well without: the
  // prefetches only crowd the first tile. Median of 21 interleaved rounds, with -> without,
  // warm / cycling through 16 weight copies: 512 -> 2048 at 7x7 246 -> 257 / 189 -> 202 GFLOP/s,
  // 320 -> 1280 at 7x7 242 -> 251 / 201 -> 208, 160 -> 960 at 7x7 229 -> 234 (16 copies),
  // 256 -> 1024 at 14x14 level; short K (24 -> 144 at 56x56 and the like) level.
  const bool prefetch_next = base.w_ob_stride * mob * sizeof(float) <= (128u << 10) &&
                             GetCpuInfo().uarch != Uarch::kZen5;
  // Whole rows (one chunk each) go to the threads by work, not by count: the groups differ in
  // size (16 blocks in threes: 2 + 2 + 4 x 3), and equal counts of rows gave one thread 7 of
  // them and the other 9 on 3x3 s2 256 -> 256 at 28x28. A row goes to the thread whose share of
  // the work (row blocks, in item order) holds its middle.
  const size_t total = p.n * rows * mb_n;
  // Passes over the input blocks of a 1x1 over pixels help on a 32 KiB L1d and cost on a 48 KiB
  // one. bench_conv --blocked, KILN_ISA=avx2, Zen 5 (48 KiB L1d), 1 thread, two runs each,
  // kiln/oneDNN, one pass -> passes of 8: geomean of the 46 layers with over 64 input channels
  // 1.01 -> 0.94 (MobileNetV2 576->160 at 7x7 1.00 -> 0.79-0.90, ResNet-50 2048->512 at 7x7
  // 1.08-1.11 -> 0.82-0.99, 256->64 at 56x56 1.02-1.04 -> 1.05-1.08). Zen 3: see the table.
  // Some rows take them only where the input plane is larger than L2 (it streams from L3), and
  // then at most two (ConvNchwcUkernel::pointwise_passes_past_l2); some on any L1d where a
  // call's weights are larger than it (pointwise_passes_past_l1: the Intel Xeon's table row).
  const size_t l1d = GetCpuInfo().l1d_bytes;
  const bool passes =
      uk.pointwise_passes_past_l1
          ? mob * block_weights > l1d
          : l1d <= (32u << 10) && (!uk.pointwise_passes_past_l2 || plane_past_l2);
  // Past the L1d, each pass takes a third of it in weights (the rest holds the chunk's input and
  // output): 4 input blocks in 4-block calls, 8 in 2-block calls at 48 KiB.
  const size_t block_pass = std::max<size_t>(1, l1d / 3 / (mob * base.w_cb_stride * sizeof(float)));
  size_t ic_pass = chunk_w == 0 || !passes       ? 0
                   : uk.pointwise_passes_past_l1 ? block_pass
                                                 : uk.pointwise_ic_blocks;
  if (ic_pass != 0 && uk.pointwise_passes_past_l2) ic_pass = std::max(ic_pass, (cb_n + 1) / 2);
  auto owner = [&](size_t item) {
    const size_t pair = item / rows % pairs, size = groups.Size(pair);
    const size_t before = item / rows / pairs * mb_n + groups.Start(pair);  // whole groups
    const size_t done = before * rows + item % rows * size;
    return std::min(threads - 1, (2 * done + size) * threads / (2 * total));
  };
  ParallelFor(o.pool, threads, [&](size_t t) {
    float bias_tail[64];  // bias of the blocks of a call (up to 4 x 16) past M, zero-padded
    float* gathered = gather ? workspace + t * cb_n * c * chunk : nullptr;
    size_t gathered_chunk = items;  // (image, chunk) in `gathered`: none yet
    size_t first = items * t / threads, last = items * (t + 1) / threads;
    if (chunks == 1 && rows > 1 && threads > 1) {
      for (first = 0; first < items && owner(first) < t;) ++first;
      for (last = first; last < items && owner(last) == t;) ++last;
    }
    for (size_t item = first; item < last; ++item) {
      // Over the copy, the rows of a pair start in the middle: the first row of a pair pulls its
      // weights from L3, and a full-window row reads them in one sequential stream, where a
      // clipped row skips every third tap and leaves the rest to the next row (ResNet's
      // 512->512 at 7x7, 2.4 ms starting at row 0 against 2.04 ms).
      const size_t skew = clip && (copied || strip) ? rows / 2 : 0;
      size_t part = item % chunks, oh = (item / chunks + skew) % rows;
      size_t pair = item / chunks / rows % pairs, n = item / chunks / rows / pairs;
      if (by_chunk) {  // one row: see BalancedChunk's choice above
        pair = item % pairs, part = item / pairs % chunks, n = item / pairs / chunks, oh = 0;
      }
      const size_t ob0 = groups.Start(pair), nob = groups.Size(pair);
      ukernels::F32ConvNchwcParams k = base;
      k.oc_blocks = nob;
      if (ob0 + nob == mb_n) k.oc_last = p.m - (mb_n - 1) * c;
      if (k.oc_last == c) k.oc_last = 0;
      k.bias = BlockBias(bias, ob0, nob, c, p.m, bias_tail);
      const float* w_pair = weights + ob0 * base.w_ob_stride;
      // The pair's last item (its last row and chunk) pulls the next pair's weights; where
      // items go by chunk, every item pulls those of the next.
      const bool last_of_pair = by_chunk || item % (chunks * rows) + 1 == chunks * rows;
      if (prefetch_next && last_of_pair && pair + 1 < pairs) {
        k.prefetch = w_pair + nob * base.w_ob_stride;
        k.prefetch_blocks = groups.Size(pair + 1);
      }
      float* y_row = y + ((n * mb_n + ob0) * rows + oh) * cols * c;
      const float* x_n = x + n * x_image;
      const size_t ow0 = part * chunk, ow1 = std::min(cols, ow0 + chunk);
      if (gather) {
        if (gathered_chunk != n * chunks + part) {
          SubsampleChunk(q, c, x_n, ow0, ow1, gathered, chunk * c);
          gathered_chunk = n * chunks + part;
        }
        x_n = gathered;
      }
      const size_t col0 = gather ? ow0 : 0;  // the column that x_n's first pixel holds
      const TileCut tiles(uk, nob);
      // Runs [a, b) whose taps [kh_lo, kh_hi) x [kw_lo, kw_hi) all land in the input, or in
      // the padded copy.
      auto run = [&](size_t a, size_t b, size_t kh_lo, size_t kh_hi, size_t kw_lo, size_t kw_hi) {
        k.kh = kh_hi - kh_lo;
        k.kw = kw_hi - kw_lo;
        k.weights = w_pair + (kh_lo * p.kw + kw_lo) * c * c;
        // Input offsets of the first tap of column a (in the copy's coordinates, or the input's
        // when it is clipped in place, where they are >= 0).
        const size_t ih = oh * p.stride_h + kh_lo * p.dilation_h - (copied ? 0 : q.pad_top);
        const size_t iw =
            a * p.stride_w + kw_lo * p.dilation_w - (copied ? 0 : q.pad_left) - col0;
        k.input = x_n + (ih * p.w + iw) * c;
        k.output = y_row + a * c;
        k.ow = b - a;
        CallInPasses(uk, k, ic_pass);
        k.prefetch = nullptr;  // one tile pulls them
      };
      // same_taps: every tile of [a, b) reads the same taps, so where the microkernel's own cut
      // is the one wanted, [a, b) is one call (16 -> 96 at 112x112: a call per 12-column tile
      // cost a tenth of the 384 FMAs of the tile); so is the equal cut where the microkernel
      // makes it (even_cut: AVX2). bench_conv --blocked, AVX2, three alternating runs, best
      // rounds, a call per tile -> one: 160 -> 960 at 7x7 0.94-0.95 -> 0.97 of oneDNN, 192 ->
      // 1152 0.95 -> 0.96-0.97, 576 -> 160 0.99 -> 1.00-1.02.
      auto cut = [&](size_t a, size_t b, bool same_taps, auto&& fn) {
        const size_t span = b - a;
        if (same_taps && !tiles.Equal(span)) return fn(a, b);
        if (same_taps && uk.even_cut) {  // the microkernel cuts evenly itself
          k.even_cut = 1;
          fn(a, b);
          k.even_cut = 0;
          return;
        }
        for (size_t i = 0, j0 = a; i < tiles.Tiles(span); ++i) {
          const size_t j1 = a + tiles.End(span, i);
          fn(j0, j1);
          j0 = j1;
        }
      };
      size_t kh_lo = 0, kh_hi = p.kh;
      const bool rows_hit =
          !clip || ClipRange(oh, q.kh, q.dilation_h, q.pad_top, q.h, q.stride_h, &kh_lo, &kh_hi);
      if (!clip) {
        cut(ow0, ow1, true, [&](size_t a, size_t b) { run(a, b, 0, p.kh, 0, p.kw); });
      } else if (copied) {
        // Taps that read only padding for the whole row, or the whole tile, are skipped: on a
        // 7x7 map with pad 1, a third of the taps of the first and last rows.
        if (!rows_hit) kh_lo = 0, kh_hi = p.kh;  // the padding reads zero: the bias
        cut(ow0, ow1, false, [&](size_t a, size_t b) {
          // The union of the columns' taps: the window moves right by a stride per column, so
          // the last column has the lowest first tap and the first column the highest last.
          size_t lo_a, hi_a, lo_b, hi_b;
          const bool hit_a =
              ClipRange(b - 1, q.kw, q.dilation_w, q.pad_left, q.w, q.stride_w, &lo_a, &hi_a);
          const bool hit_b =
              ClipRange(a, q.kw, q.dilation_w, q.pad_left, q.w, q.stride_w, &lo_b, &hi_b);
          if (!hit_a || !hit_b) lo_a = 0, hi_b = p.kw;
          run(a, b, kh_lo, kh_hi, std::min(lo_a, lo_b), std::max(hi_a, hi_b));
        });
      } else if (strip) {
        // The row's first tile reads the strip (padded columns, the input's rows), the others
        // the input in place, every column of their windows inside it (StripWidth).
        if (!rows_hit) {
          FillEmpty(k.bias, o.accumulate, nob, c, ow1 - ow0, base.out_ob_stride, clamp,
                    y_row + ow0 * c);
        } else {
          cut(ow0, ow1, false, [&](size_t a, size_t b) {
            if (a != 0) return run(a, b, kh_lo, kh_hi, 0, p.kw);
            ukernels::F32ConvNchwcParams s = k;
            s.kh = kh_hi - kh_lo;
            s.kw = p.kw;
            s.weights = w_pair + kh_lo * p.kw * c * c;
            const size_t ih = oh * p.stride_h + kh_lo * p.dilation_h - q.pad_top;
            s.input = strip + (n * cb_n * q.h + ih) * pad.wp * c;
            s.in_cb_stride = q.h * pad.wp * c;
            s.in_kh_stride = p.dilation_h * pad.wp * c;
            s.output = y_row;
            s.ow = b;
            uk.fn(&s);
            k.prefetch = nullptr;
          });
        }
      } else {
        // In place: runs of columns with the same clipped taps. The interior [in0, in1), whose
        // windows lie inside the input, is one run; the few columns at each border are walked.
        const size_t in0 = (q.pad_left + q.stride_w - 1) / q.stride_w;
        const size_t reach = (q.kw - 1) * q.dilation_w;  // the window's width - 1
        const size_t in1 = std::max(
            in0, q.pad_left + q.w > reach ? (q.pad_left + q.w - 1 - reach) / q.stride_w + 1 : 0);
        auto inside = [&](size_t col) { return col >= in0 && col < in1; };
        size_t ow = ow0;
        while (ow < ow1) {
          size_t kw_lo = 0, kw_hi = p.kw, end = std::min(in1, ow1);
          bool hit = true;
          if (!inside(ow)) {
            hit = ClipRange(ow, q.kw, q.dilation_w, q.pad_left, q.w, q.stride_w, &kw_lo, &kw_hi);
            for (end = ow + 1; end < ow1 && !inside(end); ++end) {
              size_t lo, hi;
              ClipRange(end, q.kw, q.dilation_w, q.pad_left, q.w, q.stride_w, &lo, &hi);
              if (lo != kw_lo || hi != kw_hi) break;
            }
          }
          if (!rows_hit || !hit) {
            FillEmpty(k.bias, o.accumulate, nob, c, end - ow, base.out_ob_stride, clamp,
                      y_row + ow * c);
          } else {
            cut(ow, end, true,
                [&](size_t a, size_t b) { run(a, b, kh_lo, kh_hi, kw_lo, kw_hi); });
          }
          ow = end;
        }
      }
      for (size_t ob = 0; act && ob < nob; ++ob) {
        float* yb = y_row + ob * base.out_ob_stride + ow0 * c;
        act((ow1 - ow0) * c, yb, yb, nullptr);
      }
    }
  });
  return Status::Ok();
}

}  // namespace kiln::conv
