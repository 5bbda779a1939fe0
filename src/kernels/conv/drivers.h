// Internal to the conv drivers: each algorithm's prepare and run steps, called by conv.cc after
// the arguments were checked.
#pragma once

#include <limits>

#include "kernels/conv/conv.h"
#include "kernels/ukernels/f32_hot.h"

namespace kiln::conv {

// groups == 1 with at most this many input channels is an image stem (RGB, RGBA, grey), which
// kGroupedDirect and kStemNchwc run.
inline constexpr size_t kMaxStemChannels = 4;

struct PreparedConvAccess {
  static ConvParams& params(PreparedConv& c) { return c.params_; }
  static Algorithm& algorithm(PreparedConv& c) { return c.algorithm_; }
  static IsaLevel& isa(PreparedConv& c) { return c.isa_; }
  static size_t& block(PreparedConv& c) { return c.block_; }
  static std::vector<gemm::PackedMatrix>& packed(PreparedConv& c) { return c.packed_; }
  static const std::vector<gemm::PackedMatrix>& packed(const PreparedConv& c) { return c.packed_; }
  static std::shared_ptr<const float>& weights(PreparedConv& c) { return c.weights_; }
  static const float* weights(const PreparedConv& c) { return c.weights_.get(); }
  static std::shared_ptr<const winograd::PreparedWinograd>& winograd(PreparedConv& c) {
    return c.winograd_;
  }
  static const winograd::PreparedWinograd* winograd(const PreparedConv& c) {
    return c.winograd_.get();
  }
};

// The bias of output blocks [ob0, ob0 + nob) of c channels: bias + ob0 * c, or, when those
// blocks run past m channels, `tail` (nob * c floats) holding them zero-padded. Null bias: null.
inline const float* BlockBias(const float* bias, size_t ob0, size_t nob, size_t c, size_t m,
                              float* tail) {
  if (!bias || (ob0 + nob) * c <= m) return bias ? bias + ob0 * c : nullptr;
  for (size_t i = 0; i < nob * c; ++i) tail[i] = ob0 * c + i < m ? bias[ob0 * c + i] : 0.0f;
  return tail;
}

// The clamp that stands for ReLU / Clip inside a microkernel; other activations clamp nothing.
struct Clamp {
  float min = -std::numeric_limits<float>::infinity();
  float max = std::numeric_limits<float>::infinity();
};
Clamp ClampOf(const gemm::Epilogue& ep);
// The kernel of `isa` for the activation a clamp cannot express (SiLU, HardSwish, GELU), or
// null; ApplyVectorActivation applies it to y[0, n).
ukernels::F32VUnaryParamFn VectorActivation(const gemm::Epilogue& ep, IsaLevel isa);
void ApplyVectorActivation(const gemm::Epilogue& ep, IsaLevel isa, float* y, size_t n);
float ApplyActivation(const gemm::Epilogue& ep, float v);

// kGemm1x1 and kIm2colGemm: W of each group packed with gemm::PackA.
Status PrepareGemm(const float* weights, PreparedConv* conv);
// kGemm1x1 with a stride gathers the subsampled input of one group into the workspace.
bool Gemm1x1Strided(const ConvParams& p);
size_t Gemm1x1Workspace(const PreparedConv& conv);
Status RunGemm1x1(const PreparedConv& conv, const float* x, float* y, const RunOptions& o,
                  float* workspace);
size_t Im2colWorkspace(const PreparedConv& conv, size_t threads);
Status RunIm2colGemm(const PreparedConv& conv, const float* x, float* y, const RunOptions& o,
                     float* workspace);

// kDirectNchwc: W reordered to [M/c][C/c][KH][KW][ci][co]. A padded layer convolves a
// zero-padded copy of its input in the workspace.
Status PrepareDirectNchwc(const float* weights, PreparedConv* conv);
size_t DirectNchwcWorkspace(const PreparedConv& conv, size_t threads);
Status RunDirectNchwc(const PreparedConv& conv, const float* x, float* y, const RunOptions& o,
                      float* workspace);

// kDepthwise: W copied as given; block() > 1 runs dwconv's NCHWc kernels. On NCHW, dwconv may
// run short rows through blocks of channels in the workspace (DwConvWorkspaceFloats).
bool DepthwiseBlockedSupported(const ConvParams& p, size_t block);
Status PrepareDepthwise(const float* weights, PreparedConv* conv);
size_t DepthwiseWorkspace(const PreparedConv& conv, size_t threads);
Status RunDepthwise(const PreparedConv& conv, const float* x, float* y, const RunOptions& o,
                    float* workspace);

// kWinograd: 36 packed U[p] (winograd_path.cc).
Status PrepareWinograd(const float* weights, PreparedConv* conv);
// Wraps packed() (already checked by ViewPreparedConv) in a winograd::PreparedWinograd.
Status ViewWinograd(PreparedConv* conv);
size_t WinogradWorkspace(const PreparedConv& conv, size_t threads);
Status RunWinograd(const PreparedConv& conv, const float* x, float* y, const RunOptions& o,
                   float* workspace);

// kGroupedDirect: W reordered per group into chunks of up to 8 outputs, [cg][KH][KW][chunk].
bool GroupedDirectSupported(const ConvParams& p);
size_t GroupedWorkspace(const PreparedConv& conv, size_t threads);
Status PrepareGrouped(const float* weights, PreparedConv* conv);
Status RunGrouped(const PreparedConv& conv, const float* x, float* y, const RunOptions& o,
                  float* workspace);

// kStemNchwc: W reordered to [M/c][KH][KW][C][c]; x NCHW, y NCHWc.
bool StemNchwcSupported(const ConvParams& p);
Status PrepareStemNchwc(const float* weights, PreparedConv* conv);
Status RunStemNchwc(const PreparedConv& conv, const float* x, float* y, const RunOptions& o);

}  // namespace kiln::conv
