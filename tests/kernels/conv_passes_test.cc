// direct_nchwc::CallInPasses: a 1x1 microkernel call over many input blocks, split into passes
// over a few blocks each, against a float64 sum in the same NCHWc layout. The driver only splits
// on some CPUs (an L1d of at most 32 KiB), so this runs the split on every machine: the bias
// must come in on the first pass only, the clamp on the last only, the accumulate flag of the
// call on the first pass (later ones add to it), and a partial last block must stay partial.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/conv/conv_ukernels.h"
#include "kernels/conv/direct_nchwc_calls.h"
#include "support/cpu.h"

namespace kiln::conv {
namespace {

struct Call {
  size_t ic_blocks, ic_last, oc_blocks, oc_last, ow;
  bool bias, accumulate;
  float min, max;
};

void CheckPasses(const ConvNchwcUkernel& uk, const Call& tc, size_t pass) {
  SCOPED_TRACE(testing::Message() << uk.name << " ic_blocks " << tc.ic_blocks << " ic_last "
                                  << tc.ic_last << " oc_blocks " << tc.oc_blocks << " ow "
                                  << tc.ow << " pass " << pass << " bias " << tc.bias
                                  << " accumulate " << tc.accumulate);
  const size_t c = uk.block;
  std::mt19937 rng(static_cast<uint32_t>(tc.ic_blocks * 977 + tc.ow * 31 + pass));
  // Input: ic_blocks planes of ow pixels x c channels; a partial last block holds zeros past
  // ic_last (as the driver's layout does), and its weights past ic_last are zero too.
  std::vector<float> x = kernel_test::Random(tc.ic_blocks * tc.ow * c, rng);
  std::vector<float> w = kernel_test::Random(tc.oc_blocks * tc.ic_blocks * c * c, rng);
  const size_t nci_last = tc.ic_last != 0 ? tc.ic_last : c;
  for (size_t j = 0; j < tc.ow; ++j) {
    for (size_t ci = nci_last; ci < c; ++ci) x[((tc.ic_blocks - 1) * tc.ow + j) * c + ci] = 0.0f;
  }
  for (size_t ob = 0; ob < tc.oc_blocks; ++ob) {
    for (size_t ci = nci_last; ci < c; ++ci) {
      for (size_t co = 0; co < c; ++co) {
        w[((ob * tc.ic_blocks + tc.ic_blocks - 1) * c + ci) * c + co] = 0.0f;
      }
    }
  }
  const std::vector<float> bias = kernel_test::Random(tc.oc_blocks * c, rng);
  const std::vector<float> before = kernel_test::Random(tc.oc_blocks * tc.ow * c, rng);
  std::vector<float> y = before;

  ukernels::F32ConvNchwcParams k{};
  k.input = x.data();
  k.weights = w.data();
  k.output = y.data();
  k.bias = tc.bias ? bias.data() : nullptr;
  k.ow = tc.ow;
  k.oc_blocks = tc.oc_blocks;
  k.ic_blocks = tc.ic_blocks;
  k.kh = k.kw = 1;
  k.ic_last = tc.ic_last;
  k.oc_last = tc.oc_last;
  k.in_cb_stride = tc.ow * c;
  k.in_kh_stride = k.in_kw_stride = 0;
  k.in_ow_stride = c;
  k.w_ob_stride = tc.ic_blocks * c * c;
  k.w_cb_stride = c * c;
  k.w_kh_stride = c * c;
  k.out_ob_stride = tc.ow * c;
  k.accumulate = tc.accumulate ? 1 : 0;
  k.min = tc.min;
  k.max = tc.max;
  direct_nchwc::CallInPasses(uk, k, pass);

  // The products are summed in another order: each output may differ by eps * (K + 1), K the
  // input channels (inputs in [-1, 1]), doubled, plus eps-sized terms for the bias and the
  // accumulated value.
  const double eps = std::numeric_limits<float>::epsilon();
  const size_t kin = (tc.ic_blocks - 1) * c + nci_last;
  const double tol = 1.2 * (2.0 * eps * static_cast<double>(kin + 1) + 4.0 * eps);
  size_t bad = 0;
  for (size_t ob = 0; ob < tc.oc_blocks; ++ob) {
    const size_t nco = ob + 1 == tc.oc_blocks && tc.oc_last != 0 ? tc.oc_last : c;
    for (size_t j = 0; j < tc.ow; ++j) {
      for (size_t co = 0; co < nco; ++co) {
        double s = 0.0;
        for (size_t cb = 0; cb < tc.ic_blocks; ++cb) {
          for (size_t ci = 0; ci < c; ++ci) {
            s += static_cast<double>(x[(cb * tc.ow + j) * c + ci]) *
                 w[((ob * tc.ic_blocks + cb) * c + ci) * c + co];
          }
        }
        const size_t at = (ob * tc.ow + j) * c + co;
        if (tc.accumulate) s += before[at];
        if (tc.bias) s += bias[ob * c + co];
        const double want = std::min<double>(tc.max, std::max<double>(tc.min, s));
        if (!(std::fabs(y[at] - want) <= tol) && ++bad <= 5) {
          ADD_FAILURE() << "y[" << at << "] = " << y[at] << ", want " << want << " (tol " << tol
                        << ")";
        }
      }
    }
  }
}

TEST(ConvNchwcPasses, MatchOnePassAtEveryIsa) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  // Clamps at +-0.5 bite on sums of tens of products in [-1, 1]: a clamp on a pass other than
  // the last, or none on the last, changes most outputs.
  const Call calls[] = {
      {10, 3, 2, 0, 13, true, false, -0.5f, 0.5f},   // a partial last input block
      {7, 0, 2, 5, 6, true, true, -kInf, kInf},      // accumulate, a partial last output block
      {9, 0, 1, 0, 23, false, true, -0.5f, 0.5f},    // accumulate and clamp, no bias
      {12, 1, 2, 0, 1, true, true, 0.0f, kInf},      // one column, ReLU
      {5, 0, 2, 0, 17, true, false, -kInf, kInf},    // fewer blocks than some pass sizes
  };
  for (const ConvNchwcUkernel& uk : ConvNchwcUkernels()) {
    if (uk.isa > ActiveIsa()) continue;
    for (const Call& tc : calls) {
      for (size_t pass : {0, 1, 2, 3, 4, 8}) CheckPasses(uk, tc, pass);
    }
  }
}

}  // namespace
}  // namespace kiln::conv
