// The body of the grouped-convolution microkernel (f32_gconv.h), written once over the vector
// traits V of an ISA file (see f32_hot_impl.h for V's contract). Included only by the files in
// ukernels/<isa>/ after they define V; internal linkage, one copy per ISA.
#pragma once

#include <cstddef>

#include "kernels/ukernels/f32_gconv.h"

namespace kiln::ukernels {
namespace {  // NOLINT(build/namespaces): one private copy per ISA file, on purpose

// MB output channels times NV vectors of output pixels stay in registers: 8 x 2 zmm = 16 of 32
// on AVX-512, 8 x 1 ymm = 8 of 16 on AVX2 (the input vectors and a broadcast need the rest).
template <class V, size_t MB, size_t NV>
inline void GConvMB(const float* x, const float* w, const float* bias, float* y,
                    const F32GConvParams& p) {
  using T = typename V::T;
  constexpr size_t kChunk = NV * V::kWidth;
  const T lo = V::Set(p.clamp_min), hi = V::Set(p.clamp_max);
  for (size_t f = 0; f < p.count; f += kChunk) {
    T acc[MB][NV];
    for (size_t j = 0; j < MB; ++j) {
      const T b = V::Set(bias ? bias[j] : 0.0f);
      for (size_t v = 0; v < NV; ++v) acc[j][v] = b;
    }
    const float* wk = w;
    for (size_t k = 0; k < p.nk; ++k, wk += MB) {
      const float* in = x + p.offsets[k] + f;
      T xv[NV];
      for (size_t v = 0; v < NV; ++v) xv[v] = V::Load(in + v * V::kWidth);
      for (size_t j = 0; j < MB; ++j) {
        const T wv = V::Set(wk[j]);
        for (size_t v = 0; v < NV; ++v) acc[j][v] = V::Fma(xv[v], wv, acc[j][v]);
      }
    }
    // Max(lo, a) and Min(hi, a) return a when it is NaN, as std::max / std::min in the
    // reference's order do.
    const size_t left = p.count - f;
    for (size_t j = 0; j < MB; ++j) {
      float* yj = y + j * p.y_stride + f;
      for (size_t v = 0; v < NV; ++v) {
        const T r = V::Min(hi, V::Max(lo, acc[j][v]));
        const size_t done = v * V::kWidth;
        if (left >= done + V::kWidth) {
          V::Store(yj + done, r);
        } else if (left > done) {
          V::StorePartial(yj + done, r, left - done);
        }
      }
    }
  }
}

template <class V, size_t NV>
inline void GConv(const float* x, const float* w, const float* bias, float* y,
                  const F32GConvParams* p) {
  switch (p->mb) {
    case 8: return GConvMB<V, 8, NV>(x, w, bias, y, *p);
    case 7: return GConvMB<V, 7, NV>(x, w, bias, y, *p);
    case 6: return GConvMB<V, 6, NV>(x, w, bias, y, *p);
    case 5: return GConvMB<V, 5, NV>(x, w, bias, y, *p);
    case 4: return GConvMB<V, 4, NV>(x, w, bias, y, *p);
    case 3: return GConvMB<V, 3, NV>(x, w, bias, y, *p);
    case 2: return GConvMB<V, 2, NV>(x, w, bias, y, *p);
    case 1: return GConvMB<V, 1, NV>(x, w, bias, y, *p);
    default: return;
  }
}

}  // namespace
}  // namespace kiln::ukernels

// Defines f32_gconv__S with the vector traits V, NV vectors of pixels per channel.
#define KILN_DEFINE_F32_GCONV_UKERNEL(S, V, NV)                                              \
  void f32_gconv__##S(const float* x, const float* w, const float* bias, float* y,          \
                      const F32GConvParams* p) {                                             \
    GConv<V, NV>(x, w, bias, y, p);                                                          \
  }
