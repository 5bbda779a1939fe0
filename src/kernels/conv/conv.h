// fp32 2-D convolution drivers: y[N, M, OH, OW] = act(conv(x[N, C, H, W], w[M, C/g, KH, KW]) + b).
//
// Weights are prepared once (PrepareConv) into an immutable PreparedConv that many threads may
// share; each Run carries its own buffers. Algorithms:
//   kGemm1x1     1x1, no padding: W[M x C] * x[C x HW] per group, x read in place (no im2col),
//                W prepacked with gemm::PackA; with a stride, the subsampled x is gathered into
//                the workspace (C/g x OH*OW floats) first.
//   kIm2colGemm  the general case: columns of im2col built a block at a time (the block stays in
//                L2) and multiplied by the prepacked W; any padding, stride, dilation and groups.
//   kDirectNchwc direct convolution on the channel-blocked layout NCHWc (c = 8 for scalar and
//                AVX2, 16 for AVX-512; see layout.h); groups == 1. Input and output are NCHWc;
//                a padded layer copies its input into a zero-padded buffer (the workspace).
//   kDepthwise   groups == C == M: dwconv's row microkernels (a portable loop for dilations), on
//                NCHW, or on NCHWc when prepared with PrepareOptions::layout = kNchwc.
//   kWinograd    3x3, stride 1, dilation 1, groups 1: Winograd F(4x4, 3x3) (kernels/winograd),
//                NCHW; 36 packed U matrices (M x C each) as the prepared weights. About 4x fewer
//                multiplies than the direct sum, at a larger rounding error (winograd.h).
//   kGroupedDirect  other grouped layers with few channels per group (RegNet, ResNeXt): direct,
//                over zero-padded polyphase copies of each group's input, up to 8 output channels
//                at a time (grouped.cc); dilation 1.
//   kStemNchwc   an image stem (groups 1, C <= 4): NCHW input, NCHWc output, for a stem whose
//                consumer runs blocked; the NCHWc microkernel over a padded HWC copy of the
//                input (stem_nchwc.cc).
// ChooseAlgorithm is a cost model; MeasureAlgorithm times the candidates once and caches the
// winner by (params, ISA, threads).
// 1-D and 3-D convolutions stay on the reference kernels (kernels/ref/conv.h).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/gemm/gemm.h"
#include "support/cpu.h"
#include "support/status.h"
#include "support/thread_pool.h"

namespace kiln::winograd {
class PreparedWinograd;
}

namespace kiln::conv {

struct ConvParams {
  size_t n = 1;  // batch
  size_t c = 0;  // input channels
  size_t h = 0, w = 0;
  size_t m = 0;  // output channels
  size_t kh = 1, kw = 1;
  size_t stride_h = 1, stride_w = 1;
  size_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  size_t dilation_h = 1, dilation_w = 1;
  size_t groups = 1;

  size_t out_h() const;  // valid only after ValidateParams succeeded
  size_t out_w() const;
  // 2 * N * M * C/groups * KH * KW * OH * OW: the work of the plain algorithm.
  double Flops() const;
  std::string Describe() const;
  bool operator==(const ConvParams&) const = default;
};

// Sizes >= 1 (n, c, m may not be 0 either), groups divide C and M, the dilated window fits in the
// padded input, and every buffer size fits in size_t.
Status ValidateParams(const ConvParams& p);

enum class Algorithm {
  kAuto,
  kGemm1x1,
  kIm2colGemm,
  kDirectNchwc,
  kDepthwise,
  kWinograd,
  kGroupedDirect,
  kStemNchwc,
};
// kWinograd's packed weight matrices (one per transform point of F(4x4, 3x3)).
inline constexpr size_t kWinogradMatrices = 36;
const char* AlgorithmName(Algorithm a);
// The algorithm AlgorithmName gives `name` (kAuto included); nullopt for any other string.
std::optional<Algorithm> AlgorithmFromName(std::string_view name);

enum class Layout {
  kNchw,   // plain
  kNchwc,  // [N][ceil(C / c)][H][W][c], channels past C zero
};

// Whether `a` can run `p` (kAuto: always).
bool Supports(Algorithm a, const ConvParams& p);

// Whether `a` can run `p` on NCHWc at `isa` (block SelectConvNchwcUkernel(isa).block):
// kDirectNchwc and kWinograd always, kDepthwise for the windows dwconv's blocked kernels take,
// kStemNchwc always (its output only: it reads NCHW).
bool SupportsBlocked(Algorithm a, const ConvParams& p, IsaLevel isa);

// The cost model: kDepthwise for depthwise layers, kGroupedDirect for other grouped windows with
// at most 32 channels per group (SIMD ISAs), kGemm1x1 for unpadded 1x1 (any stride),
// kWinograd for 3x3 stride-1 layers with C, M >= 32 and outputs of 14x14 or more on a SIMD ISA
// (28x28 for M < 64 on AVX-512),
// kDirectNchwc for dense windows with enough channels to fill a block on a SIMD ISA, else
// kIm2colGemm. Never kStemNchwc, whose output is NCHWc: lowering asks for it where the layout
// plan keeps the stem's consumer blocked.
Algorithm ChooseAlgorithm(const ConvParams& p, IsaLevel isa);

struct PrepareOptions {
  Algorithm algorithm = Algorithm::kAuto;  // kAuto: ChooseAlgorithm
  std::optional<IsaLevel> isa;             // caps the ISA below ActiveIsa()
  // kNchwc: run kDepthwise or kWinograd channel-blocked (SupportsBlocked must hold).
  // kDirectNchwc is always NCHWc and the other GEMM algorithms always NCHW, whatever this says.
  Layout layout = Layout::kNchw;
};

class PreparedConv {
 public:
  PreparedConv() = default;
  const ConvParams& params() const { return params_; }
  Algorithm algorithm() const { return algorithm_; }
  IsaLevel isa() const { return isa_; }
  // Layout of Run's output, and of its input except for kStemNchwc (input_layout());
  // block() is c for kNchwc, 1 otherwise.
  Layout layout() const { return block_ > 1 ? Layout::kNchwc : Layout::kNchw; }
  Layout input_layout() const {
    return algorithm_ == Algorithm::kStemNchwc ? Layout::kNchw : layout();
  }
  size_t block() const { return block_; }
  // Floats Run needs as scratch with `threads` threads (0: none).
  size_t WorkspaceSize(size_t threads) const;
  // The prepared weights, to store them (a compiled module) and rebuild with ViewPreparedConv:
  // kGemm1x1 and kIm2colGemm hold one packed A per group, kWinograd the 36 packed U[p]
  // (M x C, p = 0..35); kDirectNchwc and kGroupedDirect the reordered weights and kDepthwise
  // a copy, weight_floats() of them.
  const std::vector<gemm::PackedMatrix>& packed() const { return packed_; }
  const float* weights() const { return weights_.get(); }
  size_t weight_floats() const;

 private:
  friend struct PreparedConvAccess;  // the drivers
  ConvParams params_;
  Algorithm algorithm_ = Algorithm::kAuto;
  IsaLevel isa_ = IsaLevel::kScalar;
  size_t block_ = 1;
  std::vector<gemm::PackedMatrix> packed_;  // kGemm1x1, kIm2colGemm: one per group
  std::shared_ptr<const float> weights_;    // kDirectNchwc, kGroupedDirect, kStemNchwc:
                                            // reordered;
                                            // kDepthwise: copied
  // kWinograd: the layer over the same matrices as packed_.
  std::shared_ptr<const winograd::PreparedWinograd> winograd_;
};

// What ViewPreparedConv rebuilds a PreparedConv from; the fields mirror PreparedConv's getters.
struct PreparedConvParts {
  ConvParams params;
  Algorithm algorithm = Algorithm::kAuto;
  IsaLevel isa = IsaLevel::kScalar;
  size_t block = 1;
  std::vector<gemm::PackedMatrix> packed;  // kGemm1x1, kIm2colGemm, kWinograd (PackedMatrix::View)
  const float* weights = nullptr;          // kDirectNchwc, kDepthwise, kGroupedDirect, kStemNchwc
  size_t weight_floats = 0;
};

// A PreparedConv over weights it does not own (`owner` keeps `parts.weights` alive; the packed
// matrices keep their own). The parts may come from a hostile file, so all are checked against
// each other: valid params, an algorithm that supports them, an ISA this process runs, the block
// and packed panels that PrepareConv would make at that ISA, and exact sizes. Nothing is copied.
Expected<PreparedConv> ViewPreparedConv(PreparedConvParts parts, std::shared_ptr<const void> owner);

// w is [M][C/groups][KH][KW].
Expected<PreparedConv> PrepareConv(const ConvParams& p, const float* weights,
                                   const PrepareOptions& options = {});

struct RunOptions {
  // bias_kind kNone or kPerRow (one value per output channel); any activation.
  gemm::Epilogue epilogue;
  ThreadPool* pool = nullptr;
  // Null, or WorkspaceSize(threads) floats; null with a non-zero size allocates per call.
  float* workspace = nullptr;
  // Y = act(conv(X) + bias + Y): the sum lands on what Y already holds (a residual branch written
  // there first, or Y itself when the residual's buffer is Y's). Only where SupportsAccumulate.
  bool accumulate = false;
};

// Whether Run honours RunOptions::accumulate for `a`: the GEMM paths and the direct NCHWc kernel,
// whose epilogues read C before the activation. Winograd, depthwise, grouped and the stem do not.
bool SupportsAccumulate(Algorithm a);

// x in conv.input_layout(), y in conv.layout(). Errors: null pointers, a per-column bias.
Status Run(const PreparedConv& conv, const float* x, float* y, const RunOptions& options = {});

// Times every supported algorithm on `p` once (random weights and input, `pool`'s threads) and
// returns the fastest; later calls with the same (p, isa, threads) return the cached answer.
Expected<Algorithm> MeasureAlgorithm(const ConvParams& p, ThreadPool* pool,
                                     std::optional<IsaLevel> isa = std::nullopt);

}  // namespace kiln::conv
