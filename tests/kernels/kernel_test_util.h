// Helpers shared by the kernel tests: the ISA levels to sweep, a two-thread pool, exact-size
// random buffers and a scalar model of the fused activations.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "kernels/gemm/gemm.h"
#include "support/cpu.h"
#include "support/thread_pool.h"

namespace kiln::kernel_test {

// Every level up to the one this CPU runs (and KILN_ISA allows).
inline std::vector<IsaLevel> IsaLevels() {
  std::vector<IsaLevel> levels;
  for (IsaLevel l : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    if (l <= ActiveIsa()) levels.push_back(l);
  }
  return levels;
}

inline ThreadPool* TwoThreads() {
  static std::unique_ptr<ThreadPool> pool = std::move(ThreadPool::Create(2).value());
  return pool.get();
}

// A pool of exactly `threads` threads (1, 2 or 3; null for 1), kept for the whole test binary.
// Three threads split work unevenly, as two do not.
inline ThreadPool* PoolOf(size_t threads) {
  static std::unique_ptr<ThreadPool> three = std::move(ThreadPool::Create(3).value());
  if (threads == 2) return TwoThreads();
  return threads == 3 ? three.get() : nullptr;
}

// Exactly n floats in [-1, 1], so that ASan catches a read past the last element.
inline std::vector<float> Random(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// The epilogue's activation on one value, computed plainly (in double where it matters).
inline float Activate(float v, const gemm::Epilogue& ep) {
  switch (ep.activation) {
    case gemm::Activation::kNone:
      return v;
    case gemm::Activation::kRelu:
      return std::max(v, 0.0f);
    case gemm::Activation::kClip:
      return std::min(std::max(v, ep.clip_min), ep.clip_max);
    case gemm::Activation::kSilu:
      return static_cast<float>(v / (1.0 + std::exp(-static_cast<double>(v))));
    case gemm::Activation::kHardSwish:
      return v * std::min(std::max(v / 6.0f + 0.5f, 0.0f), 1.0f);
    case gemm::Activation::kGelu:
      return static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
  }
  return v;
}

}  // namespace kiln::kernel_test
