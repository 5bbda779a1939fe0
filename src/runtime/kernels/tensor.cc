// Native tensor-movement kernels: the reshape family (Reshape, Flatten, Squeeze, Unsqueeze: the
// bytes do not change, only the dims), Concat and Transpose. They move bytes, so one kernel
// serves every fixed-size element type.
//
// Params (written by lower/native_tensor.cc):
//   reshape    strings "mode": "reshape" (int_lists "shape" with ONNX's 0 and -1; ints
//              "allowzero"), "flatten" (ints "axis" in [0, rank]), "squeeze" (int_lists "axes",
//              sorted input axes; empty: every unit dim), "unsqueeze" (int_lists "axes", sorted
//              output axes); ints "rank" (the input rank; -1 for reshape, which takes any).
//   concat     ints "axis" (>= 0), any number of inputs of one rank.
//   transpose  int_lists "perm".
#include <algorithm>
#include <array>
#include <cstring>

#include "runtime/kernels/families.h"
#include "runtime/kernels/kernel_util.h"

namespace kiln::runtime {
namespace {

using kernel_util::kMaxRank;

// Copies above this many bytes are split over the pool.
constexpr size_t kParallelBytes = 256 * 1024;

Expected<DType> MovableDType(const Step& step, const Module& module) {
  const DType types[] = {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kFloat64,
                         DType::kFloat16, DType::kInt8,  DType::kUInt8, DType::kBool};
  return kernel_util::CommonDType(step, module, types);
}

// ---------------------------------------------------------------------------------------------
// Reshape, Flatten, Squeeze, Unsqueeze.

enum class ReshapeMode { kReshape, kFlatten, kSqueeze, kUnsqueeze };

class ReshapeKernel final : public StepKernel {
 public:
  static Expected<std::unique_ptr<StepKernel>> Create(const Step& step, const Module& module) {
    KILN_RETURN_IF_ERROR(kernel_util::CheckArity(step, 1, 1));
    KILN_ASSIGN_OR_RETURN(DType t, MovableDType(step, module));
    KILN_ASSIGN_OR_RETURN(std::string mode, step.params.String("mode"));
    auto k = std::unique_ptr<ReshapeKernel>(new ReshapeKernel(step, t));
    k->rank_ = step.params.IntOr("rank", -1);
    if (k->rank_ < -1 || k->rank_ > static_cast<int64_t>(kMaxRank))
      return Status::Error("rank ", k->rank_, " is out of range");
    if (mode == "reshape") {
      k->mode_ = ReshapeMode::kReshape;
      KILN_ASSIGN_OR_RETURN(k->list_, step.params.IntList("shape"));
      k->allowzero_ = step.params.IntOr("allowzero", 0) != 0;
      if (k->list_.size() > kMaxRank)
        return Status::Error("shape ", DimsToString(k->list_), " has more than ", kMaxRank,
                             " dims");
      int minus_one = 0;
      for (int64_t d : k->list_) {
        if (d < -1) return Status::Error("shape ", DimsToString(k->list_), " has a dim below -1");
        minus_one += d == -1 ? 1 : 0;
      }
      if (minus_one > 1) return Status::Error("shape ", DimsToString(k->list_), " has two -1s");
      return std::unique_ptr<StepKernel>(std::move(k));
    }
    if (k->rank_ < 0) return Status::Error("mode '", mode, "' needs the input rank");
    const auto rank = static_cast<size_t>(k->rank_);
    if (mode == "flatten") {
      k->mode_ = ReshapeMode::kFlatten;
      KILN_ASSIGN_OR_RETURN(k->axis_, step.params.Int("axis"));
      if (k->axis_ < 0 || k->axis_ > k->rank_)
        return Status::Error("flatten axis ", k->axis_, " is outside [0, ", rank, "]");
      return std::unique_ptr<StepKernel>(std::move(k));
    }
    if (mode != "squeeze" && mode != "unsqueeze") return Status::Error("unknown mode '", mode, "'");
    k->mode_ = mode == "squeeze" ? ReshapeMode::kSqueeze : ReshapeMode::kUnsqueeze;
    KILN_ASSIGN_OR_RETURN(k->list_, step.params.IntList("axes"));
    const size_t limit = k->mode_ == ReshapeMode::kSqueeze ? rank : rank + k->list_.size();
    if (limit > kMaxRank) return Status::Error("rank ", limit, " is out of range");
    for (size_t i = 0; i < k->list_.size(); ++i)
      if (k->list_[i] < 0 || static_cast<size_t>(k->list_[i]) >= limit ||
          (i > 0 && k->list_[i] <= k->list_[i - 1]))
        return Status::Error("axes ", DimsToString(k->list_),
                             " must be sorted, distinct and in [0, ", limit, ")");
    return std::unique_ptr<StepKernel>(std::move(k));
  }

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    KILN_ASSIGN_OR_RETURN(const Dims* x, kernel_util::InputDims(inputs, 0, step_));
    std::array<int64_t, kMaxRank> out{};
    size_t r = 0;
    KILN_RETURN_IF_ERROR(OutDims(*x, &out, &r));
    outputs->assign(1, Dims(out.begin(), out.begin() + r));
    return Status::Ok();
  }
  std::vector<std::pair<int, int>> InPlace() const override { return {{0, 0}}; }

  Status Run(const StepArgs& args) const override {
    if (args.inputs.size() != 1 || args.outputs.size() != 1)
      return Status::Error("step '", step_.name, "': wrong number of tensors");
    const Tensor* x = args.inputs[0];
    KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(x, dtype_, step_, "input"));
    std::array<int64_t, kMaxRank> out{};
    size_t r = 0;
    KILN_RETURN_IF_ERROR(OutDims(x->dims(), &out, &r));
    KILN_RETURN_IF_ERROR(kernel_util::CheckOutput(args.outputs[0], dtype_,
                                                  std::span<const int64_t>(out.data(), r), step_));
    // The planner usually gives the output the input's buffer; then there is nothing to do.
    if (args.outputs[0]->raw() != x->raw() && x->nbytes() > 0)
      std::memmove(args.outputs[0]->raw(), x->raw(), x->nbytes());
    return Status::Ok();
  }

  std::string Describe() const override {
    static const char* const kNames[] = {"reshape", "flatten", "squeeze", "unsqueeze"};
    return StrCat(kNames[static_cast<int>(mode_)], " (copy unless in place)");
  }

 private:
  ReshapeKernel(const Step& step, DType t) : step_(step), dtype_(t) {}

  Status OutDims(std::span<const int64_t> x, std::array<int64_t, kMaxRank>* out,
                 size_t* rank) const {
    auto fail = [&](auto... why) {
      return Status::Error("step '", step_.name, "': input ",
                           DimsToString(std::vector<int64_t>(x.begin(), x.end())), " ", why...);
    };
    if (rank_ >= 0 && x.size() != static_cast<size_t>(rank_))
      return fail("does not have rank ", rank_);
    int64_t numel = 1;
    for (int64_t d : x) numel *= d;  // fits: the caller checked the input's dims
    size_t r = 0;
    switch (mode_) {
      case ReshapeMode::kReshape: {
        int64_t known = 1;
        int infer_at = -1;
        for (size_t i = 0; i < list_.size(); ++i) {
          int64_t d = list_[i];
          if (d == 0 && !allowzero_) {
            if (i >= x.size())
              return fail("has no dim ", i, " for a 0 in shape ", DimsToString(list_));
            d = x[i];
          }
          if (d == -1) {
            infer_at = static_cast<int>(i);
          } else {
            if (d != 0 && known > (int64_t{1} << 62) / d)
              return fail("overflows shape ", DimsToString(list_));
            known *= d;
          }
          (*out)[r++] = d;
        }
        if (infer_at >= 0) {
          if (known == 0 || numel % known != 0)
            return fail("cannot be reshaped to ", DimsToString(list_));
          (*out)[static_cast<size_t>(infer_at)] = numel / known;
        } else if (known != numel) {
          return fail("has ", numel, " elements; shape ", DimsToString(list_), " has ", known);
        }
        break;
      }
      case ReshapeMode::kFlatten: {
        int64_t a = 1, b = 1;
        for (size_t i = 0; i < x.size(); ++i) (static_cast<int64_t>(i) < axis_ ? a : b) *= x[i];
        (*out)[r++] = a;
        (*out)[r++] = b;
        break;
      }
      case ReshapeMode::kSqueeze: {
        size_t next = 0;
        for (size_t i = 0; i < x.size(); ++i) {
          const bool listed = next < list_.size() && static_cast<size_t>(list_[next]) == i;
          if (listed) ++next;
          if (listed && x[i] != 1) return fail("has dim ", i, " of ", x[i], ", not 1, to squeeze");
          if (listed || (list_.empty() && x[i] == 1)) continue;
          (*out)[r++] = x[i];
        }
        break;
      }
      case ReshapeMode::kUnsqueeze: {
        size_t next = 0, in = 0;
        for (size_t i = 0; i < x.size() + list_.size(); ++i) {
          if (next < list_.size() && static_cast<size_t>(list_[next]) == i) {
            ++next;
            (*out)[r++] = 1;
          } else {
            (*out)[r++] = x[in++];
          }
        }
        break;
      }
    }
    *rank = r;
    return Status::Ok();
  }

  Step step_;
  DType dtype_;
  ReshapeMode mode_ = ReshapeMode::kReshape;
  int64_t rank_ = -1;
  int64_t axis_ = 0;
  bool allowzero_ = false;
  std::vector<int64_t> list_;
};

// ---------------------------------------------------------------------------------------------
// Concat.

class ConcatKernel final : public StepKernel {
 public:
  static Expected<std::unique_ptr<StepKernel>> Create(const Step& step, const Module& module) {
    if (step.inputs.empty() || step.outputs.size() != 1)
      return Status::Error("concat takes one or more inputs and one output");
    KILN_ASSIGN_OR_RETURN(DType t, MovableDType(step, module));
    KILN_ASSIGN_OR_RETURN(int64_t axis, step.params.Int("axis"));
    if (axis < 0 || axis >= static_cast<int64_t>(kMaxRank))
      return Status::Error("concat axis ", axis, " is out of range");
    return std::unique_ptr<StepKernel>(new ConcatKernel(step, t, static_cast<size_t>(axis)));
  }

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    KILN_ASSIGN_OR_RETURN(const Dims* first, kernel_util::InputDims(inputs, 0, step_));
    if (axis_ >= first->size())
      return Status::Error("step '", step_.name, "': concat axis ", axis_, " is out of range for ",
                           DimsToString(*first));
    Dims out = *first;
    for (size_t i = 1; i < inputs.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(const Dims* d, kernel_util::InputDims(inputs, i, step_));
      KILN_RETURN_IF_ERROR(Fits(*first, *d, i));
      out[axis_] += (*d)[axis_];
    }
    outputs->assign(1, std::move(out));
    return Status::Ok();
  }

  Status Run(const StepArgs& args) const override {
    if (args.inputs.size() != step_.inputs.size() || args.outputs.size() != 1)
      return Status::Error("step '", step_.name, "': wrong number of tensors");
    for (const Tensor* t : args.inputs)
      KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(t, dtype_, step_, "an input"));
    const Tensor& first = *args.inputs[0];
    if (axis_ >= first.dims().size())
      return Status::Error("step '", step_.name, "': axis ", axis_, " out of range");
    std::array<int64_t, kMaxRank> out{};
    std::copy(first.dims().begin(), first.dims().end(), out.begin());
    out[axis_] = 0;
    for (size_t i = 0; i < args.inputs.size(); ++i) {
      KILN_RETURN_IF_ERROR(Fits(first.dims(), args.inputs[i]->dims(), i));
      out[axis_] += args.inputs[i]->dim(axis_);
    }
    Tensor* y = args.outputs[0];
    KILN_RETURN_IF_ERROR(kernel_util::CheckOutput(
        y, dtype_, std::span<const int64_t>(out.data(), first.dims().size()), step_));
    size_t outer = 1;
    for (size_t i = 0; i < axis_; ++i) outer *= static_cast<size_t>(first.dim(i));
    const size_t div = std::max<size_t>(outer, 1);
    const size_t out_row = y->nbytes() / div;
    const size_t k = args.inputs.size();
    if (y->nbytes() == 0) return Status::Ok();
    if (k == 1 && y->raw() == args.inputs[0]->raw()) return Status::Ok();  // in place
    // Each input's bytes per output row and where they start in it, found once per run: a
    // concat along an inner axis copies many short rows (ShuffleNet's channel shuffle, 2 x 232
    // rows of 196 bytes), where per-row arithmetic shows.
    constexpr size_t kListed = 64;
    std::array<size_t, kListed> row{}, at{};
    const bool listed = k <= kListed;
    if (listed)
      for (size_t i = 0, a = 0; i < k; ++i) {
        row[i] = args.inputs[i]->nbytes() / div;
        at[i] = a;
        a += row[i];
      }
    auto* yb = static_cast<std::byte*>(y->raw());
    auto copy = [&](size_t o, size_t i) {
      size_t r = 0, a = 0;
      if (listed) {
        r = row[i];
        a = at[i];
      } else {
        r = args.inputs[i]->nbytes() / div;
        for (size_t j = 0; j < i; ++j) a += args.inputs[j]->nbytes() / div;
      }
      std::byte* dst = yb + o * out_row + a;
      const std::byte* src = static_cast<const std::byte*>(args.inputs[i]->raw()) + o * r;
      // The planner placed this input in its range of the output (InputRangesInOutput).
      if (r > 0 && src != dst) std::memcpy(dst, src, r);
    };
    // Inputs the planner placed in their ranges of the output (DenseNet's, every one) need no
    // copy; when none needs one, the pool is not woken at all.
    bool any = false;
    for (size_t i = 0; i < k && !any; ++i) {
      const size_t a = listed ? at[i] : 0;
      any = !listed || static_cast<const void*>(yb + a) != args.inputs[i]->raw();
    }
    if (!any) return Status::Ok();
    const size_t threads = ThreadCount(args.pool);
    if (y->nbytes() < kParallelBytes || threads == 1) {
      for (size_t o = 0; o < outer; ++o)
        for (size_t i = 0; i < k; ++i) copy(o, i);
    } else if (outer >= 4 * threads) {
      // Many output rows: whole rows per task.
      const size_t tasks = 4 * threads, per = (outer + tasks - 1) / tasks;
      ParallelFor(args.pool, tasks, [&](size_t t) {
        for (size_t o = t * per; o < std::min(outer, (t + 1) * per); ++o)
          for (size_t i = 0; i < k; ++i) copy(o, i);
      });
    } else {
      // Few rows (DenseNet: one): one piece per task.
      ParallelFor(args.pool, outer * k, [&](size_t t) { copy(t / k, t % k); });
    }
    return Status::Ok();
  }

  // A concat of one input (DenseNet's first dense layer) is a copy, so it may be in place.
  std::vector<std::pair<int, int>> InPlace() const override {
    if (step_.inputs.size() == 1) return {{0, 0}};
    return {};
  }

  // One image (nothing outside the axis but size-1 dims): each input is one contiguous range.
  std::vector<size_t> InputRangesInOutput(std::span<const Dims* const> inputs) const override {
    std::vector<size_t> ranges;
    size_t at = 0;
    for (const Dims* d : inputs) {
      if (!d || d->size() <= axis_) return {};
      for (size_t j = 0; j < axis_; ++j)
        if ((*d)[j] != 1) return {};
      ranges.push_back(at);
      size_t bytes = DTypeSize(dtype_);
      for (int64_t v : *d) bytes *= static_cast<size_t>(v);
      at += bytes;
    }
    return ranges;
  }

  std::string Describe() const override {
    return StrCat("concat axis ", axis_, " of ", step_.inputs.size());
  }

 private:
  ConcatKernel(const Step& step, DType t, size_t axis) : step_(step), dtype_(t), axis_(axis) {}

  Status Fits(std::span<const int64_t> first, std::span<const int64_t> d, size_t i) const {
    bool ok = d.size() == first.size();
    for (size_t j = 0; ok && j < d.size(); ++j) ok = j == axis_ || d[j] == first[j];
    if (!ok)
      return Status::Error(
          "step '", step_.name, "': concat input ", i, " ",
          DimsToString(std::vector<int64_t>(d.begin(), d.end())), " does not match input 0 ",
          DimsToString(std::vector<int64_t>(first.begin(), first.end())), " outside axis ", axis_);
    return Status::Ok();
  }

  Step step_;
  DType dtype_;
  size_t axis_;
};

// ---------------------------------------------------------------------------------------------
// Transpose.

template <class T>
void CopyRows(const T* x, T* y, size_t rank, const std::array<size_t, kMaxRank>& dims,
              const std::array<size_t, kMaxRank>& stride, size_t row_begin, size_t row_end) {
  const size_t last = rank - 1, len = dims[last], s = stride[last];
  for (size_t row = row_begin; row < row_end; ++row) {
    size_t off = 0, q = row;
    for (size_t d = last; d-- > 0;) {
      off += (q % dims[d]) * stride[d];
      q /= dims[d];
    }
    T* yr = y + row * len;
    const T* xr = x + off;
    if (s == 1) {
      std::memcpy(yr, xr, len * sizeof(T));
    } else {
      for (size_t i = 0; i < len; ++i) yr[i] = xr[i * s];
    }
  }
}

class TransposeKernel final : public StepKernel {
 public:
  static Expected<std::unique_ptr<StepKernel>> Create(const Step& step, const Module& module) {
    KILN_RETURN_IF_ERROR(kernel_util::CheckArity(step, 1, 1));
    KILN_ASSIGN_OR_RETURN(DType t, MovableDType(step, module));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> perm, step.params.IntList("perm"));
    if (perm.size() > kMaxRank)
      return Status::Error("perm ", DimsToString(perm), " has more than ", kMaxRank, " entries");
    std::array<bool, kMaxRank> seen{};
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[static_cast<size_t>(p)])
        return Status::Error("perm ", DimsToString(perm), " is not a permutation");
      seen[static_cast<size_t>(p)] = true;
    }
    return std::unique_ptr<StepKernel>(new TransposeKernel(step, t, std::move(perm)));
  }

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    KILN_ASSIGN_OR_RETURN(const Dims* x, kernel_util::InputDims(inputs, 0, step_));
    if (x->size() != perm_.size())
      return Status::Error("step '", step_.name, "': perm ", DimsToString(perm_), " does not fit ",
                           DimsToString(*x));
    Dims out(x->size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = (*x)[static_cast<size_t>(perm_[i])];
    outputs->assign(1, std::move(out));
    return Status::Ok();
  }

  Status Run(const StepArgs& args) const override {
    if (args.inputs.size() != 1 || args.outputs.size() != 1)
      return Status::Error("step '", step_.name, "': wrong number of tensors");
    const Tensor* x = args.inputs[0];
    KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(x, dtype_, step_, "input"));
    const size_t rank = perm_.size();
    if (x->dims().size() != rank)
      return Status::Error("step '", step_.name, "': input ", DescribeTensor(*x),
                           " does not fit perm ", DimsToString(perm_));
    std::array<int64_t, kMaxRank> out{};
    std::array<size_t, kMaxRank> in_stride{};
    size_t s = 1;
    for (size_t i = rank; i-- > 0;) {
      in_stride[i] = s;
      s *= static_cast<size_t>(x->dim(i));
    }
    for (size_t i = 0; i < rank; ++i) out[i] = x->dim(static_cast<size_t>(perm_[i]));
    Tensor* y = args.outputs[0];
    KILN_RETURN_IF_ERROR(
        kernel_util::CheckOutput(y, dtype_, std::span<const int64_t>(out.data(), rank), step_));
    if (y->numel() == 0) return Status::Ok();
    // Drop unit dims and merge output dims the input also walks contiguously.
    std::array<size_t, kMaxRank> dims{}, stride{};
    size_t r = 0;
    for (size_t i = 0; i < rank; ++i) {
      const auto d = static_cast<size_t>(out[i]);
      const size_t st = in_stride[static_cast<size_t>(perm_[i])];
      if (d == 1) continue;
      if (r > 0 && stride[r - 1] == st * d) {
        dims[r - 1] *= d;
        stride[r - 1] = st;
        continue;
      }
      dims[r] = d;
      stride[r] = st;
      ++r;
    }
    if (r == 0) {
      dims[0] = 1;
      stride[0] = 1;
      r = 1;
    }
    const size_t rows = static_cast<size_t>(y->numel()) / dims[r - 1];
    const size_t tasks =
        y->nbytes() >= kParallelBytes ? std::min(rows, 4 * ThreadCount(args.pool)) : 1;
    const size_t per = (rows + tasks - 1) / tasks;
    ParallelFor(args.pool, tasks, [&](size_t t) {
      const size_t b = t * per, e = std::min(rows, b + per);
      switch (DTypeSize(dtype_)) {
        case 1:
          CopyRows(x->data<uint8_t>(), y->data<uint8_t>(), r, dims, stride, b, e);
          break;
        case 2:
          CopyRows(x->data<uint16_t>(), y->data<uint16_t>(), r, dims, stride, b, e);
          break;
        case 4:
          CopyRows(x->data<uint32_t>(), y->data<uint32_t>(), r, dims, stride, b, e);
          break;
        default:
          CopyRows(x->data<uint64_t>(), y->data<uint64_t>(), r, dims, stride, b, e);
          break;
      }
    });
    return Status::Ok();
  }

  std::string Describe() const override { return StrCat("transpose ", DimsToString(perm_)); }

 private:
  TransposeKernel(const Step& step, DType t, std::vector<int64_t> perm)
      : step_(step), dtype_(t), perm_(std::move(perm)) {}
  Step step_;
  DType dtype_;
  std::vector<int64_t> perm_;
};

template <class K>
Expected<std::unique_ptr<StepKernel>> Make(const Step& step, const Module& module) {
  return K::Create(step, module);
}

const KernelEntry kEntries[] = {
    {"reshape", Make<ReshapeKernel>},
    {"concat", Make<ConcatKernel>},
    {"transpose", Make<TransposeKernel>},
};

}  // namespace

std::span<const KernelEntry> TensorKernels() { return kEntries; }

}  // namespace kiln::runtime
