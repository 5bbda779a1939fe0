#include "kernels/ref/softmax.h"

#include <cmath>
#include <limits>

namespace kiln::ref {
namespace {

template <class T>
void SoftmaxTyped(const T* x, T* y, SoftmaxKind kind, int64_t outer, int64_t len, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* row = x + o * len * inner + i;
      T* out = y + o * len * inner + i;
      int64_t arg = 0;  // len > 0: the caller returns early for empty tensors
      double max = static_cast<double>(row[0]);
      for (int64_t j = 1; j < len; ++j) {
        const double v = static_cast<double>(row[j * inner]);
        if (v > max) {
          max = v;
          arg = j;
        }
      }
      if (kind == SoftmaxKind::kHardmax) {
        for (int64_t j = 0; j < len; ++j) out[j * inner] = j == arg ? T{1} : T{0};
        continue;
      }
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) sum += std::exp(static_cast<double>(row[j * inner]) - max);
      const double log_sum = std::log(sum);
      for (int64_t j = 0; j < len; ++j) {
        const double shifted = static_cast<double>(row[j * inner]) - max;
        out[j * inner] = static_cast<T>(kind == SoftmaxKind::kSoftmax ? std::exp(shifted) / sum
                                                                      : shifted - log_sum);
      }
    }
  }
}

Status CheckFloat(const Tensor& t, const char* what) {
  if (t.dtype() != DType::kFloat32 && t.dtype() != DType::kFloat64)
    return Status::Error(what, " must be float32 or float64, got ", DescribeTensor(t));
  return Status::Ok();
}

template <class T>
Status NllTyped(const Tensor& input, const Tensor& target, const Tensor* weight,
                const LossParams& p, Tensor* loss) {
  const int64_t n = input.dim(0), c = input.dim(1);
  const int64_t inner = n > 0 ? target.numel() / n : 0;  // target is [N, d1..dk]
  const T* x = input.data<T>();
  const T* w = weight ? weight->data<T>() : nullptr;
  std::vector<double> per(target.numel(), 0.0);
  double total = 0, total_weight = 0;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t d = 0; d < inner; ++d) {
      const int64_t k = b * inner + d;
      const int64_t t = target.AsInt64(k);
      if (p.ignore_index && t == *p.ignore_index) continue;
      if (t < 0 || t >= c)
        return Status::Error("target ", t, " at element ", k, " is outside the ", c,
                             " classes [0, ", c, ")");
      const double wt = w ? static_cast<double>(w[t]) : 1.0;
      per[k] = -static_cast<double>(x[(b * c + t) * inner + d]) * wt;
      total += per[k];
      total_weight += wt;
    }
  }
  if (p.reduction == LossReduction::kNone) {
    KILN_ASSIGN_OR_RETURN(*loss, Tensor::Make(input.dtype(), target.dims(), "loss"));
    T* y = loss->data<T>();
    for (size_t k = 0; k < per.size(); ++k) y[k] = static_cast<T>(per[k]);
  } else {
    double v = total;
    if (p.reduction == LossReduction::kMean)
      v = total_weight == 0 ? std::numeric_limits<double>::quiet_NaN() : total / total_weight;
    *loss = Tensor::Scalar<T>(static_cast<T>(v));
  }
  return Status::Ok();
}

}  // namespace

Expected<Tensor> Softmax(const Tensor& in, SoftmaxKind kind, int64_t outer, int64_t len,
                         int64_t inner) {
  KILN_RETURN_IF_ERROR(CheckFloat(in, "input"));
  if (outer < 0 || len < 0 || inner < 0 || (in.numel() > 0 && (outer * len * inner != in.numel())))
    return Status::Error("internal: softmax view [", outer, ",", len, ",", inner,
                         "] does not match ", DescribeTensor(in));
  Tensor out(in.dtype(), in.dims());
  if (in.numel() == 0) return out;
  if (in.dtype() == DType::kFloat32)
    SoftmaxTyped(in.data<float>(), out.data<float>(), kind, outer, len, inner);
  else
    SoftmaxTyped(in.data<double>(), out.data<double>(), kind, outer, len, inner);
  return out;
}

Expected<Tensor> NllLoss(const Tensor& input, const Tensor& target, const Tensor* weight,
                         const LossParams& p) {
  KILN_RETURN_IF_ERROR(CheckFloat(input, "input"));
  if (input.rank() < 2)
    return Status::Error("input must be [N, C, d1..dk], got ", DescribeTensor(input));
  if (target.dtype() != DType::kInt32 && target.dtype() != DType::kInt64)
    return Status::Error("target must be int32 or int64, got ", DescribeTensor(target));
  bool shape_ok = target.rank() == input.rank() - 1 && target.dim(0) == input.dim(0);
  for (int64_t i = 1; shape_ok && i < target.rank(); ++i)
    shape_ok = target.dim(i) == input.dim(i + 1);
  if (!shape_ok)
    return Status::Error("target ", DescribeTensor(target), " does not match input ",
                         DescribeTensor(input), " (expected [N, d1..dk])");
  if (weight != nullptr) {
    if (weight->dtype() != input.dtype() || weight->rank() != 1 || weight->dim(0) != input.dim(1))
      return Status::Error("weight must be ", DTypeName(input.dtype()), "[", input.dim(1),
                           "], got ", DescribeTensor(*weight));
  }
  Tensor loss;
  if (input.dtype() == DType::kFloat32)
    KILN_RETURN_IF_ERROR(NllTyped<float>(input, target, weight, p, &loss));
  else
    KILN_RETURN_IF_ERROR(NllTyped<double>(input, target, weight, p, &loss));
  return loss;
}

Expected<CrossEntropyResult> SoftmaxCrossEntropy(const Tensor& scores, const Tensor& labels,
                                                 const Tensor* weight, const LossParams& p) {
  KILN_RETURN_IF_ERROR(CheckFloat(scores, "scores"));
  if (scores.rank() < 2)
    return Status::Error("scores must be [N, C, d1..dk], got ", DescribeTensor(scores));
  const int64_t n = scores.dim(0), c = scores.dim(1);
  const int64_t inner = n > 0 && c > 0 ? scores.numel() / (n * c) : 0;
  CrossEntropyResult r;
  KILN_ASSIGN_OR_RETURN(r.log_prob, Softmax(scores, SoftmaxKind::kLogSoftmax, n, c, inner));
  KILN_ASSIGN_OR_RETURN(r.loss, NllLoss(r.log_prob, labels, weight, p));
  return r;
}

}  // namespace kiln::ref
