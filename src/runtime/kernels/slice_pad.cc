// Native Slice and Pad: byte movement with constant parameters, one kernel for every
// fixed-size element type. Both collapse the walk first (dims that need no index arithmetic
// are merged), so the common cases are a few large memcpys: a channel slice of an NCHW tensor
// is one, a pad of H and W is one per row.
//
// Params (written by lower/native_tensor.cc):
//   slice  ints "rank" (the input rank); int_lists "starts", "ends", "axes", "steps" of one
//          length: ONNX's values (negative and out-of-range starts/ends are clamped at run time,
//          per the spec); axes in [0, rank), distinct; steps nonzero.
//   pad    ints "rank"; int_lists "pads" (2 * rank: every axis's begin, then every axis's end,
//          negative crops); strings "mode" (constant, reflect, edge, wrap); ints "value_bits"
//          (constant mode: the fill value's bytes, little-endian in the low DTypeSize bytes).
#include <algorithm>
#include <array>
#include <cstring>

#include "kernels/ref/movement.h"
#include "runtime/kernels/families.h"
#include "runtime/kernels/kernel_util.h"

namespace kiln::runtime {
namespace {

using kernel_util::kMaxRank;

// Copies above this many bytes are split over the pool.
constexpr size_t kParallelBytes = 256 * 1024;

// Keeps the clamping and ceil arithmetic inside int64: no real dim comes near 2^61.
constexpr int64_t kLimit = int64_t{1} << 61;

Expected<DType> MovableDType(const Step& step, const Module& module) {
  const DType types[] = {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kFloat64,
                         DType::kFloat16, DType::kInt8,  DType::kUInt8, DType::kBool};
  return kernel_util::CommonDType(step, module, types);
}

Expected<size_t> RankParam(const Step& step) {
  KILN_ASSIGN_OR_RETURN(int64_t rank, step.params.Int("rank"));
  if (rank < 0 || rank > static_cast<int64_t>(kMaxRank))
    return Status::Error("rank ", rank, " is out of range");
  return static_cast<size_t>(rank);
}

// Splits `rows` rows of `row_bytes` each into tasks on the pool when the copy is big enough.
template <class Fn>
void ForRows(ThreadPool* pool, size_t rows, size_t total_bytes, Fn&& fn) {
  const size_t tasks =
      total_bytes >= kParallelBytes ? std::min(rows, 4 * ThreadCount(pool)) : size_t{1};
  const size_t per = (rows + tasks - 1) / std::max<size_t>(tasks, 1);
  ParallelFor(pool, tasks, [&](size_t t) {
    const size_t b = t * per, e = std::min(rows, b + per);
    if (b < e) fn(b, e);
  });
}

// ---------------------------------------------------------------------------------------------
// Slice.


template <class T>
void StridedRows(const std::byte* xb, std::byte* yb, size_t rank,
                 const std::array<size_t, kMaxRank>& dims,
                 const std::array<int64_t, kMaxRank>& stride, size_t row_begin, size_t row_end) {
  const T* x = reinterpret_cast<const T*>(xb);
  T* y = reinterpret_cast<T*>(yb);
  const size_t last = rank - 1, len = dims[last];
  const int64_t s = stride[last];
  for (size_t row = row_begin; row < row_end; ++row) {
    int64_t off = 0;
    size_t q = row;
    for (size_t d = last; d-- > 0;) {
      off += static_cast<int64_t>(q % dims[d]) * stride[d];
      q /= dims[d];
    }
    T* yr = y + row * len;
    const T* xr = x + off;
    if (s == 1) {
      std::memcpy(yr, xr, len * sizeof(T));
    } else {
      for (size_t i = 0; i < len; ++i) yr[i] = xr[static_cast<int64_t>(i) * s];
    }
  }
}

class SliceKernel final : public StepKernel {
 public:
  static Expected<std::unique_ptr<StepKernel>> Create(const Step& step, const Module& module) {
    KILN_RETURN_IF_ERROR(kernel_util::CheckArity(step, 1, 1));
    KILN_ASSIGN_OR_RETURN(DType t, MovableDType(step, module));
    auto k = std::unique_ptr<SliceKernel>(new SliceKernel(step, t));
    KILN_ASSIGN_OR_RETURN(k->rank_, RankParam(step));
    KILN_ASSIGN_OR_RETURN(k->starts_, step.params.IntList("starts"));
    KILN_ASSIGN_OR_RETURN(k->ends_, step.params.IntList("ends"));
    KILN_ASSIGN_OR_RETURN(k->axes_, step.params.IntList("axes"));
    KILN_ASSIGN_OR_RETURN(k->steps_, step.params.IntList("steps"));
    const size_t n = k->starts_.size();
    if (k->ends_.size() != n || k->axes_.size() != n || k->steps_.size() != n)
      return Status::Error("starts, ends, axes and steps differ in length");
    std::array<bool, kMaxRank> seen{};
    for (size_t i = 0; i < n; ++i) {
      const int64_t a = k->axes_[i];
      if (a < 0 || a >= static_cast<int64_t>(k->rank_) || seen[static_cast<size_t>(a)])
        return Status::Error("axes ", DimsToString(k->axes_), " must be distinct and in [0, ",
                             k->rank_, ")");
      seen[static_cast<size_t>(a)] = true;
      if (k->steps_[i] == 0) return Status::Error("step 0 on axis ", a);
      k->steps_[i] = std::clamp(k->steps_[i], -kLimit, kLimit);
    }
    return std::unique_ptr<StepKernel>(std::move(k));
  }

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    KILN_ASSIGN_OR_RETURN(const Dims* x, kernel_util::InputDims(inputs, 0, step_));
    KILN_RETURN_IF_ERROR(CheckRank(x->size()));
    Dims out = *x;
    for (size_t i = 0; i < axes_.size(); ++i) {
      const auto a = static_cast<size_t>(axes_[i]);
      out[a] = ref::SliceAxis(starts_[i], ends_[i], steps_[i], (*x)[a]).second;
    }
    outputs->assign(1, std::move(out));
    return Status::Ok();
  }

  Status Run(const StepArgs& args) const override {
    if (args.inputs.size() != 1 || args.outputs.size() != 1)
      return Status::Error("step '", step_.name, "': wrong number of tensors");
    const Tensor* x = args.inputs[0];
    KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(x, dtype_, step_, "input"));
    KILN_RETURN_IF_ERROR(CheckRank(x->dims().size()));
    std::array<int64_t, kMaxRank> start{}, step{}, count{};
    for (size_t a = 0; a < rank_; ++a) {
      start[a] = 0;
      step[a] = 1;
      count[a] = x->dim(a);
    }
    for (size_t i = 0; i < axes_.size(); ++i) {
      const auto a = static_cast<size_t>(axes_[i]);
      std::tie(start[a], count[a]) = ref::SliceAxis(starts_[i], ends_[i], steps_[i], x->dim(a));
      step[a] = steps_[i];
    }
    Tensor* y = args.outputs[0];
    KILN_RETURN_IF_ERROR(kernel_util::CheckOutput(
        y, dtype_, std::span<const int64_t>(count.data(), rank_), step_));
    if (y->numel() == 0) return Status::Ok();
    // Base offset, then the walk: unit dims dropped, and a dim merged into the one before it
    // when that one's stride is exactly this one's extent (both walk the input alike).
    int64_t base = 0, in_stride = 1;
    std::array<int64_t, kMaxRank> es{};
    for (size_t a = rank_; a-- > 0;) {
      base += start[a] * in_stride;
      // |step| < dim where more than one element is taken, so this cannot overflow.
      es[a] = count[a] > 1 ? step[a] * in_stride : 0;
      in_stride *= x->dim(a);
    }
    std::array<size_t, kMaxRank> dims{};
    std::array<int64_t, kMaxRank> stride{};
    size_t r = 0;
    for (size_t a = 0; a < rank_; ++a) {
      const auto c = static_cast<size_t>(count[a]);
      if (c == 1) continue;
      if (r > 0 && stride[r - 1] == es[a] * static_cast<int64_t>(c)) {
        dims[r - 1] *= c;
        stride[r - 1] = es[a];
        continue;
      }
      dims[r] = c;
      stride[r] = es[a];
      ++r;
    }
    if (r == 0) {
      dims[0] = 1;
      stride[0] = 1;
      r = 1;
    }
    const size_t esize = DTypeSize(dtype_);
    const std::byte* xb = static_cast<const std::byte*>(x->raw()) + base * static_cast<int64_t>(esize);
    std::byte* yb = static_cast<std::byte*>(y->raw());
    const size_t rows = static_cast<size_t>(y->numel()) / dims[r - 1];
    ForRows(args.pool, rows, y->nbytes(), [&](size_t b, size_t e) {
      switch (esize) {
        case 1:
          StridedRows<uint8_t>(xb, yb, r, dims, stride, b, e);
          break;
        case 2:
          StridedRows<uint16_t>(xb, yb, r, dims, stride, b, e);
          break;
        case 4:
          StridedRows<uint32_t>(xb, yb, r, dims, stride, b, e);
          break;
        default:
          StridedRows<uint64_t>(xb, yb, r, dims, stride, b, e);
          break;
      }
    });
    return Status::Ok();
  }

  std::string Describe() const override {
    return StrCat("slice axes ", DimsToString(axes_), " steps ", DimsToString(steps_));
  }

 private:
  SliceKernel(const Step& step, DType t) : step_(step), dtype_(t) {}

  Status CheckRank(size_t rank) const {
    if (rank != rank_)
      return Status::Error("step '", step_.name, "': slice of rank ", rank_, " got rank ", rank);
    return Status::Ok();
  }

  Step step_;
  DType dtype_;
  size_t rank_ = 0;
  std::vector<int64_t> starts_, ends_, axes_, steps_;
};

// ---------------------------------------------------------------------------------------------
// Pad.

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// The input index output index `o` reads on an axis of size d padded by `begin` in front;
// -1 for the fill value (constant mode). d > 0 outside constant mode (Run checks).
inline int64_t PadSource(int64_t o, int64_t d, int64_t begin, PadMode mode) {
  int64_t i = o - begin;
  if (i >= 0 && i < d) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return std::clamp<int64_t>(i, 0, d - 1);
    case PadMode::kWrap:
      return ((i % d) + d) % d;
    case PadMode::kReflect: {
      if (d == 1) return 0;
      const int64_t period = 2 * (d - 1);
      i = ((i % period) + period) % period;
      return i >= d ? period - i : i;
    }
  }
  return -1;
}

// `count` copies of the `esize`-byte element `value` at `dst`.
void Fill(std::byte* dst, size_t count, size_t esize, uint64_t value) {
  switch (esize) {
    case 1:
      std::memset(dst, static_cast<int>(value & 0xff), count);
      break;
    case 2: {
      const auto v = static_cast<uint16_t>(value);
      for (size_t i = 0; i < count; ++i) std::memcpy(dst + 2 * i, &v, 2);
      break;
    }
    case 4: {
      const auto v = static_cast<uint32_t>(value);
      if (v == 0) {
        std::memset(dst, 0, 4 * count);
        break;
      }
      for (size_t i = 0; i < count; ++i) std::memcpy(dst + 4 * i, &v, 4);
      break;
    }
    default:
      if (value == 0) {
        std::memset(dst, 0, 8 * count);
        break;
      }
      for (size_t i = 0; i < count; ++i) std::memcpy(dst + 8 * i, &value, 8);
      break;
  }
}

class PadKernel final : public StepKernel {
 public:
  static Expected<std::unique_ptr<StepKernel>> Create(const Step& step, const Module& module) {
    KILN_RETURN_IF_ERROR(kernel_util::CheckArity(step, 1, 1));
    KILN_ASSIGN_OR_RETURN(DType t, MovableDType(step, module));
    auto k = std::unique_ptr<PadKernel>(new PadKernel(step, t));
    KILN_ASSIGN_OR_RETURN(k->rank_, RankParam(step));
    KILN_ASSIGN_OR_RETURN(k->pads_, step.params.IntList("pads"));
    if (k->pads_.size() != 2 * k->rank_)
      return Status::Error("pads ", DimsToString(k->pads_), " need ", 2 * k->rank_,
                           " entries for rank ", k->rank_);
    for (int64_t p : k->pads_)
      if (p < -kLimit || p > kLimit) return Status::Error("pad ", p, " is too large");
    KILN_ASSIGN_OR_RETURN(std::string mode, step.params.String("mode"));
    if (mode == "constant") {
      k->mode_ = PadMode::kConstant;
    } else if (mode == "reflect") {
      k->mode_ = PadMode::kReflect;
    } else if (mode == "edge") {
      k->mode_ = PadMode::kEdge;
    } else if (mode == "wrap") {
      k->mode_ = PadMode::kWrap;
    } else {
      return Status::Error("unknown pad mode '", mode, "'");
    }
    k->value_ = static_cast<uint64_t>(step.params.IntOr("value_bits", 0));
    k->identity_ = std::all_of(k->pads_.begin(), k->pads_.end(), [](int64_t p) { return p == 0; });
    return std::unique_ptr<StepKernel>(std::move(k));
  }

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    KILN_ASSIGN_OR_RETURN(const Dims* x, kernel_util::InputDims(inputs, 0, step_));
    std::array<int64_t, kMaxRank> out{};
    KILN_RETURN_IF_ERROR(OutDims(*x, &out));
    outputs->assign(1, Dims(out.begin(), out.begin() + rank_));
    return Status::Ok();
  }
  // All pads zero: a copy, which may be in place (then there is nothing to do).
  std::vector<std::pair<int, int>> InPlace() const override {
    if (identity_) return {{0, 0}};
    return {};
  }

  Status Run(const StepArgs& args) const override {
    if (args.inputs.size() != 1 || args.outputs.size() != 1)
      return Status::Error("step '", step_.name, "': wrong number of tensors");
    const Tensor* x = args.inputs[0];
    KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(x, dtype_, step_, "input"));
    std::array<int64_t, kMaxRank> out{};
    KILN_RETURN_IF_ERROR(OutDims(x->dims(), &out));
    Tensor* y = args.outputs[0];
    KILN_RETURN_IF_ERROR(
        kernel_util::CheckOutput(y, dtype_, std::span<const int64_t>(out.data(), rank_), step_));
    if (y->numel() == 0) return Status::Ok();
    const size_t esize = DTypeSize(dtype_);
    const auto* xb = static_cast<const std::byte*>(x->raw());
    auto* yb = static_cast<std::byte*>(y->raw());
    // The innermost padded axis `last`: every axis after it is copied whole, so one "element"
    // there is a block of `block` bytes.
    size_t last = rank_;
    for (size_t a = 0; a < rank_; ++a)
      if (pads_[a] != 0 || pads_[a + rank_] != 0) last = a;
    if (last == rank_) {
      if (yb != xb) std::memcpy(yb, xb, x->nbytes());
      return Status::Ok();
    }
    size_t block = esize;
    for (size_t a = last + 1; a < rank_; ++a) block *= static_cast<size_t>(x->dim(a));
    std::array<int64_t, kMaxRank> in_stride{};  // in blocks
    int64_t s = 1;
    for (size_t a = last + 1; a-- > 0;) {
      in_stride[a] = s;
      s *= x->dim(a);
    }
    const int64_t d_last = x->dim(last), out_last = out[last], begin_last = pads_[last];
    // Output positions [lo, hi) of the last padded axis read input lo - begin_last onwards.
    const int64_t lo = std::clamp<int64_t>(begin_last, 0, out_last);
    const int64_t hi = std::clamp<int64_t>(begin_last + d_last, lo, out_last);
    const size_t row_bytes = static_cast<size_t>(out_last) * block;
    size_t rows = 1;
    for (size_t a = 0; a < last; ++a) rows *= static_cast<size_t>(out[a]);
    ForRows(args.pool, rows, y->nbytes(), [&](size_t rb, size_t re) {
      for (size_t row = rb; row < re; ++row) {
        std::byte* yr = yb + row * row_bytes;
        // The input row this output row reads; -1 when it is all fill.
        int64_t off = 0;
        size_t q = row;
        for (size_t a = last; a-- > 0;) {
          const int64_t o = static_cast<int64_t>(q % static_cast<size_t>(out[a]));
          q /= static_cast<size_t>(out[a]);
          const int64_t i = PadSource(o, x->dim(a), pads_[a], mode_);
          if (i < 0) {
            off = -1;
            break;
          }
          off += i * in_stride[a];
        }
        if (off < 0) {
          Fill(yr, row_bytes / esize, esize, value_);
          continue;
        }
        const std::byte* xr = xb + static_cast<size_t>(off) * block;
        if (hi > lo)
          std::memcpy(yr + static_cast<size_t>(lo) * block,
                      xr + static_cast<size_t>(lo - begin_last) * block,
                      static_cast<size_t>(hi - lo) * block);
        for (int64_t o = 0; o < out_last; ++o) {
          if (o == lo && hi > lo) o = hi;
          if (o >= out_last) break;
          std::byte* dst = yr + static_cast<size_t>(o) * block;
          const int64_t i = PadSource(o, d_last, begin_last, mode_);
          if (i < 0) {
            Fill(dst, block / esize, esize, value_);
          } else {
            std::memcpy(dst, xr + static_cast<size_t>(i) * block, block);
          }
        }
      }
    });
    return Status::Ok();
  }

  std::string Describe() const override {
    static const char* const kNames[] = {"constant", "reflect", "edge", "wrap"};
    return StrCat("pad ", kNames[static_cast<int>(mode_)], " ", DimsToString(pads_));
  }

 private:
  PadKernel(const Step& step, DType t) : step_(step), dtype_(t) {}

  Status OutDims(std::span<const int64_t> x, std::array<int64_t, kMaxRank>* out) const {
    auto fail = [&](auto... why) {
      return Status::Error("step '", step_.name, "': input ",
                           DimsToString(std::vector<int64_t>(x.begin(), x.end())), " ", why...);
    };
    if (x.size() != rank_) return fail("does not have rank ", rank_);
    double bytes = static_cast<double>(DTypeSize(dtype_));
    for (size_t a = 0; a < rank_; ++a) {
      (*out)[a] = x[a] + pads_[a] + pads_[a + rank_];
      if ((*out)[a] < 0) return fail("is cropped below nothing by pads ", DimsToString(pads_));
      if (x[a] == 0 && (*out)[a] > 0 && mode_ != PadMode::kConstant)
        return fail("has an empty axis ", a, " to pad in a non-constant mode");
      bytes *= static_cast<double>((*out)[a]);
    }
    if (bytes > static_cast<double>(int64_t{1} << 50))
      return fail("padded by ", DimsToString(pads_), " would take ", bytes, " bytes");
    return Status::Ok();
  }

  Step step_;
  DType dtype_;
  size_t rank_ = 0;
  std::vector<int64_t> pads_;
  PadMode mode_ = PadMode::kConstant;
  uint64_t value_ = 0;
  bool identity_ = false;
};

template <class K>
Expected<std::unique_ptr<StepKernel>> Make(const Step& step, const Module& module) {
  return K::Create(step, module);
}

const KernelEntry kEntries[] = {
    {"slice", Make<SliceKernel>},
    {"pad", Make<PadKernel>},
};

}  // namespace

std::span<const KernelEntry> SlicePadKernels() { return kEntries; }

}  // namespace kiln::runtime
