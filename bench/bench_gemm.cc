// bench_gemm: kiln's Sgemm against OpenBLAS, BLIS and oneDNN, in one process, alternating
// A B C D A B C D, with every library's thread count set explicitly. One line per shape and
// thread count:
//   gemm M N K threads kiln=X openblas=Y blis=Z onednn=W peak=P [ratios] maxdiff=D spread=S
// GFLOP/s are medians over rounds (2 M N K flops per call); peak is the FMA peak of `threads`
// cores measured just before the row; min_ratio compares the fastest round of each (the best
// library's fastest time over kiln's: on a shared machine the medians move with the load, the
// minima much less); maxdiff is kiln's largest |difference| from OpenBLAS.
//
// Usage: bench_gemm [--threads 1,2] [--rounds 15] [--shapes MxNxK,...] [--kc N --mc N --nc N]
//                   [--orient n|t] [--clock wall]
// (1 thread is timed by thread CPU time unless --clock wall; --orient forces the normal or the
// transposed product, default the driver's choice.)
// KILN_ISA caps kiln's ISA as everywhere else, and oneDNN's to match (OnednnMatchKilnIsa; the
// header line says which). OpenBLAS and BLIS pick their own kernels.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/gemm/gemm.h"
#include "kernels/gemm/ukernel_table.h"
#include "refs.h"
#include "support/cpu.h"
#include "support/thread_pool.h"

namespace kiln::bench {
namespace {

struct Shape {
  size_t m, n, k;
};

const Shape kDefaultShapes[] = {{1024, 1024, 1024}, {256, 256, 256},  {64, 3136, 576},
                                {128, 784, 1152},   {256, 196, 2304}, {512, 49, 4608},
                                {768, 128, 768},    {3072, 128, 768}, {2048, 1, 2048}};

// With one thread every library runs on the calling thread, so that thread's CPU time is the
// honest clock: it stops while another process holds the core (the dev machines are shared).
// With more threads only wall time counts all of them.
bool g_cpu_clock = true;

double Now() {
  if (g_cpu_clock) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Contender {
  const char* name;
  std::function<void(float* c)> run;
  size_t reps = 1;
  std::vector<double> samples;  // seconds per call, one per round
};

std::vector<size_t> ParseList(const char* s) {
  std::vector<size_t> v;
  for (const char* p = s; *p;) {
    v.push_back(std::strtoul(p, const_cast<char**>(&p), 10));
    if (*p == ',') ++p;
  }
  return v;
}

std::vector<Shape> ParseShapes(const char* s) {
  std::vector<Shape> v;
  for (const char* p = s; *p;) {
    Shape sh{};
    sh.m = std::strtoul(p, const_cast<char**>(&p), 10);
    if (*p == 'x') ++p;
    sh.n = std::strtoul(p, const_cast<char**>(&p), 10);
    if (*p == 'x') ++p;
    sh.k = std::strtoul(p, const_cast<char**>(&p), 10);
    if (*p == ',') ++p;
    v.push_back(sh);
  }
  return v;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Main(int argc, char** argv) {
  std::vector<size_t> thread_counts = {1, 2};
  std::vector<Shape> shapes(std::begin(kDefaultShapes), std::end(kDefaultShapes));
  size_t rounds = 15;
  gemm::Blocking blocking;
  bool wall_clock = false;
  gemm::Orientation orientation = gemm::Orientation::kAuto;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--threads") {
      thread_counts = ParseList(argv[i + 1]);
    } else if (flag == "--rounds") {
      rounds = std::strtoul(argv[i + 1], nullptr, 10);
    } else if (flag == "--shapes") {
      shapes = ParseShapes(argv[i + 1]);
    } else if (flag == "--clock") {
      wall_clock = std::string(argv[i + 1]) == "wall";
    } else if (flag == "--kc") {
      blocking.kc = std::strtoul(argv[i + 1], nullptr, 10);
    } else if (flag == "--mc") {
      blocking.mc = std::strtoul(argv[i + 1], nullptr, 10);
    } else if (flag == "--orient") {  // n: normal, t: transposed (default: the driver's choice)
      orientation = argv[i + 1][0] == 't'   ? gemm::Orientation::kTransposed
                    : argv[i + 1][0] == 'n' ? gemm::Orientation::kNormal
                                            : gemm::Orientation::kAuto;
    } else if (flag == "--nc") {
      blocking.nc = std::strtoul(argv[i + 1], nullptr, 10);
    } else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  const CpuInfo& cpu = GetCpuInfo();
  const std::string onednn_isa = OnednnMatchKilnIsa();
  std::printf("# kiln %s (isa %s), %s | %s | %s (%s)\n", gemm::SelectGemmUkernel().name,
              IsaName(cpu.isa), OpenblasInfo().c_str(), BlisInfo().c_str(),
              OnednnInfo().c_str(), onednn_isa.c_str());
  std::printf("# caches l1d=%zu l2=%zu l3=%zu; GFLOP/s medians of %zu rounds; OMP_WAIT_POLICY=%s "
              "OPENBLAS_THREAD_TIMEOUT=%s\n",
              cpu.l1d_bytes, cpu.l2_bytes, cpu.l3_bytes, rounds,
              std::getenv("OMP_WAIT_POLICY") ? std::getenv("OMP_WAIT_POLICY") : "-",
              std::getenv("OPENBLAS_THREAD_TIMEOUT") ? std::getenv("OPENBLAS_THREAD_TIMEOUT")
                                                      : "-");
  std::fflush(stdout);

  for (size_t threads : thread_counts) {
    auto pool_or = ThreadPool::Create(threads);
    if (!pool_or.ok()) {
      std::fprintf(stderr, "%s\n", pool_or.status().message().c_str());
      return 1;
    }
    std::unique_ptr<ThreadPool> pool = std::move(pool_or).value();
    g_cpu_clock = threads == 1 && !wall_clock;
    OpenblasSetThreads(static_cast<int>(threads));
    BlisSetThreads(static_cast<int>(threads));
    OnednnSetThreads(static_cast<int>(threads));
    for (const Shape& s : shapes) {
      std::mt19937 rng(42);
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      std::vector<float> a(s.m * s.k), b(s.k * s.n), c_ref(s.m * s.n), c_kiln(s.m * s.n),
          c_tmp(s.m * s.n);
      for (float& x : a) x = dist(rng);
      for (float& x : b) x = dist(rng);
      gemm::Options opt;
      opt.pool = threads > 1 ? pool.get() : nullptr;
      opt.blocking = blocking;
      opt.orientation = orientation;
      std::vector<Contender> cs = {
          {"kiln",
           [&](float* c) {
             Status st = gemm::Sgemm(s.m, s.n, s.k, a.data(), s.k, b.data(), s.n, c, s.n, opt);
             if (!st.ok()) std::abort();
           }},
          {"openblas", [&](float* c) { OpenblasSgemm(s.m, s.n, s.k, a.data(), b.data(), c); }},
          {"blis", [&](float* c) { BlisSgemm(s.m, s.n, s.k, a.data(), b.data(), c); }},
          {"onednn", [&](float* c) { OnednnSgemm(s.m, s.n, s.k, a.data(), b.data(), c); }},
      };
      // Warm up and size each sample to about 20 ms so that small shapes are timed in batches.
      for (Contender& c : cs) {
        c.run(c_tmp.data());
        const double t0 = Now();
        c.run(c_tmp.data());
        const double t = std::max(Now() - t0, 1e-7);
        c.reps = std::clamp<size_t>(static_cast<size_t>(0.02 / t), 1, 100000);
      }
      const double peak = MeasureFmaPeak(static_cast<int>(threads), 0.05, g_cpu_clock);
      // Each round starts one library later, so that each follows each of the others equally
      // often: a library's threads still spinning (or its data still in cache) after its batch
      // otherwise weigh on the same next library every time.
      for (size_t r = 0; r < rounds; ++r) {
        for (size_t j = 0; j < cs.size(); ++j) {
          Contender& c = cs[(j + r) % cs.size()];
          float* out = &c == &cs[0] ? c_kiln.data() : &c == &cs[1] ? c_ref.data() : c_tmp.data();
          // With more than one thread, the previous library's idle threads (kiln's pool spins up
          // to 2 ms, libgomp its shortened count) would share the cores with this batch's start:
          // a pause lets them sleep first.
          if (threads > 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
          const double t0 = Now();
          for (size_t i = 0; i < c.reps; ++i) c.run(out);
          c.samples.push_back((Now() - t0) / c.reps);
        }
      }
      double maxdiff = 0;
      for (size_t i = 0; i < c_ref.size(); ++i) {
        maxdiff = std::max(maxdiff, static_cast<double>(std::fabs(c_kiln[i] - c_ref[i])));
      }
      const double flops = 2.0 * s.m * s.n * s.k;
      double gf[4], best_ref = 0, spread = 0, min_time[4], best_min_ref = 1e300;
      for (int i = 0; i < 4; ++i) {
        gf[i] = flops / Median(cs[i].samples) * 1e-9;
        if (i > 0) best_ref = std::max(best_ref, gf[i]);
        const auto [lo, hi] = std::minmax_element(cs[i].samples.begin(), cs[i].samples.end());
        spread = std::max(spread, *hi / *lo);
        min_time[i] = *lo;
        if (i > 0) best_min_ref = std::min(best_min_ref, *lo);
      }
      std::printf(
          "gemm %zu %zu %zu %zu kiln=%.1f openblas=%.1f blis=%.1f onednn=%.1f peak=%.1f "
          "kiln/best=%.2f kiln/peak=%.2f min_ratio=%.2f maxdiff=%.2g spread=%.2f clock=%s\n",
          s.m, s.n, s.k, threads, gf[0], gf[1], gf[2], gf[3], peak, gf[0] / best_ref,
          gf[0] / peak, best_min_ref / min_time[0], maxdiff, spread, g_cpu_clock ? "cpu" : "wall");
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace kiln::bench

int main(int argc, char** argv) {
  kiln::bench::ShortenLibrarySpins(argv);
  return kiln::bench::Main(argc, argv);
}
