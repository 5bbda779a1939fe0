// Shared by the convolution kernel tests (conv_test.cc, conv_prepare_test.cc): the seed, the
// algorithms and activations, the ISA levels with an NCHWc microkernel, and shape builders.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/conv/conv.h"
#include "kernels/conv/conv_ukernels.h"
#include "support/cpu.h"

namespace kiln::conv {
namespace conv_test {

constexpr uint32_t kSeed = 20261130;
constexpr Algorithm kAlgorithms[] = {Algorithm::kAuto,        Algorithm::kGemm1x1,
                                     Algorithm::kIm2colGemm,  Algorithm::kDirectNchwc,
                                     Algorithm::kDepthwise,   Algorithm::kWinograd,
                                     Algorithm::kGroupedDirect, Algorithm::kStemNchwc};
constexpr gemm::Activation kActivations[] = {gemm::Activation::kNone,      gemm::Activation::kRelu,
                                             gemm::Activation::kClip,      gemm::Activation::kSilu,
                                             gemm::Activation::kHardSwish, gemm::Activation::kGelu};

inline std::vector<IsaLevel> IsaLevels() {
  std::vector<IsaLevel> levels;
  for (const ConvNchwcUkernel& row : ConvNchwcUkernels()) {
    // A core's variant of a row runs at its row's level.
    if (row.isa <= ActiveIsa() && row.uarch == Uarch::kOther) levels.push_back(row.isa);
  }
  return levels;
}

using kernel_test::Activate;
using kernel_test::Random;
using kernel_test::PoolOf;
using kernel_test::TwoThreads;

inline ConvParams P(size_t n, size_t c, size_t h, size_t w, size_t m, size_t kh, size_t kw,
             size_t stride = 1, size_t pad = 0, size_t dilation = 1, size_t groups = 1) {
  ConvParams p;
  p.n = n;
  p.c = c;
  p.h = h;
  p.w = w;
  p.m = m;
  p.kh = kh;
  p.kw = kw;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
  p.dilation_h = p.dilation_w = dilation;
  p.groups = groups;
  return p;
}

inline ConvParams Asym(ConvParams p, size_t t, size_t l, size_t b, size_t r, size_t sh, size_t sw) {
  p.pad_top = t;
  p.pad_left = l;
  p.pad_bottom = b;
  p.pad_right = r;
  p.stride_h = sh;
  p.stride_w = sw;
  return p;
}

}  // namespace conv_test
}  // namespace kiln::conv
