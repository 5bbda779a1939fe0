#include "kernels/pool/pool.h"

#include <algorithm>
#include <vector>

#include "kernels/pool/ukernel_table.h"

namespace kiln::pool {
namespace {

// About this many input reads per task; below it, splitting costs more than it saves.
constexpr size_t kMinTaskWork = 32 * 1024;

Status Check(const Pool2dParams& p, const float* x, const float* y, const char* what) {
  if (p.kernel_h == 0 || p.kernel_w == 0 || p.stride_h == 0 || p.stride_w == 0) {
    return Status::Error(what, ": kernel and stride must be positive (kernel ", p.kernel_h, "x",
                         p.kernel_w, ", stride ", p.stride_h, "x", p.stride_w, ")");
  }
  // The largest padded coordinate any window starts at must stay inside input + leading pad.
  if (p.out_h > 0 && (p.out_h - 1) * p.stride_h >= p.in_h + p.pad_top + p.pad_bottom) {
    return Status::Error(what, ": out_h ", p.out_h, " has windows past the padded input");
  }
  if (p.out_w > 0 && (p.out_w - 1) * p.stride_w >= p.in_w + p.pad_left + p.pad_right) {
    return Status::Error(what, ": out_w ", p.out_w, " has windows past the padded input");
  }
  const size_t n = p.batch * p.channels * p.out_h * p.out_w;
  if (n > 0 && (x == nullptr || y == nullptr || p.in_h == 0 || p.in_w == 0)) {
    return Status::Error(what, ": null pointer or empty input with ", n, " outputs");
  }
  return Status::Ok();
}

Status Pool2d(const Pool2dParams& p, const float* x, float* y, const Options& options, bool max) {
  KILN_RETURN_IF_ERROR(Check(p, x, y, max ? "MaxPool2d" : "AveragePool2d"));
  const size_t planes = p.batch * p.channels;
  const size_t rows = planes * p.out_h;
  if (rows == 0 || p.out_w == 0) return Status::Ok();
  const PoolUkernel& k = SelectPool2dUkernel(options.isa.value_or(ActiveIsa()), p.out_w);
  const ukernels::F32Pool2dFn fn = max ? k.maxpool : k.avgpool;
  const size_t row_work = p.in_w * p.kernel_h + p.out_w * p.kernel_w;
  const size_t threads = ThreadCount(options.pool);
  size_t per_task = rows;
  if (threads > 1) {
    per_task = std::max<size_t>(1, kMinTaskWork / std::max<size_t>(row_work, 1));
    per_task = std::max(per_task, (rows + 4 * threads - 1) / (4 * threads));
  }
  const size_t buf_floats =
      ukernels::F32Pool2dBufferFloats(p.in_w, p.out_w, p.kernel_w, p.stride_w, p.pad_left);
  ParallelFor(options.pool, (rows + per_task - 1) / per_task, [&](size_t t) {
    ukernels::F32Pool2dParams kp{};
    kp.ih = p.in_h;
    kp.iw = p.in_w;
    kp.oh = p.out_h;
    kp.ow = p.out_w;
    kp.kh = p.kernel_h;
    kp.kw = p.kernel_w;
    kp.stride_h = p.stride_h;
    kp.stride_w = p.stride_w;
    kp.pad_top = p.pad_top;
    kp.pad_left = p.pad_left;
    kp.pad_bottom = p.pad_bottom;
    kp.pad_right = p.pad_right;
    kp.count_include_pad = p.count_include_pad ? 1 : 0;
    // The kernel's scratch rows: one set per thread, kept, so that a session's runs at unchanged
    // shapes do not allocate.
    thread_local std::vector<float> buf;
    if (buf.size() < buf_floats) buf.resize(buf_floats);
    kp.buf = buf.data();
    // Output rows [begin, end) of the flattened [planes, out_h].
    kp.row_begin = t * per_task;
    kp.row_end = std::min(rows, (t + 1) * per_task);
    fn(x, y, &kp);
  });
  return Status::Ok();
}

Status GlobalPool(size_t planes, size_t plane_size, const float* x, float* y,
                  const Options& options, bool max) {
  if (planes == 0) return Status::Ok();
  if (plane_size == 0 || x == nullptr || y == nullptr) {
    return Status::Error(max ? "GlobalMaxPool" : "GlobalAveragePool", ": ", planes, " planes of ",
                         plane_size, " elements, or a null pointer");
  }
  const PoolUkernel& k = SelectPoolUkernel(options.isa.value_or(ActiveIsa()));
  const ukernels::F32ReduceFn fn = max ? k.gmaxpool : k.gavgpool;
  const size_t threads = ThreadCount(options.pool);
  size_t per_task = planes;
  if (threads > 1) {
    per_task = std::max<size_t>(1, kMinTaskWork / plane_size);
    per_task = std::max(per_task, (planes + 4 * threads - 1) / (4 * threads));
  }
  ParallelFor(options.pool, (planes + per_task - 1) / per_task, [&](size_t t) {
    const size_t end = std::min(planes, (t + 1) * per_task);
    for (size_t i = t * per_task; i < end; ++i) y[i] = fn(plane_size, x + i * plane_size);
  });
  return Status::Ok();
}

}  // namespace

Expected<size_t> PoolOutputSize(size_t in, size_t kernel, size_t stride, size_t pad_begin,
                                size_t pad_end, bool ceil_mode) {
  if (kernel == 0 || stride == 0) return Status::Error("pool kernel and stride must be positive");
  const size_t padded = in + pad_begin + pad_end;
  if (kernel > padded) {
    return Status::Error("the pool window (", kernel, ") is larger than the padded input (", padded,
                         ")");
  }
  const size_t span = padded - kernel;
  if (!ceil_mode) return span / stride + 1;
  size_t out = (span + stride - 1) / stride + 1;
  if ((out - 1) * stride >= in + pad_begin) --out;
  return out;
}

Status MaxPool2d(const Pool2dParams& p, const float* x, float* y, const Options& options) {
  return Pool2d(p, x, y, options, true);
}
Status AveragePool2d(const Pool2dParams& p, const float* x, float* y, const Options& options) {
  return Pool2d(p, x, y, options, false);
}
Status GlobalAveragePool(size_t planes, size_t plane_size, const float* x, float* y,
                         const Options& options) {
  return GlobalPool(planes, plane_size, x, y, options, false);
}
Status GlobalMaxPool(size_t planes, size_t plane_size, const float* x, float* y,
                     const Options& options) {
  return GlobalPool(planes, plane_size, x, y, options, true);
}

Status GlobalAveragePoolNchwc(size_t batch, size_t blocks, size_t hw, size_t c, size_t channels,
                              const float* x, float* y, const Options& options) {
  if (c < 1 || c > 64 || channels > blocks * c || (blocks > 0 && channels <= (blocks - 1) * c)) {
    return Status::Error("GlobalAveragePoolNchwc: ", channels, " channels in ", blocks,
                         " blocks of ", c, " (blocks of 1..64, the last one not empty)");
  }
  if (batch == 0 || blocks == 0) return Status::Ok();
  if ((hw > 0 && x == nullptr) || y == nullptr)
    return Status::Error("GlobalAveragePoolNchwc: a null pointer");
  const ukernels::F32GAvgPoolNchwcFn fn =
      SelectPoolUkernel(options.isa.value_or(ActiveIsa())).gavgpool_nchwc;
  const size_t items = batch * blocks, block_floats = hw * c;
  const size_t threads = ThreadCount(options.pool);
  size_t per_task = items;
  if (threads > 1) {
    per_task = std::max<size_t>(1, kMinTaskWork / std::max<size_t>(block_floats, 1));
    per_task = std::max(per_task, (items + 4 * threads - 1) / (4 * threads));
  }
  ParallelFor(options.pool, (items + per_task - 1) / per_task, [&](size_t t) {
    const size_t end = std::min(items, (t + 1) * per_task);
    for (size_t b = t * per_task; b < end; ++b) {
      const size_t c0 = b % blocks * c;  // the block's first channel
      float* out = y + b / blocks * channels + c0;
      if (c0 + c <= channels) {
        fn(hw, c, x + b * block_floats, out);
      } else {
        float tmp[64];
        fn(hw, c, x + b * block_floats, tmp);
        for (size_t l = 0; c0 + l < channels; ++l) out[l] = tmp[l];
      }
    }
  });
  return Status::Ok();
}

}  // namespace kiln::pool
