#include "kernels/eltwise/eltwise.h"

#include <algorithm>
#include <array>

#include "kernels/eltwise/ukernel_table.h"

namespace kiln::eltwise {
namespace {

// Below this many elements per task, splitting costs more than it saves.
constexpr size_t kMinChunk = 16 * 1024;
constexpr size_t kMaxRank = 16;

// Splits n elements into chunks of at least kMinChunk, about four per thread.
size_t ChunkSize(size_t n, ThreadPool* pool) {
  const size_t threads = ThreadCount(pool);
  if (threads == 1) return n;
  const size_t want = (n + 4 * threads - 1) / (4 * threads);
  return (std::max(want, kMinChunk) + 63) / 64 * 64;
}

// The broadcast after dropping unit dims and merging dims that both operands walk alike. The
// last dim is the run a microkernel takes; a and b strides there are 0 or 1.
struct Walk {
  size_t rank = 0;
  std::array<size_t, kMaxRank> dims{};
  std::array<size_t, kMaxRank> a_stride{};
  std::array<size_t, kMaxRank> b_stride{};
};

Walk Collapse(std::span<const int64_t> out, std::span<const int64_t> a_dims,
              std::span<const int64_t> b_dims) {
  const size_t rank = out.size();
  // Right-aligned contiguous strides, zero where the operand repeats.
  std::array<size_t, kMaxRank> sa{}, sb{};
  size_t ra = 1, rb = 1;
  for (size_t i = rank; i-- > 0;) {
    const size_t oa = rank - a_dims.size(), ob = rank - b_dims.size();
    const size_t da = i >= oa ? static_cast<size_t>(a_dims[i - oa]) : 1;
    const size_t db = i >= ob ? static_cast<size_t>(b_dims[i - ob]) : 1;
    sa[i] = da == 1 ? 0 : ra;
    sb[i] = db == 1 ? 0 : rb;
    ra *= da;
    rb *= db;
  }
  Walk w;
  for (size_t i = 0; i < rank; ++i) {
    const size_t d = static_cast<size_t>(out[i]);
    if (d == 1) continue;
    if (w.rank > 0) {
      const size_t j = w.rank - 1;
      if (w.a_stride[j] == sa[i] * d && w.b_stride[j] == sb[i] * d) {
        w.dims[j] *= d;
        w.a_stride[j] = sa[i];
        w.b_stride[j] = sb[i];
        continue;
      }
    }
    w.dims[w.rank] = d;
    w.a_stride[w.rank] = sa[i];
    w.b_stride[w.rank] = sb[i];
    ++w.rank;
  }
  if (w.rank == 0) {  // one element
    w.rank = 1;
    w.dims[0] = 1;
    w.a_stride[0] = 1;
    w.b_stride[0] = 1;
  }
  return w;
}

// Elements [begin, end) of the output in runs of the innermost dim.
void BinaryRange(const BinaryUkernel& k, const Walk& w, const float* a, const float* b, float* y,
                 size_t begin, size_t end) {
  const size_t last = w.rank - 1;
  const size_t inner = w.dims[last];
  const size_t sa = w.a_stride[last], sb = w.b_stride[last];
  size_t pos = begin;
  while (pos < end) {
    size_t row = pos / inner;
    const size_t col = pos % inner;
    const size_t len = std::min(inner - col, end - pos);
    size_t oa = col * sa, ob = col * sb;
    for (size_t d = last; d-- > 0;) {
      const size_t i = row % w.dims[d];
      row /= w.dims[d];
      oa += i * w.a_stride[d];
      ob += i * w.b_stride[d];
    }
    if (sa == sb) {
      k.vv(len, a + oa, b + ob, y + pos);
    } else if (sb == 0) {
      k.vc(len, a + oa, b + ob, y + pos);
    } else {
      k.rvc(len, b + ob, a + oa, y + pos);
    }
    pos += len;
  }
}

Status CheckDims(std::span<const int64_t> dims, const char* what, size_t* numel) {
  if (dims.size() > kMaxRank) return Status::Error(what, " has rank ", dims.size(), " > 16");
  size_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return Status::Error(what, " has a negative dim ", d);
    n *= static_cast<size_t>(d);
  }
  *numel = n;
  return Status::Ok();
}

}  // namespace

const char* BinaryOpName(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "add";
    case BinaryOp::kSub:
      return "sub";
    case BinaryOp::kMul:
      return "mul";
    case BinaryOp::kDiv:
      return "div";
    case BinaryOp::kMax:
      return "max";
    case BinaryOp::kMin:
      return "min";
  }
  return "?";
}

const char* UnaryOpName(UnaryOp op) {
  switch (op) {
    case UnaryOp::kRelu:
      return "relu";
    case UnaryOp::kClip:
      return "clip";
    case UnaryOp::kSigmoid:
      return "sigmoid";
    case UnaryOp::kTanh:
      return "tanh";
    case UnaryOp::kSilu:
      return "silu";
    case UnaryOp::kHardSwish:
      return "hardswish";
    case UnaryOp::kHardSigmoid:
      return "hardsigmoid";
    case UnaryOp::kGelu:
      return "gelu";
    case UnaryOp::kExp:
      return "exp";
    case UnaryOp::kLeakyRelu:
      return "leakyrelu";
  }
  return "?";
}

Expected<std::vector<int64_t>> BroadcastDims(std::span<const int64_t> a,
                                             std::span<const int64_t> b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    const int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (da != db && da != 1 && db != 1) {
      return Status::Error("shapes do not broadcast: dim ", i, " is ", da, " and ", db);
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Status Binary(BinaryOp op, std::span<const int64_t> a_dims, const float* a,
              std::span<const int64_t> b_dims, const float* b, float* y, const Options& options) {
  size_t na = 0, nb = 0;
  KILN_RETURN_IF_ERROR(CheckDims(a_dims, "binary input a", &na));
  KILN_RETURN_IF_ERROR(CheckDims(b_dims, "binary input b", &nb));
  auto out = BroadcastDims(a_dims, b_dims);
  if (!out.ok()) return out.status();
  size_t n = 0;
  KILN_RETURN_IF_ERROR(CheckDims(out.value(), "binary output", &n));
  if (n == 0) return Status::Ok();
  if (a == nullptr || b == nullptr || y == nullptr) {
    return Status::Error("binary ", BinaryOpName(op), ": null pointer with ", n, " elements");
  }
  const BinaryUkernel& k = SelectBinaryUkernel(op, options.isa.value_or(ActiveIsa()));
  const Walk w = Collapse(out.value(), a_dims, b_dims);
  const size_t chunk = ChunkSize(n, options.pool);
  ParallelFor(options.pool, (n + chunk - 1) / chunk, [&](size_t t) {
    BinaryRange(k, w, a, b, y, t * chunk, std::min(n, (t + 1) * chunk));
  });
  return Status::Ok();
}

Status Unary(UnaryOp op, size_t n, const float* x, float* y, const UnaryParams& params,
             const Options& options) {
  if (n == 0) return Status::Ok();
  if (x == nullptr || y == nullptr) {
    return Status::Error("unary ", UnaryOpName(op), ": null pointer with ", n, " elements");
  }
  const UnaryUkernel& k = SelectUnaryUkernel(op, options.isa.value_or(ActiveIsa()));
  const ukernels::F32UnaryParams p{params.alpha, params.beta};
  const size_t chunk = ChunkSize(n, options.pool);
  ParallelFor(options.pool, (n + chunk - 1) / chunk, [&](size_t t) {
    const size_t begin = t * chunk;
    k.fn(std::min(chunk, n - begin), x + begin, y + begin, &p);
  });
  return Status::Ok();
}

Status ChannelScaleNchwc(size_t batch, size_t blocks, size_t hw, size_t c, size_t channels,
                         bool per_image_scale, const float* x, const float* s, float* y,
                         const Options& options) {
  if (c < 1 || c > 64 || channels > blocks * c || (blocks > 0 && channels <= (blocks - 1) * c)) {
    return Status::Error("ChannelScaleNchwc: ", channels, " channels in ", blocks, " blocks of ",
                         c, " (blocks of 1..64, the last one not empty)");
  }
  if (batch == 0 || blocks == 0 || hw == 0) return Status::Ok();
  if (x == nullptr || s == nullptr || y == nullptr)
    return Status::Error("ChannelScaleNchwc: a null pointer");
  const ukernels::F32ChannelScaleNchwcFn fn =
      SelectChannelScaleUkernel(options.isa.value_or(ActiveIsa())).fn;
  const size_t block_floats = hw * c;
  ParallelFor(options.pool, batch * blocks, [&](size_t item) {
    const size_t img = item / blocks, c0 = item % blocks * c;
    // This block's scales; the padding lanes past C get 0 (their x is finite padding).
    float scale[64];
    const float* s_img = s + (per_image_scale ? img : 0) * channels;
    for (size_t l = 0; l < c; ++l) scale[l] = c0 + l < channels ? s_img[c0 + l] : 0.0f;
    fn(hw, c, x + item * block_floats, scale, y + item * block_floats);
  });
  return Status::Ok();
}

}  // namespace kiln::eltwise
