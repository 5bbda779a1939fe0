// Portable depthwise row kernels: the generic one (any window, any stride) and the specialized
// shapes with the window fixed at compile time so the inner sums unroll. Interior columns, whose
// window lies inside the row, run without bounds checks; only the edges test each column.
#include "kernels/ukernels/f32_dwconv.h"

namespace kiln::ukernels {
namespace {

inline float Clamp(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

// First ox whose window starts at or after column 0, and one past the last whose window ends
// inside the row; [lo, hi) may be empty.
inline void InteriorRange(size_t kw, size_t stride, size_t in_w, size_t out_w, size_t pad_left,
                          size_t* lo, size_t* hi) {
  size_t a = (pad_left + stride - 1) / stride;
  size_t b = in_w + pad_left >= kw ? (in_w + pad_left - kw) / stride + 1 : 0;
  if (b > out_w) b = out_w;
  if (a > b) a = b;
  *lo = a;
  *hi = b;
}

// One output column with bounds checks.
inline float EdgeColumn(const F32DwConvRow* a, size_t kh, size_t kw, size_t stride, size_t ox) {
  float s = a->bias;
  const long base = static_cast<long>(ox * stride) - static_cast<long>(a->pad_left);
  for (size_t ky = 0; ky < kh; ++ky) {
    const float* r = a->rows[ky];
    if (!r) continue;
    for (size_t kx = 0; kx < kw; ++kx) {
      const long col = base + static_cast<long>(kx);
      if (col >= 0 && col < static_cast<long>(a->in_w)) s += a->w[ky * kw + kx] * r[col];
    }
  }
  return Clamp(s, a->min, a->max);
}

template <size_t kKh, size_t kKw, size_t kStride>
void Row(const F32DwConvRow* a, size_t kh, size_t kw, size_t stride) {
  if constexpr (kKh != 0) {
    kh = kKh;
    kw = kKw;
    stride = kStride;
  }
  size_t lo, hi;
  InteriorRange(kw, stride, a->in_w, a->out_w, a->pad_left, &lo, &hi);
  for (size_t ox = 0; ox < lo; ++ox) a->out[ox] = EdgeColumn(a, kh, kw, stride, ox);
  for (size_t ox = hi; ox < a->out_w; ++ox) a->out[ox] = EdgeColumn(a, kh, kw, stride, ox);
  if (lo == hi) return;
  // Interior: each output starts from the bias and adds one window row at a time.
  float* out = a->out;
  for (size_t ox = lo; ox < hi; ++ox) out[ox] = a->bias;
  for (size_t ky = 0; ky < kh; ++ky) {
    const float* r = a->rows[ky];
    if (!r) continue;
    const float* wk = a->w + ky * kw;
    for (size_t ox = lo; ox < hi; ++ox) {
      const float* x = r + ox * stride - a->pad_left;
      float s = 0.0f;
      for (size_t kx = 0; kx < kw; ++kx) s += wk[kx] * x[kx];
      out[ox] += s;
    }
  }
  for (size_t ox = lo; ox < hi; ++ox) out[ox] = Clamp(out[ox], a->min, a->max);
}

template <size_t kKh, size_t kKw, size_t kStride>
void Rows(const F32DwConvRow* a) {
  F32DwConvRow one = *a;
  for (size_t i = 0; i < a->count; ++i) {
    one.rows = a->rows + i * a->row_step;
    one.out = a->out + i * a->out_w;
    Row<kKh, kKw, kStride>(&one, a->kh, a->kw, a->stride);  // Row fixes them when specialized
  }
}

}  // namespace

void f32_dwconv__scalar(const F32DwConvRow* a) { Rows<0, 0, 0>(a); }
void f32_dwconv3x3_s1__scalar(const F32DwConvRow* a) { Rows<3, 3, 1>(a); }
void f32_dwconv3x3_s2__scalar(const F32DwConvRow* a) { Rows<3, 3, 2>(a); }
void f32_dwconv5x5_s1__scalar(const F32DwConvRow* a) { Rows<5, 5, 1>(a); }
void f32_dwconv5x5_s2__scalar(const F32DwConvRow* a) { Rows<5, 5, 2>(a); }

}  // namespace kiln::ukernels

namespace kiln::ukernels {

void f32_dwconv_nchwc__scalar(const F32DwConvRowC* a) {
  const size_t cb = a->cb;
  for (size_t r = 0; r < a->count; ++r) {
    const float* const* rows = a->rows + r * a->row_step;
    float* out = a->out + r * a->out_w * cb;
    for (size_t ox = 0; ox < a->out_w; ++ox) {
      float* o = out + ox * cb;
      for (size_t l = 0; l < cb; ++l) o[l] = a->bias[l];
      const long base = static_cast<long>(ox * a->stride) - static_cast<long>(a->pad_left);
      for (size_t ky = 0; ky < a->kh; ++ky) {
        if (!rows[ky]) continue;
        for (size_t kx = 0; kx < a->kw; ++kx) {
          const long col = base + static_cast<long>(kx);
          if (col < 0 || col >= static_cast<long>(a->in_w)) continue;
          const float* x = rows[ky] + col * cb;
          const float* w = a->w + (ky * a->kw + kx) * cb;
          for (size_t l = 0; l < cb; ++l) o[l] += w[l] * x[l];
        }
      }
      for (size_t l = 0; l < cb; ++l) o[l] = Clamp(o[l], a->min, a->max);
    }
  }
}

}  // namespace kiln::ukernels
