// kiln's 2-D pooling on the pooling layers of SqueezeNet 1.1, ResNet-18/50, GoogLeNet and
// DenseNet-121 (batch 1, NCHW), at every ISA level the machine has, alternating the levels in one
// loop so that a busy neighbour slows them alike.
//
//   bench_pool [--threads N] [--seconds S] [--filter SUBSTR]
//
// Per layer and ISA: the min and median time in microseconds and GB/s of input + output traffic
// at the min (on a shared machine the medians swing; the minima stay put).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/pool/pool.h"
#include "support/cpu.h"
#include "support/thread_pool.h"

namespace kiln::bench {
namespace {

struct Layer {
  const char* name;
  bool max;
  size_t c, hw, k, s, pad;
  bool ceil;
};

constexpr Layer kLayers[] = {
    {"squeezenet_pool1", true, 64, 111, 3, 2, 0, true},
    {"squeezenet_pool2", true, 128, 55, 3, 2, 0, true},
    {"squeezenet_pool3", true, 256, 27, 3, 2, 0, true},
    {"resnet_stem_pool", true, 64, 112, 3, 2, 1, false},
    {"googlenet_pool1", true, 64, 112, 3, 2, 0, true},
    {"googlenet_pool2", true, 192, 56, 3, 2, 0, true},
    {"googlenet_branch4_28", true, 256, 28, 3, 1, 1, true},
    {"googlenet_branch4_14", true, 512, 14, 3, 1, 1, true},
    {"googlenet_pool4", true, 832, 14, 2, 2, 0, true},
    {"googlenet_branch4_7", true, 832, 7, 3, 1, 1, true},
    {"densenet_transition_avg", false, 128, 56, 2, 2, 0, false},
    {"avg_3x3_s1_p1", false, 256, 28, 3, 1, 1, false},
};

int Main(int argc, char** argv) {
  size_t threads = 1;
  double seconds = 0.3;
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = static_cast<size_t>(std::atoi(argv[++i]));
    } else if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (a == "--filter" && i + 1 < argc) {
      filter = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_pool [--threads N] [--seconds S] [--filter SUBSTR]\n");
      return 2;
    }
  }
  auto pool_or = ThreadPool::Create(std::max<size_t>(threads, 1));
  if (!pool_or.ok()) {
    std::fprintf(stderr, "%s\n", pool_or.status().message().c_str());
    return 1;
  }
  std::unique_ptr<ThreadPool> tp = std::move(pool_or.value());
  std::vector<IsaLevel> isas;
  for (IsaLevel isa : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512})
    if (isa <= ActiveIsa()) isas.push_back(isa);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const Layer& l : kLayers) {
    if (!filter.empty() && std::string(l.name).find(filter) == std::string::npos) continue;
    pool::Pool2dParams p;
    p.channels = l.c;
    p.in_h = p.in_w = l.hw;
    p.kernel_h = p.kernel_w = l.k;
    p.stride_h = p.stride_w = l.s;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = l.pad;
    p.out_h = p.out_w = pool::PoolOutputSize(l.hw, l.k, l.s, l.pad, l.pad, l.ceil).value();
    std::vector<float> x(l.c * l.hw * l.hw), y(l.c * p.out_h * p.out_w);
    for (float& v : x) v = dist(rng);
    std::vector<std::vector<double>> times(isas.size());
    const auto t_end =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds * isas.size());
    while (std::chrono::steady_clock::now() < t_end) {
      for (size_t i = 0; i < isas.size(); ++i) {
        pool::Options o;
        o.isa = isas[i];
        o.pool = threads > 1 ? tp.get() : nullptr;
        const auto t0 = std::chrono::steady_clock::now();
        const Status s = l.max ? pool::MaxPool2d(p, x.data(), y.data(), o)
                               : pool::AveragePool2d(p, x.data(), y.data(), o);
        const auto t1 = std::chrono::steady_clock::now();
        if (!s.ok()) {
          std::fprintf(stderr, "%s: %s\n", l.name, s.message().c_str());
          return 1;
        }
        times[i].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      }
    }
    const double bytes = static_cast<double>((x.size() + y.size()) * sizeof(float));
    std::printf("%-26s %s %zux%zux%zu k%zu s%zu p%zu%s threads=%zu", l.name, l.max ? "max" : "avg",
                l.c, l.hw, l.hw, l.k, l.s, l.pad, l.ceil ? " ceil" : "", threads);
    for (size_t i = 0; i < isas.size(); ++i) {
      std::vector<double>& t = times[i];
      std::sort(t.begin(), t.end());
      std::printf("  %s min=%.1fus med=%.1fus (%.1f GB/s)", IsaName(isas[i]), t.front(),
                  t[t.size() / 2], bytes / (t.front() * 1e3));
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace
}  // namespace kiln::bench

int main(int argc, char** argv) { return kiln::bench::Main(argc, argv); }
