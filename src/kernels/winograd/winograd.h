// Winograd F(4x4, 3x3) convolution for 3x3, stride 1, dilation 1, group 1 layers, fp32, NCHW or
// channel-blocked NCHWc (winograd_nchwc.cc).
//
// Each 6x6 input tile d (4x4 outputs, tiles overlapping by 2) becomes V = B^T d B, each 3x3
// filter g becomes U = G g G^T (once, in Prepare), and for each of the 36 transform points p the
// products over input channels are one GEMM: O[p] (M x tiles) = U[p] (M x C) * V[p] (C x tiles).
// The output tile is A^T O A, with the bias and activation fused as it is written. Multiplies
// per output fall from 9 C (direct) to 36 C / 16 = 2.25 C, plus the transforms.
//
// The driver cuts the tiles of each image into blocks sized so that V and O of one block stay
// in L2, gives whole blocks to threads (each with its own workspace slot; a multiple of the
// thread count in all) and calls kiln::gemm single-threaded per transform point. Each tile is
// gathered into a 36 x tiles buffer and the transform passes run across the tiles of the block
// (microkernels ukernels/f32_winograd.h, per ISA).
//
// Numerical error. The transforms use the points 0, +-1, +-2 and infinity; B^T and A^T have
// entries up to 5 and 8, so rounding errors grow by about two orders of magnitude over a direct
// sum. The bound checked by tests/kernels/winograd_test.cc (random x, w in [-1, 1], C up to 512):
//   |y - y_ref| <= kErrorFactor * 2^-23 * (9 C) * max|x| * max|w|       (before the activation)
// where y_ref is the exact convolution; the worst case observed (C = 64, 256, 512; every ISA level)
// is about a sixth of it.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "kernels/gemm/gemm.h"
#include "kernels/ukernels/f32_hot.h"
#include "support/cpu.h"
#include "support/status.h"
#include "support/thread_pool.h"

namespace kiln::winograd {

// The constant of the error bound above (F(4x4, 3x3), fp32).
inline constexpr float kErrorFactor = 16.0f;
// Transform points (packed U matrices) of F(4x4, 3x3).
inline constexpr size_t kPoints = 36;

struct WinogradConvParams {
  size_t n = 1, c = 0, h = 0, w = 0;  // input x[N, C, H, W]; the layer's M is fixed by Prepare
  size_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  size_t out_h() const { return h + pad_top + pad_bottom >= 3 ? h + pad_top + pad_bottom - 2 : 0; }
  size_t out_w() const { return w + pad_left + pad_right >= 3 ? w + pad_left + pad_right - 2 : 0; }
};

// True for the layers Winograd computes: a 3x3 window, strides 1, dilations 1, group 1.
bool WinogradSupported(size_t kh, size_t kw, size_t stride_h, size_t stride_w, size_t dilation_h,
                       size_t dilation_w, size_t group);

// The transformed, packed weights of one layer: immutable, shareable between threads and runs.
class PreparedWinograd {
 public:
  PreparedWinograd() = default;
  // w: [M, C, 3, 3]. isa caps the GEMM microkernel (as gemm::PackA). block: 1 for NCHW input
  // and output, or the c of NCHWc (8 or 16: x[N][C/c][H][W][c], y likewise; see BlockedU).
  static Expected<PreparedWinograd> Prepare(size_t m, size_t c, const float* w,
                                            std::optional<IsaLevel> isa = std::nullopt,
                                            size_t block = 1);
  // Rebuilds a layer from the matrices that packed() returned (views over a compiled module's
  // blobs, say; nothing is copied). They may come from a hostile file, so all are checked: 36
  // packed matrices, non-null, at one ISA level: A of M x C (block 1) or B of Cp x Mp (blocked).
  static Expected<PreparedWinograd> View(size_t m, size_t c, std::vector<gemm::PackedMatrix> u,
                                         size_t block = 1);

  // The 36 packed U[p] (p = 6 i + j), to store them: M x C packed as A for NCHW; for NCHWc,
  // U[p]^T packed as B, Cp x Mp (C and M rounded up to the block, zeros there).
  const std::vector<gemm::PackedMatrix>& packed() const { return u_; }
  IsaLevel isa() const { return isa_; }
  size_t block() const { return block_; }

  size_t out_channels() const { return m_; }
  size_t in_channels() const { return c_; }

  // Floats of scratch that Run needs for this shape and thread count.
  size_t WorkspaceFloats(const WinogradConvParams& p, size_t threads) const;

  // y[N, M, out_h, out_w] = act(conv3x3(x) + bias), on NCHWc when block() > 1 (the padding
  // channels of y are written as act(0)). p.c must equal in_channels().
  //   bias: null or M values; or ep.bias with ep.bias_kind == kPerRow (not both).
  //   workspace: null (allocated for this call) or WorkspaceFloats(p, ThreadCount(pool)) floats.
  Status Run(const WinogradConvParams& p, const float* x, const float* bias,
             const gemm::Epilogue& ep, float* y, ThreadPool* pool = nullptr,
             float* workspace = nullptr) const;

 private:
  size_t TilesPerBlock(const WinogradConvParams& p, size_t threads) const;
  // The NCHWc form (winograd_nchwc.cc): its workspace slot and driver.
  size_t SlotFloatsNchwc(size_t tiles_per_block) const;
  Status RunNchwc(const WinogradConvParams& p, const float* x, const float* bias, float lo,
                  float hi, ukernels::F32VUnaryParamFn act, float* y, ThreadPool* pool,
                  float* workspace) const;

  size_t m_ = 0, c_ = 0, block_ = 1;
  IsaLevel isa_ = IsaLevel::kScalar;
  std::vector<gemm::PackedMatrix> u_;  // 36 packed U[p], M x C each
};

}  // namespace kiln::winograd
