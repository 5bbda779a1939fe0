// kGroupedDirect: grouped convolution with few channels per group (RegNet's and ResNeXt's 3x3
// layers: 8 to 32 per group). im2col + GEMM gives each group a GEMM of M/g rows and C/g * KH * KW
// columns, too small to fill a register tile, after building columns for every pixel. Here each
// group's input is copied once into zero-padded polyphase planes (input channel x row phase x
// column phase, one common row pitch), in which every output pixel reads each tap at a fixed
// offset from its flat index (f32_gconv.h): the microkernel then runs over the whole output of
// the group as one flat run, with full vectors even for 7x7 outputs, keeps up to 8 output
// channels x 32 pixels in registers, and stores the valid columns straight into y (a scratch
// and a copy-out cost the 3-channel stems 5-10%). The activations a clamp cannot express run
// over each output channel after.
//
// Work items are (image, group): each copies its input once and walks all its output rows.
// Grouped CNNs have dozens of groups; a layer with fewer (image, group) pairs than threads (an
// image stem: one) splits each pair into bands of output rows instead, each thread copying
// only the input rows of its bands (ResNet's 7x7 stem ran on one thread).
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <numeric>

#include "kernels/conv/conv_ukernels.h"
#include "kernels/conv/drivers.h"

namespace kiln::conv {
namespace {

constexpr size_t kMaxOutputs = 8;   // output channels per microkernel call
constexpr size_t kMaxTaps = 1024;   // (input channel, tap) pairs per group: the offset table
constexpr size_t kMaxPlanes = size_t{1} << 30;  // floats of one thread's planes (offsets fit)

struct Geometry {
  size_t ph, pw;      // rows and columns of one phase plane of a band (pw is the pitch)
  size_t plane;       // floats per plane
  size_t planes;      // floats of all planes of a group, plus the microkernel's over-read
  size_t count;       // flat output indices: (OH - 1) * pw + OW
  size_t per_thread;  // planes, in whole cache lines
};

size_t RoundUp16(size_t v) { return (v + 15) / 16 * 16; }

// band_rows: the output rows of a band (0: the whole output, planes of every input row).
Geometry Geometry(const ConvParams& p, IsaLevel isa, size_t band_rows = 0) {
  struct Geometry g;
  g.ph = (p.h + p.pad_top + p.pad_bottom + p.stride_h - 1) / p.stride_h;
  // A band of output rows reads (KH - 1) / stride plane rows past its own.
  if (band_rows) g.ph = std::min(g.ph, band_rows + (p.kh - 1) / p.stride_h);
  g.pw = (p.w + p.pad_left + p.pad_right + p.stride_w - 1) / p.stride_w;
  g.plane = g.ph * g.pw;
  const size_t chunk = SelectGConvUkernel(isa).chunk;
  g.planes = RoundUp16(p.c / p.groups * p.stride_h * p.stride_w * g.plane + chunk);
  g.count = (p.out_h() - 1) * g.pw + p.out_w();
  g.per_thread = g.planes;
  return g;
}

// Scatters the rows of channel plane `src` (H x W) that fall on plane rows [q0, q0 + ph) into
// its stride-phase planes at `dst` (the zero padding around them is already there and never
// written).
void FillPlanes(const ConvParams& p, const struct Geometry& g, const GConvUkernel& uk, size_t q0,
                const float* src, float* dst) {
  const size_t sh = p.stride_h;
  const size_t iy0 = std::max(q0 * sh, p.pad_top) - p.pad_top;
  const size_t iy1 = std::min(std::max((q0 + g.ph) * sh, p.pad_top) - p.pad_top, p.h);
  for (size_t iy = iy0; iy < iy1; ++iy) {
    const size_t r = iy + p.pad_top;
    float* row = dst + (r % sh) * p.stride_w * g.plane + (r / sh - q0) * g.pw;
    const float* s = src + iy * p.w;
    if (p.stride_w == 1) {
      std::memcpy(row + p.pad_left, s, p.w * sizeof(float));
      continue;
    }
    if (p.stride_w == 2) {
      const size_t q_even = p.pad_left % 2;  // the phase of the even input columns
      uk.deinterleave2(p.w, s, row + q_even * g.plane + p.pad_left / 2,
                       row + (1 - q_even) * g.plane + (p.pad_left + 1) / 2);
      continue;
    }
    for (size_t qx = 0; qx < p.stride_w; ++qx) {
      // The first input column of phase qx, and its column in the phase plane.
      const size_t ix0 = (qx + p.stride_w - p.pad_left % p.stride_w) % p.stride_w;
      float* out = row + qx * g.plane + (ix0 + p.pad_left) / p.stride_w;
      for (size_t ix = ix0; ix < p.w; ix += p.stride_w) *out++ = s[ix];
    }
  }
}

// Zeroes the positions of channel planes `dst` (plane rows [q0, q0 + ph)) that FillPlanes never
// writes: the padding, the columns and rows a phase plane has past the input. Zeroing only
// these (not the whole planes before the copy writes them again) saves 2-5% of a 3x3 stem.
void ZeroPadding(const ConvParams& p, const struct Geometry& g, size_t q0, float* dst) {
  for (size_t qy = 0; qy < p.stride_h; ++qy) {
    for (size_t qx = 0; qx < p.stride_w; ++qx) {
      float* plane = dst + (qy * p.stride_w + qx) * g.plane;
      // Plane column c holds padded column c * stride + qx: the input's columns are [c0, c1).
      const size_t sw = p.stride_w, end = p.pad_left + p.w;
      const size_t c0 = qx >= p.pad_left ? 0 : std::min(g.pw, (p.pad_left - qx + sw - 1) / sw);
      const size_t c1 = qx >= end ? 0 : std::min(g.pw, (end - qx + sw - 1) / sw);
      for (size_t i = 0; i < g.ph; ++i) {
        const size_t r = (q0 + i) * p.stride_h + qy;
        float* row = plane + i * g.pw;
        if (r < p.pad_top || r >= p.pad_top + p.h || c0 >= c1) {
          std::fill_n(row, g.pw, 0.0f);
        } else {
          std::fill_n(row, c0, 0.0f);
          std::fill_n(row + c1, g.pw - c1, 0.0f);
        }
      }
    }
  }
}

}  // namespace

bool GroupedDirectSupported(const ConvParams& p) {
  if (p.groups < 1 || p.dilation_h != 1 || p.dilation_w != 1) return false;
  // One group of a few channels is an image stem (RGB, RGBA, grey): the same kernel, with no
  // GEMM tile to fill from K = C * KH * KW = 27 (bench_conv, 1 thread, Zen 4: 1.14x im2col on
  // ResNet's 7x7 s2 3->64, 1.31x on MobileNetV2's 3x3 s2 3->32). From 16 channels up the
  // NCHWc direct kernel is faster (0.84-0.91 of it at 16->32/48, 32->128).
  if (p.groups == 1 && p.c > kMaxStemChannels) return false;
  if (p.c / p.groups * p.kh * p.kw > kMaxTaps) return false;
  const double planes = static_cast<double>(p.c / p.groups) *
                        static_cast<double>(p.h + p.pad_top + p.pad_bottom + p.stride_h) *
                        static_cast<double>(p.w + p.pad_left + p.pad_right + p.stride_w);
  return planes < static_cast<double>(kMaxPlanes);
}

size_t GroupedWorkspace(const PreparedConv& conv, size_t threads) {
  return Geometry(conv.params(), conv.isa()).per_thread * std::max<size_t>(threads, 1);
}

Status PrepareGrouped(const float* weights, PreparedConv* conv) {
  using A = PreparedConvAccess;
  const ConvParams& p = A::params(*conv);
  const size_t cg = p.c / p.groups, mg = p.m / p.groups, taps = p.kh * p.kw;
  const size_t size = p.m * cg * taps;
  std::shared_ptr<float> w(new float[size], std::default_delete<float[]>());
  // [M][cg][KH][KW] -> per group, per chunk of up to 8 outputs: [cg * KH * KW][chunk], so the
  // microkernel reads the chunk's weights of one tap as consecutive floats.
  for (size_t g = 0; g < p.groups; ++g) {
    for (size_t o0 = 0; o0 < mg; o0 += kMaxOutputs) {
      const size_t mb = std::min(kMaxOutputs, mg - o0);
      float* dst = w.get() + (g * mg + o0) * cg * taps;
      for (size_t k = 0; k < cg * taps; ++k) {
        for (size_t j = 0; j < mb; ++j) dst[k * mb + j] = weights[(g * mg + o0 + j) * cg * taps + k];
      }
    }
  }
  A::weights(*conv) = std::move(w);
  return Status::Ok();
}

Status RunGrouped(const PreparedConv& conv, const float* x, float* y, const RunOptions& o,
                  float* workspace) {
  const ConvParams& p = conv.params();
  const GConvUkernel& uk = SelectGConvUkernel(conv.isa());
  const size_t cg = p.c / p.groups, mg = p.m / p.groups, taps = p.kh * p.kw;
  const size_t oh = p.out_h(), ow = p.out_w();
  const float* weights = PreparedConvAccess::weights(conv);
  const float* bias = o.epilogue.bias_kind == gemm::BiasKind::kPerRow ? o.epilogue.bias : nullptr;
  const Clamp clamp = ClampOf(o.epilogue);
  const size_t pairs = p.n * p.groups;
  const size_t pool_threads = ThreadCount(o.pool);
  // A layer with fewer (image, group) pairs than threads (an image stem: one) splits each pair
  // into bands of output rows, as many in all as a multiple of the threads; each thread copies
  // only its bands' input rows and the few rows the window reaches past them. (Splitting the
  // chunks of outputs instead had every thread copy the whole input: 11% of a 3x3 stem's time
  // at one thread, so no gain from the second.) At one thread, bands gain nothing: the planes
  // of a whole 224x224 image are read from L2 at full speed.
  size_t bands = 1;
  if (pairs < pool_threads) bands = std::min(oh, pool_threads / std::gcd(pairs, pool_threads));
  const size_t band_rows = (oh + bands - 1) / bands;
  bands = (oh + band_rows - 1) / band_rows;
  const struct Geometry geo = Geometry(p, conv.isa(), bands > 1 ? band_rows : 0);
  const size_t items = pairs * bands;
  const size_t threads = std::min(pool_threads, items);
  ParallelFor(o.pool, threads, [&](size_t t) {
    float* planes = workspace + t * geo.per_thread;
    // The padding (and the over-read past the last plane) is zero and stays so while the
    // planes hold whole inputs: items only write the input's own positions. A band's padding
    // moves with the band.
    const size_t channel = p.stride_h * p.stride_w * geo.plane;
    if (bands == 1) {
      for (size_t ci = 0; ci < cg; ++ci) ZeroPadding(p, geo, 0, planes + ci * channel);
    }
    std::fill(planes + cg * channel, planes + geo.planes, 0.0f);
    std::array<uint32_t, kMaxTaps> offsets;
    for (size_t ci = 0; ci < cg; ++ci) {
      for (size_t ky = 0; ky < p.kh; ++ky) {
        for (size_t kx = 0; kx < p.kw; ++kx) {
          const size_t phase = (ci * p.stride_h + ky % p.stride_h) * p.stride_w + kx % p.stride_w;
          offsets[ci * taps + ky * p.kw + kx] = static_cast<uint32_t>(
              phase * geo.plane + ky / p.stride_h * geo.pw + kx / p.stride_w);
        }
      }
    }
    ukernels::F32GConvParams kp;
    kp.offsets = offsets.data();
    kp.nk = cg * taps;
    kp.width = ow;
    kp.pitch = geo.pw;
    kp.y_stride = oh * ow;
    kp.clamp_min = clamp.min;
    kp.clamp_max = clamp.max;
    const size_t begin = items * t / threads, end = items * (t + 1) / threads;
    size_t filled = pairs;  // the pair whose input the planes hold (none yet)
    for (size_t item = begin; item < end; ++item) {  // (image * groups + group) * bands + band
      const size_t pair = item / bands, band = item % bands, g = pair % p.groups;
      const size_t r0 = band * band_rows, r1 = std::min(oh, r0 + band_rows);
      if (bands > 1 || pair != filled) {
        for (size_t ci = 0; ci < cg; ++ci) {
          if (bands > 1) ZeroPadding(p, geo, r0, planes + ci * channel);
          FillPlanes(p, geo, uk, r0, x + (pair * cg + ci) * p.h * p.w, planes + ci * channel);
        }
        filled = pair;
      }
      kp.rows = r1 - r0;
      kp.count = (kp.rows - 1) * geo.pw + ow;
      for (size_t o0 = 0; o0 < mg; o0 += kMaxOutputs) {
        kp.mb = std::min(kMaxOutputs, mg - o0);
        const size_t m0 = g * mg + o0;
        float* ym = y + (pair / p.groups * p.m + m0) * oh * ow + r0 * ow;
        uk.fn(planes, weights + m0 * cg * taps, bias ? bias + m0 : nullptr, ym, &kp);
        for (size_t j = 0; j < kp.mb; ++j) {
          ApplyVectorActivation(o.epilogue, conv.isa(), ym + j * oh * ow, kp.rows * ow);
        }
      }
    }
  });
  return Status::Ok();
}

}  // namespace kiln::conv
