#include "kernels/conv/layout.h"

namespace kiln::conv {
namespace {

// Work items are (image, channel block) pairs: each owns a disjoint slice of both tensors.
template <class Fn>
void ForEachBlock(size_t n, size_t blocks, ThreadPool* pool, Fn&& fn) {
  ParallelFor(pool, n * blocks, [&](size_t i) { fn(i / blocks, i % blocks); });
}

}  // namespace

void NchwToNchwc(size_t n, size_t c, size_t h, size_t w, size_t block, const float* src, float* dst,
                 ThreadPool* pool) {
  const size_t blocks = (c + block - 1) / block, hw = h * w;
  ForEachBlock(n, blocks, pool, [&](size_t b, size_t cb) {
    float* out = dst + (b * blocks + cb) * hw * block;
    const size_t c0 = cb * block, cn = c - c0 < block ? c - c0 : block;
    const float* in = src + (b * c + c0) * hw;
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
  ForEachBlock(n, blocks, pool, [&](size_t b, size_t cb) {
    const float* in = src + (b * blocks + cb) * hw * block;
    const size_t c0 = cb * block, cn = c - c0 < block ? c - c0 : block;
    float* out = dst + (b * c + c0) * hw;
    for (size_t j = 0; j < cn; ++j) {
      for (size_t i = 0; i < hw; ++i) out[j * hw + i] = in[i * block + j];
    }
  });
}

}  // namespace kiln::conv
