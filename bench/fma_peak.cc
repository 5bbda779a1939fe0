// The machine's limit, measured on the spot: independent FMA chains on 8-lane vectors.
#include <immintrin.h>

#include <time.h>

#include <chrono>
#include <thread>
#include <vector>

#include "refs.h"

namespace kiln::bench {
namespace {

// Returns flops done; runs until `seconds` have passed (checked every block).
double Clock(bool cpu) {
  if (cpu) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double FmaLoop(double seconds, bool cpu_clock, float* sink) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  const double start = Clock(cpu_clock);
  double flops = 0;
  // Long enough between clock reads (about 0.2 ms): reading the thread CPU clock is a system
  // call, and at 4096 iterations it cost 8% of the figure.
  constexpr int kInner = 1 << 16;
  for (;;) {
    for (int r = 0; r < kInner; ++r) {
#pragma GCC unroll 12
      for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
    }
    flops += 2.0 * 8 * 12 * kInner;
    const double t = Clock(cpu_clock) - start;
    if (t >= seconds) {
      __m256 s = acc[0];
      for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
      _mm256_storeu_ps(sink, s);
      return flops / t;
    }
  }
}

}  // namespace

double MeasureFmaPeak(int threads, double seconds, bool cpu_clock) {
  std::vector<double> rate(threads);
  std::vector<float> sink(8 * threads);
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    pool.emplace_back([&, t] { rate[t] = FmaLoop(seconds, false, &sink[8 * t]); });
  }
  rate[0] = FmaLoop(seconds, cpu_clock && threads == 1, &sink[0]);
  for (auto& th : pool) th.join();
  double total = 0;
  for (double r : rate) total += r;
  return total * 1e-9;
}

}  // namespace kiln::bench
