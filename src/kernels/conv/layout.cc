#include "kernels/conv/layout.h"

#include "kernels/gemm/ukernel_table.h"

namespace kiln::conv {
namespace {

// Both reorders are transposes of a block's c planes against its pixels: the ISA's transposing
// GEMM packer (16x16 or 8x8 register transposes) where there is one. Zen 5, 1 thread, c = 16,
// NCHW -> NCHWc and back, loops -> packer: 144 x 56 x 56 256 -> 66 us, 32 x 112 x 112 256 -> 59,
// 960 x 7 x 7 21.5 -> 6.8.
ukernels::F32PackAFn Transposer() { return gemm::SelectGemmUkernel().pack_a; }

// Work items are (image, channel block) pairs: each owns a disjoint slice of both tensors.
template <class Fn>
void ForEachBlock(size_t n, size_t blocks, ThreadPool* pool, Fn&& fn) {
  ParallelFor(pool, n * blocks, [&](size_t i) { fn(i / blocks, i % blocks); });
}

}  // namespace

void NchwToNchwc(size_t n, size_t c, size_t h, size_t w, size_t block, const float* src, float* dst,
                 ThreadPool* pool) {
  const size_t blocks = (c + block - 1) / block, hw = h * w;
  const ukernels::F32PackAFn transpose = Transposer();
  ForEachBlock(n, blocks, pool, [&](size_t b, size_t cb) {
    float* out = dst + (b * blocks + cb) * hw * block;
    const size_t c0 = cb * block, cn = c - c0 < block ? c - c0 : block;
    const float* in = src + (b * c + c0) * hw;
    // dst[i * block + j] = src[j * hw + i], zeros for j >= cn.
    if (transpose) return transpose(cn, hw, in, hw, block, out);
    for (size_t i = 0; i < hw; ++i) {
      float* o = out + i * block;
      for (size_t j = 0; j < cn; ++j) o[j] = in[j * hw + i];
      for (size_t j = cn; j < block; ++j) o[j] = 0.0f;
    }
  });
}

void NchwcToNchw(size_t n, size_t c, size_t h, size_t w, size_t block, const float* src, float* dst,
                 ThreadPool* pool) {
  const size_t blocks = (c + block - 1) / block, hw = h * w;
  const ukernels::F32PackAFn transpose = Transposer();
  ForEachBlock(n, blocks, pool, [&](size_t b, size_t cb) {
    const float* in = src + (b * blocks + cb) * hw * block;
    const size_t c0 = cb * block, cn = c - c0 < block ? c - c0 : block;
    float* out = dst + (b * c + c0) * hw;
    // out[j * hw + i] = in[i * block + j] for j < cn: hw rows of cn values.
    if (transpose) return transpose(hw, cn, in, block, hw, out);
    for (size_t j = 0; j < cn; ++j) {
      for (size_t i = 0; i < hw; ++i) out[j * hw + i] = in[i * block + j];
    }
  });
}

}  // namespace kiln::conv
