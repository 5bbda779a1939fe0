#include "kernels/softmax/softmax.h"

#include <algorithm>
#include <cmath>

#include "kernels/softmax/ukernel_table.h"

namespace kiln::softmax {
namespace {

// About this many elements per task; below it, splitting costs more than it saves.
constexpr size_t kMinTaskWork = 8 * 1024;

}  // namespace

Status Softmax(size_t rows, size_t cols, const float* x, float* y, const Options& options) {
  if (rows == 0 || cols == 0) return Status::Ok();
  if (x == nullptr || y == nullptr) {
    return Status::Error("softmax: null pointer with ", rows, " x ", cols, " elements");
  }
  const SoftmaxUkernel& k = SelectSoftmaxUkernel(options.isa.value_or(ActiveIsa()));
  const size_t threads = ThreadCount(options.pool);
  size_t per_task = rows;
  if (threads > 1) {
    per_task = std::max<size_t>(1, kMinTaskWork / cols);
    per_task = std::max(per_task, (rows + 4 * threads - 1) / (4 * threads));
  }
  const bool log = options.log;
  ParallelFor(options.pool, (rows + per_task - 1) / per_task, [&](size_t t) {
    const size_t end = std::min(rows, (t + 1) * per_task);
    for (size_t r = t * per_task; r < end; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      const float max = k.rmax(cols, xr);
      if (log) {
        const float sum = k.raddexpminusmax(cols, xr, max);
        const float shift = -max - std::log(sum);
        k.vaddc(cols, xr, &shift, yr);
      } else {
        const float sum = k.raddstoreexpminusmax(cols, xr, max, yr);
        k.vscale(cols, yr, 1.0f / sum, yr);
      }
    }
  });
  return Status::Ok();
}

}  // namespace kiln::softmax
