// Native elementwise kernels: unary chains (one op or a fused run of them), binary arithmetic
// with numpy broadcasting and softmax over any axis (batch normalization: batchnorm.cc).
//
// Params (written by lower/native_eltwise.cc):
//   eltwise_unary   strings "ops" ("silu,mulscalar", in order of application); floats "p0",
//                   "p1", ... the ops' parameters concatenated, a fixed count per op (kUnaryDefs).
//   eltwise_binary  strings "op" (add, sub, mul, div).
//   softmax         ints "axis" (>= 0, < rank), "log" (0/1).
#include "kernels/eltwise/eltwise.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "kernels/eltwise/ukernel_table.h"
#include "kernels/softmax/softmax.h"
#include "runtime/kernels/families.h"
#include "runtime/kernels/kernel_util.h"

namespace kiln::runtime {
namespace {

using kernel_util::kMaxRank;

// Below this many elements per task, splitting costs more than it saves.
constexpr size_t kChunk = 16 * 1024;

size_t Tasks(size_t n, const ThreadPool* pool) {
  if (ThreadCount(pool) == 1 || n <= kChunk) return 1;
  return (n + kChunk - 1) / kChunk;
}

// ---------------------------------------------------------------------------------------------
// Unary chains.

enum class Plain { kNone, kLog, kNeg, kAbs, kSqrt, kErf, kGeluTanh, kMulScalar, kAddScalar };

struct UnaryDef {
  const char* name;
  int params;
  std::optional<eltwise::UnaryOp> fast;  // the optimized microkernel, when one exists
  Plain plain = Plain::kNone;
};

const UnaryDef kUnaryDefs[] = {
    {"relu", 0, eltwise::UnaryOp::kRelu},
    {"sigmoid", 0, eltwise::UnaryOp::kSigmoid},
    {"tanh", 0, eltwise::UnaryOp::kTanh},
    {"exp", 0, eltwise::UnaryOp::kExp},
    {"silu", 0, eltwise::UnaryOp::kSilu},
    {"hardswish", 0, eltwise::UnaryOp::kHardSwish},
    {"gelu", 0, eltwise::UnaryOp::kGelu},
    {"leakyrelu", 1, eltwise::UnaryOp::kLeakyRelu},
    {"clip", 2, eltwise::UnaryOp::kClip},
    {"hardsigmoid", 2, eltwise::UnaryOp::kHardSigmoid},
    {"log", 0, std::nullopt, Plain::kLog},
    {"neg", 0, std::nullopt, Plain::kNeg},
    {"abs", 0, std::nullopt, Plain::kAbs},
    {"sqrt", 0, std::nullopt, Plain::kSqrt},
    {"erf", 0, std::nullopt, Plain::kErf},
    {"gelu_tanh", 0, std::nullopt, Plain::kGeluTanh},
    {"mulscalar", 1, std::nullopt, Plain::kMulScalar},
    {"addscalar", 1, std::nullopt, Plain::kAddScalar},
};

struct UnaryStage {
  const UnaryDef* def = nullptr;
  ukernels::F32VUnaryParamFn fn = nullptr;
  ukernels::F32UnaryParams p{0, 0};
};

void RunPlain(Plain op, size_t n, const float* x, float* y, float a) {
  switch (op) {
    case Plain::kLog:
      for (size_t i = 0; i < n; ++i) y[i] = std::log(x[i]);
      break;
    case Plain::kNeg:
      for (size_t i = 0; i < n; ++i) y[i] = -x[i];
      break;
    case Plain::kAbs:
      for (size_t i = 0; i < n; ++i) y[i] = std::fabs(x[i]);
      break;
    case Plain::kSqrt:
      for (size_t i = 0; i < n; ++i) y[i] = std::sqrt(x[i]);
      break;
    case Plain::kErf:
      for (size_t i = 0; i < n; ++i) y[i] = std::erf(x[i]);
      break;
    case Plain::kGeluTanh:
      for (size_t i = 0; i < n; ++i) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
      }
      break;
    case Plain::kMulScalar:
      for (size_t i = 0; i < n; ++i) y[i] = x[i] * a;
      break;
    case Plain::kAddScalar:
      for (size_t i = 0; i < n; ++i) y[i] = x[i] + a;
      break;
    case Plain::kNone:
      break;
  }
}

class UnaryKernel final : public StepKernel {
 public:
  static Expected<std::unique_ptr<StepKernel>> Create(const Step& step, const Module& module) {
    KILN_RETURN_IF_ERROR(kernel_util::CheckArity(step, 1, 1));
    const DType f32[] = {DType::kFloat32};
    KILN_RETURN_IF_ERROR(kernel_util::CommonDType(step, module, f32).status());
    KILN_ASSIGN_OR_RETURN(std::string ops, step.params.String("ops"));
    auto k = std::unique_ptr<UnaryKernel>(new UnaryKernel(step));
    size_t next_param = 0;
    size_t begin = 0;
    while (begin <= ops.size()) {
      size_t end = ops.find(',', begin);
      if (end == std::string::npos) end = ops.size();
      const std::string name = ops.substr(begin, end - begin);
      const UnaryDef* def = nullptr;
      for (const UnaryDef& d : kUnaryDefs)
        if (name == d.name) def = &d;
      if (def == nullptr) return Status::Error("unknown unary op '", name, "' in ops '", ops, "'");
      if (k->stages_.size() >= 32) return Status::Error("more than 32 ops in '", ops, "'");
      UnaryStage s;
      s.def = def;
      float p[2] = {0, 0};
      for (int i = 0; i < def->params; ++i) {
        KILN_ASSIGN_OR_RETURN(double v, step.params.Float(StrCat("p", next_param++)));
        p[i] = static_cast<float>(v);
      }
      s.p = {p[0], p[1]};
      if (def->fast) s.fn = eltwise::SelectUnaryUkernel(*def->fast, ActiveIsa()).fn;
      k->stages_.push_back(s);
      begin = end + 1;
    }
    if (step.params.floats.count(StrCat("p", next_param)) != 0)
      return Status::Error("ops '", ops, "' take ", next_param, " params; the step has more");
    return std::unique_ptr<StepKernel>(std::move(k));
  }

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    KILN_ASSIGN_OR_RETURN(const Dims* x, kernel_util::InputDims(inputs, 0, step_));
    outputs->assign(1, *x);
    return Status::Ok();
  }
  std::vector<std::pair<int, int>> InPlace() const override { return {{0, 0}}; }

  Status Run(const StepArgs& args) const override {
    if (args.inputs.size() != 1 || args.outputs.size() != 1)
      return Status::Error("step '", step_.name, "': wrong number of tensors");
    const Tensor* x = args.inputs[0];
    KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(x, DType::kFloat32, step_, "input"));
    KILN_RETURN_IF_ERROR(
        kernel_util::CheckOutput(args.outputs[0], DType::kFloat32, x->dims(), step_));
    const size_t n = static_cast<size_t>(x->numel());
    const float* xp = x->data<float>();
    float* yp = args.outputs[0]->data<float>();
    // Chunks keep a fused chain in cache: every op runs over one chunk before the next.
    const size_t tasks = Tasks(n, args.pool);
    const size_t chunk = (n + tasks - 1) / std::max<size_t>(tasks, 1);
    ParallelFor(args.pool, tasks, [&](size_t t) {
      const size_t begin = t * chunk, len = std::min(chunk, n - std::min(n, begin));
      const float* src = xp + begin;
      float* dst = yp + begin;
      for (const UnaryStage& s : stages_) {
        if (s.fn != nullptr) {
          s.fn(len, src, dst, &s.p);
        } else {
          RunPlain(s.def->plain, len, src, dst, s.p.alpha);
        }
        src = dst;
      }
    });
    return Status::Ok();
  }

  std::string Describe() const override {
    std::string d = stages_.size() > 1 ? "unary fused" : "unary";
    for (const UnaryStage& s : stages_) {
      d += StrCat(" ", s.def->name);
      if (s.def->fast)
        d += StrCat("[", eltwise::SelectUnaryUkernel(*s.def->fast, ActiveIsa()).name, "]");
    }
    return d;
  }

 private:
  explicit UnaryKernel(const Step& step) : step_(step) {}
  Step step_;
  std::vector<UnaryStage> stages_;
};

// ---------------------------------------------------------------------------------------------
// Binary with broadcasting.

// The broadcast after dropping unit dims and merging dims that both operands walk alike; the
// last dim is the run one microkernel call takes (a and b strides there are 0 or 1).
struct Walk {
  size_t rank = 0;
  std::array<size_t, kMaxRank> dims{}, a_stride{}, b_stride{};
};

Walk Collapse(std::span<const int64_t> out, std::span<const int64_t> a_dims,
              std::span<const int64_t> b_dims) {
  const size_t rank = out.size();
  std::array<size_t, kMaxRank> sa{}, sb{};
  size_t ra = 1, rb = 1;
  for (size_t i = rank; i-- > 0;) {
    const size_t oa = rank - a_dims.size(), ob = rank - b_dims.size();
    const auto da = static_cast<size_t>(i >= oa ? a_dims[i - oa] : 1);
    const auto db = static_cast<size_t>(i >= ob ? b_dims[i - ob] : 1);
    sa[i] = da == 1 ? 0 : ra;
    sb[i] = db == 1 ? 0 : rb;
    ra *= da;
    rb *= db;
  }
  Walk w;
  for (size_t i = 0; i < rank; ++i) {
    const auto d = static_cast<size_t>(out[i]);
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
  if (w.rank == 0) {
    w.rank = 1;
    w.dims[0] = 1;
    w.a_stride[0] = w.b_stride[0] = 1;
  }
  return w;
}

// Broadcast dims into `out` (no allocation); false when the shapes do not broadcast.
bool Broadcast(std::span<const int64_t> a, std::span<const int64_t> b,
               std::array<int64_t, kMaxRank>* out, size_t* rank) {
  *rank = std::max(a.size(), b.size());
  if (*rank > kMaxRank) return false;
  for (size_t i = 0; i < *rank; ++i) {
    const int64_t da = i + a.size() >= *rank ? a[i + a.size() - *rank] : 1;
    const int64_t db = i + b.size() >= *rank ? b[i + b.size() - *rank] : 1;
    if (da != db && da != 1 && db != 1) return false;
    (*out)[i] = da == 1 ? db : da;
  }
  return true;
}

class BinaryKernel final : public StepKernel {
 public:
  static Expected<std::unique_ptr<StepKernel>> Create(const Step& step, const Module& module) {
    KILN_RETURN_IF_ERROR(kernel_util::CheckArity(step, 2, 1));
    const DType f32[] = {DType::kFloat32};
    KILN_RETURN_IF_ERROR(kernel_util::CommonDType(step, module, f32).status());
    KILN_ASSIGN_OR_RETURN(std::string name, step.params.String("op"));
    std::optional<eltwise::BinaryOp> op;
    for (auto o : {eltwise::BinaryOp::kAdd, eltwise::BinaryOp::kSub, eltwise::BinaryOp::kMul,
                   eltwise::BinaryOp::kDiv})
      if (name == eltwise::BinaryOpName(o)) op = o;
    if (!op) return Status::Error("unknown binary op '", name, "'");
    auto k = std::unique_ptr<BinaryKernel>(new BinaryKernel(step, *op));
    k->ukernel_ = &eltwise::SelectBinaryUkernel(*op, ActiveIsa());
    // In place where an input's declared shape is the output's: then their sizes always agree.
    const ValueInfo& y = module.values[step.outputs[0]];
    for (int i = 0; i < 2; ++i) {
      const ValueInfo& v = module.values[step.inputs[i]];
      if (v.rank_known && y.rank_known && v.dims == y.dims && v.dim_params == y.dim_params)
        k->in_place_.push_back({0, i});
    }
    k->pattern_ = Pattern(module.values[step.inputs[0]], module.values[step.inputs[1]], y);
    return std::unique_ptr<StepKernel>(std::move(k));
  }

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    KILN_ASSIGN_OR_RETURN(const Dims* a, kernel_util::InputDims(inputs, 0, step_));
    KILN_ASSIGN_OR_RETURN(const Dims* b, kernel_util::InputDims(inputs, 1, step_));
    std::array<int64_t, kMaxRank> out{};
    size_t rank = 0;
    if (!Broadcast(*a, *b, &out, &rank))
      return Status::Error("step '", step_.name, "': shapes ", DimsToString(*a), " and ",
                           DimsToString(*b), " do not broadcast");
    outputs->assign(1, Dims(out.begin(), out.begin() + rank));
    return Status::Ok();
  }
  std::vector<std::pair<int, int>> InPlace() const override { return in_place_; }

  Status Run(const StepArgs& args) const override {
    if (args.inputs.size() != 2 || args.outputs.size() != 1)
      return Status::Error("step '", step_.name, "': wrong number of tensors");
    const Tensor* a = args.inputs[0];
    const Tensor* b = args.inputs[1];
    KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(a, DType::kFloat32, step_, "input A"));
    KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(b, DType::kFloat32, step_, "input B"));
    std::array<int64_t, kMaxRank> out{};
    size_t rank = 0;
    if (!Broadcast(a->dims(), b->dims(), &out, &rank))
      return Status::Error("step '", step_.name, "': ", DescribeTensor(*a), " and ",
                           DescribeTensor(*b), " do not broadcast");
    const std::span<const int64_t> out_dims(out.data(), rank);
    KILN_RETURN_IF_ERROR(
        kernel_util::CheckOutput(args.outputs[0], DType::kFloat32, out_dims, step_));
    const auto n = static_cast<size_t>(args.outputs[0]->numel());
    if (n == 0) return Status::Ok();
    const Walk w = Collapse(out_dims, a->dims(), b->dims());
    const float* ap = a->data<float>();
    const float* bp = b->data<float>();
    float* yp = args.outputs[0]->data<float>();
    const size_t tasks = Tasks(n, args.pool);
    const size_t chunk = (n + tasks - 1) / tasks;
    ParallelFor(args.pool, tasks, [&](size_t t) {
      RunRange(w, ap, bp, yp, t * chunk, std::min(n, (t + 1) * chunk));
    });
    return Status::Ok();
  }

  std::string Describe() const override {
    return StrCat("binary ", eltwise::BinaryOpName(op_), " ", pattern_, " ", ukernel_->name);
  }

 private:
  BinaryKernel(const Step& step, eltwise::BinaryOp op) : step_(step), op_(op) {}

  // The fast path the declared shapes select (the walk finds it again at run time).
  static std::string Pattern(const ValueInfo& a, const ValueInfo& b, const ValueInfo& y) {
    auto same = [&](const ValueInfo& v) {
      return v.rank_known && y.rank_known && v.dims == y.dims && v.dim_params == y.dim_params;
    };
    auto single = [](const ValueInfo& v) {
      if (!v.rank_known) return false;
      for (int64_t d : v.dims)
        if (d != 1) return false;
      return true;
    };
    auto per_channel = [&](const ValueInfo& v) {
      // [C,1,1] or [1,C,1,1] against [N,C,H,W].
      if (!v.rank_known || !y.rank_known || y.dims.size() != 4) return false;
      if (v.dims.size() == 3) return v.dims[1] == 1 && v.dims[2] == 1 && v.dims[0] == y.dims[1];
      if (v.dims.size() == 4)
        return v.dims[0] == 1 && v.dims[2] == 1 && v.dims[3] == 1 && v.dims[1] == y.dims[1];
      return false;
    };
    if (same(a) && same(b)) return "same-shape";
    if (single(a) || single(b)) return "scalar";
    if (per_channel(a) || per_channel(b)) return "per-channel";
    return "broadcast";
  }

  // Output elements [begin, end) in runs of the innermost walk dim.
  void RunRange(const Walk& w, const float* a, const float* b, float* y, size_t begin,
                size_t end) const {
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
        ukernel_->vv(len, a + oa, b + ob, y + pos);
      } else if (sb == 0) {
        ukernel_->vc(len, a + oa, b + ob, y + pos);
      } else {
        ukernel_->rvc(len, b + ob, a + oa, y + pos);
      }
      pos += len;
    }
  }

  Step step_;
  eltwise::BinaryOp op_;
  const eltwise::BinaryUkernel* ukernel_ = nullptr;
  std::vector<std::pair<int, int>> in_place_;
  std::string pattern_;
};

// ---------------------------------------------------------------------------------------------
// Softmax over one axis.

class SoftmaxKernel final : public StepKernel {
 public:
  static Expected<std::unique_ptr<StepKernel>> Create(const Step& step, const Module& module) {
    KILN_RETURN_IF_ERROR(kernel_util::CheckArity(step, 1, 1));
    const DType f32[] = {DType::kFloat32};
    KILN_RETURN_IF_ERROR(kernel_util::CommonDType(step, module, f32).status());
    KILN_ASSIGN_OR_RETURN(int64_t axis, step.params.Int("axis"));
    if (axis < 0 || axis >= static_cast<int64_t>(kMaxRank))
      return Status::Error("softmax axis ", axis, " is out of range");
    return std::unique_ptr<StepKernel>(
        new SoftmaxKernel(step, static_cast<size_t>(axis), step.params.IntOr("log", 0) != 0));
  }

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    KILN_ASSIGN_OR_RETURN(const Dims* x, kernel_util::InputDims(inputs, 0, step_));
    if (axis_ >= x->size())
      return Status::Error("step '", step_.name, "': softmax axis ", axis_, " is out of range for ",
                           DimsToString(*x));
    outputs->assign(1, *x);
    return Status::Ok();
  }
  std::vector<std::pair<int, int>> InPlace() const override { return {{0, 0}}; }

  Status Run(const StepArgs& args) const override {
    if (args.inputs.size() != 1 || args.outputs.size() != 1)
      return Status::Error("step '", step_.name, "': wrong number of tensors");
    const Tensor* x = args.inputs[0];
    KILN_RETURN_IF_ERROR(kernel_util::CheckTensor(x, DType::kFloat32, step_, "input"));
    if (axis_ >= x->dims().size())
      return Status::Error("step '", step_.name, "': axis ", axis_, " out of range");
    KILN_RETURN_IF_ERROR(
        kernel_util::CheckOutput(args.outputs[0], DType::kFloat32, x->dims(), step_));
    size_t outer = 1, inner = 1;
    const auto cols = static_cast<size_t>(x->dim(axis_));
    for (size_t i = 0; i < axis_; ++i) outer *= static_cast<size_t>(x->dim(i));
    for (size_t i = axis_ + 1; i < x->dims().size(); ++i) inner *= static_cast<size_t>(x->dim(i));
    const float* xp = x->data<float>();
    float* yp = args.outputs[0]->data<float>();
    if (outer * cols * inner == 0) return Status::Ok();
    if (inner == 1) {
      softmax::Options o;
      o.log = log_;
      o.pool = args.pool;
      return softmax::Softmax(outer, cols, xp, yp, o);
    }
    // Strided axis: one column of `cols` values, `inner` apart, per (outer, inner) pair.
    ParallelFor(args.pool, outer, [&](size_t o) {
      for (size_t i = 0; i < inner; ++i) {
        const float* xs = xp + o * cols * inner + i;
        float* ys = yp + o * cols * inner + i;
        float m = -INFINITY;
        for (size_t c = 0; c < cols; ++c) m = std::max(m, xs[c * inner]);
        float sum = 0;
        if (log_) {
          for (size_t c = 0; c < cols; ++c) sum += std::exp(xs[c * inner] - m);
          const float shift = m + std::log(sum);
          for (size_t c = 0; c < cols; ++c) ys[c * inner] = xs[c * inner] - shift;
        } else {
          // exp once per element: stored, then scaled (y may be x: each x is read first).
          for (size_t c = 0; c < cols; ++c) {
            const float e = std::exp(xs[c * inner] - m);
            ys[c * inner] = e;
            sum += e;
          }
          const float inv = 1.0f / sum;
          for (size_t c = 0; c < cols; ++c) ys[c * inner] *= inv;
        }
      }
    });
    return Status::Ok();
  }

  std::string Describe() const override {
    return StrCat(log_ ? "logsoftmax" : "softmax", " axis ", axis_);
  }

 private:
  SoftmaxKernel(const Step& step, size_t axis, bool log) : step_(step), axis_(axis), log_(log) {}
  Step step_;
  size_t axis_;
  bool log_;
};

template <class K>
Expected<std::unique_ptr<StepKernel>> Make(const Step& step, const Module& module) {
  return K::Create(step, module);
}

const KernelEntry kEntries[] = {
    {"eltwise_unary", Make<UnaryKernel>},
    {"eltwise_binary", Make<BinaryKernel>},
    {"softmax", Make<SoftmaxKernel>},
};

}  // namespace

std::span<const KernelEntry> EltwiseKernels() { return kEntries; }

}  // namespace kiln::runtime
