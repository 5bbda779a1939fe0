// The body of the panel matrix-vector microkernel (f32_gemv_panel__S, see f32_gemv_panel.h),
// written once over the vector traits V of an ISA file (f32_hot_impl.h describes V). Included
// only by the files in ukernels/<isa>/ after they define V; internal linkage, one copy per ISA.
//
// A matrix-vector product over a GEMM operand packed into panels: the weights of a
// squeeze-and-excitation block's 1x1 convolutions on 1x1 maps (N = 1 over a packed A of MR-row
// panels) and of a classifier Gemm with one row (M = 1 over a packed B of NR-column panels).
// The GEMM microkernel ran those as MR x NR tiles of which one row or column was real; here each
// k step is one vector load per 16 (8) panel lanes and one FMA, so the loop streams the panels
// (usually from DRAM: each weight is read once per run) as fast as memory delivers them. The
// panels are one contiguous stream, which the hardware prefetcher follows: software prefetches
// 512..4096 floats ahead (T0 or NTA) measured no faster on Zen 4 (cold 1280 x 1000: 240-270 us,
// ~20 GB/s, either way).
#pragma once

#include <cstddef>

#include "kernels/ukernels/f32_gemv_panel.h"

namespace kiln::ukernels {
namespace {  // NOLINT(build/namespaces): one private copy per ISA file, on purpose

// kChunks vectors of V::kWidth lanes cover a panel (0: any number, the portable fallback).
template <class V, size_t kChunks>
inline void GemvPanelRun(size_t cols, size_t k, size_t panel, const float* a, const float* x,
                         float* y, const F32GemvPanelParams* p) {
  using T = typename V::T;
  constexpr size_t w = V::kWidth;
  constexpr size_t kMaxChunks = (32 + w - 1) / w;
  constexpr size_t nc = kChunks ? kChunks : kMaxChunks;
  const size_t chunks = kChunks ? kChunks : (panel + w - 1) / w;
  const size_t last = panel - (chunks - 1) * w;  // lanes of the last chunk of a panel row
  const T lo = V::Set(p->min), hi = V::Set(p->max), bias0 = V::Set(p->bias0);
  auto load = [&](const float* q, size_t c) {
    return c + 1 < chunks || last == w ? V::Load(q + c * w) : V::LoadPartial(q + c * w, last);
  };
  for (size_t j0 = 0; j0 < cols; j0 += panel, a += k * panel) {
    T acc[4][nc];
    for (size_t u = 0; u < 4; ++u)
      for (size_t c = 0; c < chunks; ++c) acc[u][c] = V::Set(0.0f);
    size_t kk = 0;
    for (; kk + 4 <= k; kk += 4) {
      const float* q = a + kk * panel;
      for (size_t u = 0; u < 4; ++u) {
        const T xv = V::Set(x[kk + u]);
        for (size_t c = 0; c < chunks; ++c) acc[u][c] = V::Fma(load(q + u * panel, c), xv, acc[u][c]);
      }
    }
    for (; kk < k; ++kk) {
      const T xv = V::Set(x[kk]);
      for (size_t c = 0; c < chunks; ++c)
        acc[0][c] = V::Fma(load(a + kk * panel, c), xv, acc[0][c]);
    }
    for (size_t c = 0; c < chunks; ++c) {
      const size_t j = j0 + c * w;
      if (j >= cols) break;
      // The outputs of this panel's chunk only (a chunk of a narrower panel has idle lanes).
      const size_t lanes = c + 1 < chunks ? w : last;
      const size_t n = cols - j < lanes ? cols - j : lanes;
      T v = V::Add(V::Add(acc[0][c], acc[1][c]), V::Add(acc[2][c], acc[3][c]));
      if (p->load_y) v = V::Add(v, V::LoadPartial(y + j, n));
      if (p->bias) v = V::Add(v, V::LoadPartial(p->bias + j, n));
      v = V::Add(v, bias0);
      v = V::Min(hi, V::Max(lo, v));
      if (n == w) {
        V::Store(y + j, v);
      } else {
        V::StorePartial(y + j, v, n);
      }
    }
  }
}

template <class V>
inline void GemvPanel(size_t cols, size_t k, size_t panel, const float* a, const float* x,
                      float* y, const F32GemvPanelParams* p) {
  constexpr size_t w = V::kWidth;
  if (panel <= w) return GemvPanelRun<V, 1>(cols, k, panel, a, x, y, p);
  if (panel <= 2 * w) return GemvPanelRun<V, 2>(cols, k, panel, a, x, y, p);
  GemvPanelRun<V, 0>(cols, k, panel, a, x, y, p);
}

}  // namespace
}  // namespace kiln::ukernels

#define KILN_DEFINE_F32_GEMV_PANEL_UKERNEL(S, V)                                                \
  void f32_gemv_panel__##S(size_t cols, size_t k, size_t panel, const float* a, const float* x, \
                           float* y, const F32GemvPanelParams* p) {                             \
    GemvPanel<V>(cols, k, panel, a, x, y, p);                                                   \
  }
