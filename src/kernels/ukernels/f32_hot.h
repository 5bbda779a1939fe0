// Declarations of the f32 "hot" microkernels of every ISA level: elementwise binary ops and
// activations, 2-D and global pooling, and the row kernels of softmax and layer normalization.
// The tables in kernels/{eltwise,pool,softmax,layernorm}/ukernel_table.h list them; nothing else
// should call them by name.
//
// Names follow XNNPACK: what, then how, split by a double underscore. For each ISA suffix S in
// {scalar, avx2 (with FMA), avx512 (F/BW/DQ/VL)} there are
//   f32_vbinary_{add,sub,mul,div,max,min}__S    y = a op b            (F32VBinaryFn)
//   f32_vbinaryc_{add,sub,mul,div,max,min}__S   y = a op *c           (F32VBinaryCFn)
//   f32_vrbinaryc_{sub,div}__S                  y = *c op a           (F32VBinaryCFn)
//   f32_v{relu,clip,sigmoid,tanh,silu,hswish,hsigmoid,gelu,exp,lrelu}__S  (F32VUnaryParamFn)
//   f32_maxpool2d__S, f32_avgpool2d__S           rows of one plane     (F32Pool2dFn)
//   f32_gmaxpool__S, f32_gavgpool__S             one plane to a value  (F32ReduceFn)
//   f32_gavgpool_nchwc__S                        one NCHWc block to c values (F32GAvgPoolNchwcFn)
//   f32_vchannelscale_nchwc__S                   one NCHWc block times c scales (F32ChannelScaleNchwcFn)
//   f32_rmax__S, f32_rsum__S, f32_raddexpminusmax__S, f32_raddstoreexpminusmax__S,
//   f32_vscale__S, f32_rsumsqdiff__S, f32_vlayernorm__S                (softmax, layer norm)
//
// The microkernel contract (DESIGN.md): no allocation, no OS calls, no globals, no CPU queries.
// Every kernel reads and writes exactly the n elements it is given (tails use masked loads), and
// every elementwise kernel accepts y == x (in place).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::ukernels {

// y[i] = a[i] op b[i], i < n.
using F32VBinaryFn = void (*)(size_t n, const float* a, const float* b, float* y);
// y[i] = a[i] op c[0] (vbinaryc) or c[0] op a[i] (vrbinaryc).
using F32VBinaryCFn = void (*)(size_t n, const float* a, const float* c, float* y);

// Parameters of the activations that take them: clip (alpha = min, beta = max), leaky relu
// (alpha = slope), hard sigmoid (max(0, min(1, alpha x + beta))). Others ignore them.
struct F32UnaryParams {
  float alpha;
  float beta;
};
using F32VUnaryParamFn = void (*)(size_t n, const float* x, float* y, const F32UnaryParams* p);

// Output rows [row_begin, row_end) of 2-D pooling, counted over planes: x holds the input planes
// [*, ih, iw], y the output planes [*, oh, ow], and row r is row r % oh of plane r / oh. Output
// (oy, ox) pools the window rows [oy * stride_h - pad_top, + kh) and columns
// [ox * stride_w - pad_left, + kw) clipped to the input; padding never wins a max. Average pooling
// divides by the valid positions, or with count_include_pad by those inside the explicit padding
// (never the ones ceil_mode adds past it). buf is the caller's scratch of
// F32Pool2dBufferFloats(...) floats (microkernels do not allocate), one per thread.
struct F32Pool2dParams {
  size_t ih, iw, oh, ow;
  size_t kh, kw;
  size_t stride_h, stride_w;
  size_t pad_top, pad_left, pad_bottom, pad_right;
  size_t row_begin, row_end;
  uint32_t count_include_pad;
  float* buf;
};
// Floats of one padded scratch row: the row and a whole vector (up to 16 lanes) past it, and
// whole vectors of outputs read past its end.
constexpr size_t F32Pool2dRowFloats(size_t iw, size_t ow, size_t kw, size_t stride_w,
                                    size_t pad_left) {
  const size_t padded = pad_left + iw + 16, reads = (ow + 15) / 16 * 16 * stride_w + kw;
  return padded > reads ? padded : reads;
}
// Two rows: the kernel reduces the next row's inputs into one while it pools the other.
constexpr size_t F32Pool2dBufferFloats(size_t iw, size_t ow, size_t kw, size_t stride_w,
                                       size_t pad_left) {
  return 2 * F32Pool2dRowFloats(iw, ow, kw, stride_w, pad_left);
}
using F32Pool2dFn = void (*)(const float* x, float* y, const F32Pool2dParams* p);

// Reduces n >= 1 values to one (max or sum; the global pools return the mean for average).
using F32ReduceFn = float (*)(size_t n, const float* x);
// One channel block of a global average pool over NCHWc: x [hw, c], c in 1..64 ->
// y[l] = mean of x[i * c + l] over i < hw (NaN when hw = 0), l < c.
using F32GAvgPoolNchwcFn = void (*)(size_t hw, size_t c, const float* x, float* y);
// One NCHWc channel block times per-lane scales: y[i * c + l] = x[i * c + l] * s[l], i < hw,
// l < c, c in 1..64 (y may be x).
using F32ChannelScaleNchwcFn = void (*)(size_t hw, size_t c, const float* x, const float* s,
                                        float* y);
// Sum of exp(x[i] - max); the "store" variant also writes each exp(x[i] - max) to y.
using F32RAddExpMinusMaxFn = float (*)(size_t n, const float* x, float max);
using F32RAddStoreExpMinusMaxFn = float (*)(size_t n, const float* x, float max, float* y);
// y[i] = x[i] * s.
using F32VScaleFn = void (*)(size_t n, const float* x, float s, float* y);
// Sums of d[i] = x[i] - mean and of d[i]^2: with `mean` a first estimate, the first sum
// corrects it and the second gives the variance around it.
using F32RSumSqDiffFn = void (*)(size_t n, const float* x, float mean, float* sum_diff,
                                 float* sum_sq);
// y[i] = (x[i] - mean) * inv_std * scale[i] + bias[i]; bias may be null (zero).
using F32VLayerNormFn = void (*)(size_t n, const float* x, float mean, float inv_std,
                                 const float* scale, const float* bias, float* y);

#define KILN_DECLARE_F32_HOT_UKERNELS(S)                                                          \
  void f32_vbinary_add__##S(size_t n, const float* a, const float* b, float* y);                  \
  void f32_vbinary_sub__##S(size_t n, const float* a, const float* b, float* y);                  \
  void f32_vbinary_mul__##S(size_t n, const float* a, const float* b, float* y);                  \
  void f32_vbinary_div__##S(size_t n, const float* a, const float* b, float* y);                  \
  void f32_vbinary_max__##S(size_t n, const float* a, const float* b, float* y);                  \
  void f32_vbinary_min__##S(size_t n, const float* a, const float* b, float* y);                  \
  void f32_vbinaryc_add__##S(size_t n, const float* a, const float* c, float* y);                 \
  void f32_vbinaryc_sub__##S(size_t n, const float* a, const float* c, float* y);                 \
  void f32_vbinaryc_mul__##S(size_t n, const float* a, const float* c, float* y);                 \
  void f32_vbinaryc_div__##S(size_t n, const float* a, const float* c, float* y);                 \
  void f32_vbinaryc_max__##S(size_t n, const float* a, const float* c, float* y);                 \
  void f32_vbinaryc_min__##S(size_t n, const float* a, const float* c, float* y);                 \
  void f32_vrbinaryc_sub__##S(size_t n, const float* a, const float* c, float* y);                \
  void f32_vrbinaryc_div__##S(size_t n, const float* a, const float* c, float* y);                \
  void f32_vrelu__##S(size_t n, const float* x, float* y, const F32UnaryParams* p);               \
  void f32_vclip__##S(size_t n, const float* x, float* y, const F32UnaryParams* p);               \
  void f32_vsigmoid__##S(size_t n, const float* x, float* y, const F32UnaryParams* p);            \
  void f32_vtanh__##S(size_t n, const float* x, float* y, const F32UnaryParams* p);               \
  void f32_vsilu__##S(size_t n, const float* x, float* y, const F32UnaryParams* p);               \
  void f32_vhswish__##S(size_t n, const float* x, float* y, const F32UnaryParams* p);             \
  void f32_vhsigmoid__##S(size_t n, const float* x, float* y, const F32UnaryParams* p);           \
  void f32_vgelu__##S(size_t n, const float* x, float* y, const F32UnaryParams* p);               \
  void f32_vexp__##S(size_t n, const float* x, float* y, const F32UnaryParams* p);                \
  void f32_vlrelu__##S(size_t n, const float* x, float* y, const F32UnaryParams* p);              \
  void f32_maxpool2d__##S(const float* x, float* y, const F32Pool2dParams* p);                    \
  void f32_avgpool2d__##S(const float* x, float* y, const F32Pool2dParams* p);                    \
  float f32_gmaxpool__##S(size_t n, const float* x);                                              \
  float f32_gavgpool__##S(size_t n, const float* x);                                              \
  void f32_gavgpool_nchwc__##S(size_t hw, size_t c, const float* x, float* y);                     \
  void f32_vchannelscale_nchwc__##S(size_t hw, size_t c, const float* x, const float* s,           \
                                    float* y);                                                     \
  float f32_rmax__##S(size_t n, const float* x);                                                  \
  float f32_rsum__##S(size_t n, const float* x);                                                  \
  float f32_raddexpminusmax__##S(size_t n, const float* x, float max);                            \
  float f32_raddstoreexpminusmax__##S(size_t n, const float* x, float max, float* y);             \
  void f32_vscale__##S(size_t n, const float* x, float s, float* y);                              \
  void f32_rsumsqdiff__##S(size_t n, const float* x, float mean, float* sum_diff, float* sum_sq); \
  void f32_vlayernorm__##S(size_t n, const float* x, float mean, float inv_std,                   \
                           const float* scale, const float* bias, float* y);

KILN_DECLARE_F32_HOT_UKERNELS(scalar)
KILN_DECLARE_F32_HOT_UKERNELS(avx2)
KILN_DECLARE_F32_HOT_UKERNELS(avx512)

}  // namespace kiln::ukernels
