#include "kernels/peak/peak.h"

#include <algorithm>
#include <chrono>
#include <iterator>

#include "kernels/ukernel_select.h"

namespace kiln::peak {
namespace {

using namespace ukernels;  // NOLINT: the table names every kernel

constexpr PeakUkernel kTable[] = {
    // name, isa, flops per iteration (lanes * chains * 2), kernel
    {"f32_fma_peak__scalar", IsaLevel::kScalar, 1 * 8 * 2, f32_fma_peak__scalar},
    {"f32_fma_peak__avx2_fma", IsaLevel::kAvx2, 8 * 12 * 2, f32_fma_peak__avx2_fma},
    {"f32_fma_peak__avx512f", IsaLevel::kAvx512, 16 * 12 * 2, f32_fma_peak__avx512f},
};

static_assert(kernels::IsaRowsAreOrdered(kTable),
              "rows go oldest ISA first, and start at scalar");

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One window's rate in flop/s: enough calls to last about `window` seconds. Calls are long enough
// (tens of microseconds) that reading the clock between them costs nothing measurable.
double WindowRate(const PeakUkernel& k, double window, float* sink) {
  constexpr size_t kIters = size_t{1} << 13;
  const double start = Now();
  double flops = 0, t = 0;
  do {
    k.fn(kIters, sink);
    flops += k.flops_per_iter * static_cast<double>(kIters);
    t = Now() - start;
  } while (t < window);
  return flops / t;
}

}  // namespace

std::span<const PeakUkernel> PeakUkernels() { return kTable; }

const PeakUkernel& SelectPeakUkernel(IsaLevel cap) {
  return kernels::SelectByIsa<PeakUkernel>(kTable, cap);
}

PeakResult MeasureF32Peak(double seconds, IsaLevel cap) {
  const PeakUkernel& k = SelectPeakUkernel(cap);
  float sink = 0;
  // Windows of a few milliseconds: short enough that a busy moment spoils few, long enough to
  // reach the steady clock rate.
  constexpr double kWindow = 0.005;
  // Wake the vector units and the clock up first: from idle, the first tens of milliseconds ran
  // at half the rate on the development VM.
  WindowRate(k, 0.05, &sink);
  double best = 0;
  const double end = Now() + std::max(seconds, kWindow);
  while (Now() < end) best = std::max(best, WindowRate(k, kWindow, &sink));
  PeakResult r;
  r.gflops = best * 1e-9;
  r.kernel = k.name;
  return r;
}

}  // namespace kiln::peak
