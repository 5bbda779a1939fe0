// kDepthwise: groups == C == M, one filter per channel. Shapes that dwconv::DwConv handles go to
// its row microkernels (NCHW, or NCHWc when prepared blocked: block() > 1, whose shapes prepare
// and ViewPreparedConv checked); the rest (dilation, NCHW only) to a portable loop nest with the
// window clipped per row and column, whose work items are (image, channel) planes.
#include <algorithm>
#include <cstring>
#include <memory>

#include "kernels/conv/drivers.h"
#include "kernels/dwconv/dwconv.h"

namespace kiln::conv {
namespace {

dwconv::DwConvParams ToDw(const ConvParams& p, size_t block) {
  dwconv::DwConvParams d;
  d.n = p.n;
  d.c = p.c;
  d.h = p.h;
  d.w = p.w;
  d.kh = p.kh;
  d.kw = p.kw;
  d.stride_h = p.stride_h;
  d.stride_w = p.stride_w;
  d.pad_top = p.pad_top;
  d.pad_left = p.pad_left;
  d.pad_bottom = p.pad_bottom;
  d.pad_right = p.pad_right;
  d.dilation_h = p.dilation_h;
  d.dilation_w = p.dilation_w;
  d.channel_block = block;
  return d;
}

}  // namespace

bool DepthwiseBlockedSupported(const ConvParams& p, size_t block) {
  return block > 1 && dwconv::DwConvSupported(ToDw(p, block));
}

Status PrepareDepthwise(const float* weights, PreparedConv* conv) {
  using A = PreparedConvAccess;
  const ConvParams& p = A::params(*conv);
  const size_t taps = p.kh * p.kw, cb = A::block(*conv);
  const size_t size = cb > 1 ? dwconv::BlockedWeightFloats(p.c, taps, cb) : p.c * taps;
  std::shared_ptr<float> w(new float[size], std::default_delete<float[]>());
  if (cb > 1) {
    dwconv::PackBlockedWeights(p.c, taps, cb, weights, w.get());
  } else {
    std::memcpy(w.get(), weights, size * sizeof(float));
  }
  A::weights(*conv) = std::move(w);
  return Status::Ok();
}

size_t DepthwiseWorkspace(const PreparedConv& conv, size_t threads) {
  return dwconv::DwConvWorkspaceFloats(ToDw(conv.params(), conv.block()), threads, conv.isa());
}

Status RunDepthwise(const PreparedConv& conv, const float* x, float* y, const RunOptions& o,
                    float* workspace) {
  const ConvParams& p = conv.params();
  const dwconv::DwConvParams dw = ToDw(p, conv.block());
  if (conv.block() > 1 || dwconv::DwConvSupported(dw)) {  // blocked: checked at prepare
    return dwconv::DwConv(dw, x, PreparedConvAccess::weights(conv), nullptr, o.epilogue, y, o.pool,
                          conv.isa(), workspace);
  }
  const size_t oh_n = p.out_h(), ow_n = p.out_w(), taps = p.kh * p.kw;
  const float* weights = PreparedConvAccess::weights(conv);
  const float* bias = o.epilogue.bias_kind == gemm::BiasKind::kPerRow ? o.epilogue.bias : nullptr;
  const Clamp clamp = ClampOf(o.epilogue);
  ParallelFor(o.pool, p.n * p.c, [&](size_t plane) {
    const size_t ch = plane % p.c;
    const float* xp = x + plane * p.h * p.w;
    const float* wc = weights + ch * taps;
    float* yp = y + plane * oh_n * ow_n;
    const float b = bias ? bias[ch] : 0.0f;
    for (size_t oh = 0; oh < oh_n; ++oh) {
      for (size_t ow = 0; ow < ow_n; ++ow) {
        float acc = 0.0f;
        for (size_t kh = 0; kh < p.kh; ++kh) {
          const ptrdiff_t ih = static_cast<ptrdiff_t>(oh * p.stride_h + kh * p.dilation_h) -
                               static_cast<ptrdiff_t>(p.pad_top);
          if (ih < 0 || ih >= static_cast<ptrdiff_t>(p.h)) continue;
          for (size_t kw = 0; kw < p.kw; ++kw) {
            const ptrdiff_t iw = static_cast<ptrdiff_t>(ow * p.stride_w + kw * p.dilation_w) -
                                 static_cast<ptrdiff_t>(p.pad_left);
            if (iw < 0 || iw >= static_cast<ptrdiff_t>(p.w)) continue;
            acc += xp[static_cast<size_t>(ih) * p.w + static_cast<size_t>(iw)] * wc[kh * p.kw + kw];
          }
        }
        yp[oh * ow_n + ow] = std::min(std::max(acc + b, clamp.min), clamp.max);
      }
    }
    ApplyVectorActivation(o.epilogue, conv.isa(), yp, oh_n * ow_n);
  });
  return Status::Ok();
}

}  // namespace kiln::conv
