// The machine's limit, measured on the spot: the kernel library's FMA peak microkernel for the
// widest ISA the CPU has (kernels/peak), so that a part whose 512-bit FMAs run at full width
// (Zen 5: twice the 256-bit rate) is not measured against the 256-bit limit.
#include <time.h>

#include <chrono>
#include <thread>
#include <vector>

#include "kernels/peak/peak.h"
#include "refs.h"

namespace kiln::bench {
namespace {

double Clock(bool cpu) {
  if (cpu) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Returns flop/s; runs until `seconds` have passed (checked every call).
double FmaLoop(double seconds, bool cpu_clock, float* sink) {
  const peak::PeakUkernel& k = peak::SelectPeakUkernel();
  // Long enough between clock reads (about 0.2 ms): reading the thread CPU clock is a system
  // call, and at 4096 iterations of 8-lane FMAs it cost 8% of the figure.
  constexpr size_t kIters = size_t{1} << 16;
  const double start = Clock(cpu_clock);
  double flops = 0;
  for (;;) {
    k.fn(kIters, sink);
    flops += k.flops_per_iter * static_cast<double>(kIters);
    const double t = Clock(cpu_clock) - start;
    if (t >= seconds) return flops / t;
  }
}

}  // namespace

double MeasureFmaPeak(int threads, double seconds, bool cpu_clock) {
  std::vector<double> rate(threads);
  std::vector<float> sink(threads);
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    pool.emplace_back([&, t] { rate[t] = FmaLoop(seconds, false, &sink[t]); });
  }
  rate[0] = FmaLoop(seconds, cpu_clock && threads == 1, &sink[0]);
  for (auto& th : pool) th.join();
  double total = 0;
  for (double r : rate) total += r;
  return total * 1e-9;
}

}  // namespace kiln::bench
