#include "kernels/gemm/panel_gemv.h"

#include <algorithm>
#include <vector>

#include "kernels/ukernel_select.h"
#include "kernels/ukernels/f32_gemv_panel.h"

namespace kiln::gemm {
namespace {

struct GemvPanelUkernel {
  const char* name;
  IsaLevel isa;
  ukernels::F32GemvPanelFn fn;
};

constexpr GemvPanelUkernel kTable[] = {
    {"f32_gemv_panel__scalar", IsaLevel::kScalar, ukernels::f32_gemv_panel__scalar},
    {"f32_gemv_panel__avx2", IsaLevel::kAvx2, ukernels::f32_gemv_panel__avx2},
    {"f32_gemv_panel__avx512", IsaLevel::kAvx512, ukernels::f32_gemv_panel__avx512},
};

static_assert(kernels::IsaRowsAreOrdered(kTable),
              "rows go oldest ISA first, and start at scalar");

}  // namespace

void RunPanelGemv(const PanelGemvArgs& g, ThreadPool* pool) {
  const ukernels::F32GemvPanelFn fn = kernels::SelectByIsa<GemvPanelUkernel>(kTable, g.isa).fn;
  const size_t panels = (g.cols + g.panel - 1) / g.panel;
  size_t threads = ThreadCount(pool);
  // Below this many weights a second thread costs more to wake than it saves.
  if (static_cast<double>(g.cols) * g.k < 65536.0) threads = 1;
  threads = std::min(threads, panels);
  ukernels::F32GemvPanelParams params{};
  params.load_y = g.accumulate ? 1 : 0;
  params.bias0 = g.bias0;
  params.min = g.min;
  params.max = g.max;
  auto task = [&](size_t t) {
    const size_t p0 = t * panels / threads, p1 = (t + 1) * panels / threads;
    if (p0 == p1) return;
    const size_t j0 = p0 * g.panel, j1 = std::min(g.cols, p1 * g.panel), n = j1 - j0;
    // Strided x or y go through per-thread buffers (kept, so steady-state runs do not allocate).
    thread_local std::vector<float> xbuf, ybuf;
    const float* x = g.x;
    if (g.x_stride != 1) {
      if (xbuf.size() < g.k) xbuf.resize(g.k);
      for (size_t kk = 0; kk < g.k; ++kk) xbuf[kk] = g.x[kk * g.x_stride];
      x = xbuf.data();
    }
    float* y = g.y + j0 * g.y_stride;
    if (g.y_stride != 1) {
      if (ybuf.size() < n) ybuf.resize(n);
      if (g.accumulate)
        for (size_t j = 0; j < n; ++j) ybuf[j] = y[j * g.y_stride];
      y = ybuf.data();
    }
    ukernels::F32GemvPanelParams p = params;
    p.bias = g.bias ? g.bias + j0 : nullptr;
    fn(n, g.k, g.panel, g.panels + p0 * g.panel * g.k, x, y, &p);
    if (g.act) g.act(n, y, y, nullptr);
    if (g.y_stride != 1)
      for (size_t j = 0; j < n; ++j) g.y[(j0 + j) * g.y_stride] = y[j];
  };
  if (threads <= 1) {
    task(0);
  } else {
    ParallelFor(pool, threads, task);
  }
}

}  // namespace kiln::gemm
