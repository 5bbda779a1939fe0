#include "kernels/ref/reduce.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/ref/broadcast.h"

namespace kiln::ref {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// double -> T without undefined behaviour: integers saturate and NaN becomes 0.
template <class T>
T FromDouble(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return T{0};
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

double Identity(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kProd: return 1.0;
    case ReduceKind::kMax: return -kInf;
    case ReduceKind::kMin: return kInf;
    default: return 0.0;
  }
}

// The output's strides as seen from the input: 0 along reduced axes, so that every input element
// finds the accumulator of its output element.
std::vector<int64_t> AccumulatorStrides(const std::vector<int64_t>& in_dims,
                                        const std::vector<bool>& reduced) {
  std::vector<int64_t> kept(in_dims);
  for (size_t i = 0; i < kept.size(); ++i)
    if (reduced[i]) kept[i] = 1;
  std::vector<int64_t> s = Strides(kept);
  for (size_t i = 0; i < s.size(); ++i)
    if (reduced[i]) s[i] = 0;
  return s;
}

// Every kind, through double: floats, and the integer kinds that are not exact anyway.
template <class T>
void ReduceViaDouble(const Tensor& in, ReduceKind kind, const std::vector<int64_t>& acc_strides,
                     int64_t count, Tensor* out) {
  const T* x = in.data<T>();
  const int64_t n_out = out->numel();
  std::vector<double> acc(n_out, Identity(kind));
  std::vector<double> shift;  // the max per output, so that exp() cannot overflow
  if (kind == ReduceKind::kLogSumExp) {
    shift.assign(n_out, -kInf);
    for (BroadcastIter it(in.dims(), {acc_strides}); !it.done(); it.next()) {
      double v = static_cast<double>(x[it.index()]);
      double& m = shift[it.offset(0)];
      if (v > m || std::isnan(v)) m = v;
    }
    for (double& a : acc) a = 0.0;
  }
  for (BroadcastIter it(in.dims(), {acc_strides}); !it.done(); it.next()) {
    const double v = static_cast<double>(x[it.index()]);
    double& a = acc[it.offset(0)];
    switch (kind) {
      case ReduceKind::kSum:
      case ReduceKind::kMean:
      case ReduceKind::kLogSum: a += v; break;
      case ReduceKind::kMax:
        if (v > a || std::isnan(v)) a = v;
        break;
      case ReduceKind::kMin:
        if (v < a || std::isnan(v)) a = v;
        break;
      case ReduceKind::kProd: a *= v; break;
      case ReduceKind::kL1: a += std::fabs(v); break;
      case ReduceKind::kL2:
      case ReduceKind::kSumSquare: a += v * v; break;
      case ReduceKind::kLogSumExp: {
        const double m = shift[it.offset(0)];
        // Infinite or NaN maxima are the answer themselves; exp(inf - inf) would be NaN.
        if (std::isfinite(m)) a += std::exp(v - m);
        break;
      }
    }
  }
  T* y = out->data<T>();
  for (int64_t i = 0; i < n_out; ++i) {
    double a = acc[i];
    switch (kind) {
      case ReduceKind::kMean: a = a / static_cast<double>(count); break;
      case ReduceKind::kL2: a = std::sqrt(a); break;
      case ReduceKind::kLogSum: a = std::log(a); break;
      case ReduceKind::kLogSumExp:
        a = std::isfinite(shift[i]) ? shift[i] + std::log(a) : shift[i];
        break;
      default: break;
    }
    y[i] = FromDouble<T>(a);
  }
}

// Integer Sum/Mean/Prod/L1/SumSquare wrap in uint64 (defined behaviour, the type's own modular
// result after narrowing); Max/Min compare in T.
template <class T>
void ReduceExactInteger(const Tensor& in, ReduceKind kind, const std::vector<int64_t>& acc_strides,
                        int64_t count, Tensor* out) {
  const T* x = in.data<T>();
  T* y = out->data<T>();
  const int64_t n_out = out->numel();
  if (kind == ReduceKind::kMax || kind == ReduceKind::kMin) {
    const bool is_max = kind == ReduceKind::kMax;
    for (int64_t i = 0; i < n_out; ++i)
      y[i] = is_max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    for (BroadcastIter it(in.dims(), {acc_strides}); !it.done(); it.next()) {
      const T v = x[it.index()];
      T& a = y[it.offset(0)];
      if (is_max ? v > a : v < a) a = v;
    }
    return;
  }
  std::vector<uint64_t> acc(n_out, kind == ReduceKind::kProd ? 1 : 0);
  for (BroadcastIter it(in.dims(), {acc_strides}); !it.done(); it.next()) {
    const T v = x[it.index()];
    const uint64_t u = static_cast<uint64_t>(v);
    uint64_t& a = acc[it.offset(0)];
    switch (kind) {
      case ReduceKind::kProd: a *= u; break;
      case ReduceKind::kSumSquare: a += u * u; break;
      case ReduceKind::kL1: a += (v < T{0}) ? uint64_t{0} - u : u; break;
      default: a += u; break;  // kSum, kMean
    }
  }
  for (int64_t i = 0; i < n_out; ++i) {
    if (kind == ReduceKind::kMean) {
      if (count == 0) {
        y[i] = T{0};
      } else if constexpr (std::is_signed_v<T>) {
        y[i] = static_cast<T>(static_cast<int64_t>(acc[i]) / count);
      } else {
        y[i] = static_cast<T>(acc[i] / static_cast<uint64_t>(count));
      }
    } else {
      y[i] = static_cast<T>(acc[i]);
    }
  }
}

bool IsExactIntegerKind(ReduceKind kind) {
  return kind != ReduceKind::kL2 && kind != ReduceKind::kLogSum && kind != ReduceKind::kLogSumExp;
}

template <class T>
void ReduceInteger(const Tensor& in, ReduceKind kind, const std::vector<int64_t>& acc_strides,
                   int64_t count, Tensor* out) {
  if (IsExactIntegerKind(kind)) {
    ReduceExactInteger<T>(in, kind, acc_strides, count, out);
  } else {
    ReduceViaDouble<T>(in, kind, acc_strides, count, out);
  }
}

}  // namespace

Expected<Tensor> Reduce(const Tensor& in, ReduceKind kind, const std::vector<int64_t>& axes,
                        bool keepdims) {
  const int64_t rank = in.rank();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) {
    if (a < 0 || a >= rank) return Status::Error("axis ", a, " is out of range for rank ", rank);
    if (reduced[a]) return Status::Error("axis ", a, " is listed twice");
    reduced[a] = true;
  }
  std::vector<int64_t> out_dims;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      out_dims.push_back(in.dim(i));
    else if (keepdims)
      out_dims.push_back(1);
  }
  // An empty input can still have a large output (reducing [0, n] over axis 0 gives [n]).
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Make(in.dtype(), out_dims, "reduction output"));
  // Elements per output, derived without multiplying dims (a product of the reduced dims of an
  // empty tensor can overflow).
  const int64_t count = out.numel() > 0 ? in.numel() / out.numel() : 0;
  const std::vector<int64_t> acc_strides = AccumulatorStrides(in.dims(), reduced);
  Status st;
  switch (in.dtype()) {
    case DType::kFloat32: ReduceViaDouble<float>(in, kind, acc_strides, count, &out); break;
    case DType::kFloat64: ReduceViaDouble<double>(in, kind, acc_strides, count, &out); break;
    default:
      KILN_DISPATCH_INTEGER(in.dtype(), T,
                            st = Status::Error("cannot reduce a tensor of ", DTypeName(in.dtype())),
                            ReduceInteger<T>(in, kind, acc_strides, count, &out));
  }
  KILN_RETURN_IF_ERROR(st);
  return out;
}

Expected<Tensor> ArgReduce(const Tensor& in, bool is_max, int64_t axis, bool keepdims,
                           bool select_last_index) {
  const int64_t rank = in.rank();
  if (axis < 0 || axis >= rank)
    return Status::Error("axis ", axis, " is out of range for rank ", rank);
  const int64_t len = in.dim(axis);
  std::vector<int64_t> out_dims;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != axis)
      out_dims.push_back(in.dim(i));
    else if (keepdims)
      out_dims.push_back(1);
  }
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Make(DType::kInt64, out_dims, "arg reduction output"));
  if (len == 0 && out.numel() > 0)
    return Status::Error("cannot take the ", is_max ? "ArgMax" : "ArgMin", " of an empty axis (",
                         DescribeTensor(in), ", axis ", axis, ")");
  if (in.numel() == 0) return out;
  int64_t outer = 1, inner = 1;  // no overflow: the tensor is not empty
  for (int64_t i = 0; i < axis; ++i) outer *= in.dim(i);
  for (int64_t i = axis + 1; i < rank; ++i) inner *= in.dim(i);
  int64_t* y = out.data<int64_t>();
  Status st;
  KILN_DISPATCH_NUMERIC(
      in.dtype(), T, st = Status::Error("cannot take ArgMax/ArgMin of ", DTypeName(in.dtype())),
      const T* x = in.data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const T* row = x + o * len * inner + i;
          int64_t best = 0;
          for (int64_t j = 1; j < len; ++j) {
            const T v = row[j * inner];
            const T b = row[best * inner];
            const bool better = is_max ? v > b : v < b;
            if (better || (select_last_index && v == b)) best = j;
          }
          y[o * inner + i] = best;
        }
      });
  KILN_RETURN_IF_ERROR(st);
  return out;
}

}  // namespace kiln::ref
