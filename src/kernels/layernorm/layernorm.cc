#include "kernels/layernorm/layernorm.h"

#include <algorithm>
#include <cmath>

#include "kernels/layernorm/ukernel_table.h"

namespace kiln::layernorm {
namespace {

// About this many elements per task; below it, splitting costs more than it saves.
constexpr size_t kMinTaskWork = 8 * 1024;

}  // namespace

Status LayerNorm(size_t rows, size_t cols, const float* x, const float* scale, const float* bias,
                 float epsilon, float* y, float* mean, float* inv_std, const Options& options) {
  if (rows == 0 || cols == 0) return Status::Ok();
  if (x == nullptr || scale == nullptr || y == nullptr) {
    return Status::Error("layer norm: null input, scale or output with ", rows, " x ", cols,
                         " elements");
  }
  if (!(epsilon >= 0.0f)) return Status::Error("layer norm: epsilon ", epsilon, " is negative");
  const LayerNormUkernel& k = SelectLayerNormUkernel(options.isa.value_or(ActiveIsa()));
  const size_t threads = ThreadCount(options.pool);
  size_t per_task = rows;
  if (threads > 1) {
    per_task = std::max<size_t>(1, kMinTaskWork / cols);
    per_task = std::max(per_task, (rows + 4 * threads - 1) / (4 * threads));
  }
  const float inv_n = 1.0f / static_cast<float>(cols);
  ParallelFor(options.pool, (rows + per_task - 1) / per_task, [&](size_t t) {
    const size_t end = std::min(rows, (t + 1) * per_task);
    for (size_t r = t * per_task; r < end; ++r) {
      const float* xr = x + r * cols;
      // The float sum's mean is off by a few spacings of the values; the sums of differences
      // from it correct that and give the variance (shifted data), both with small terms.
      const float m0 = k.rsum(cols, xr) * inv_n;
      float sum_diff = 0.0f, sum_sq = 0.0f;
      k.rsumsqdiff(cols, xr, m0, &sum_diff, &sum_sq);
      const float d = sum_diff * inv_n;
      const float m = m0 + d;
      const float var = std::max(sum_sq * inv_n - d * d, 0.0f);
      const float is = 1.0f / std::sqrt(var + epsilon);
      k.vlayernorm(cols, xr, m, is, scale, bias, y + r * cols);
      if (mean) mean[r] = m;
      if (inv_std) inv_std[r] = is;
    }
  });
  return Status::Ok();
}

}  // namespace kiln::layernorm
