#include "kernels/ref/linalg.h"

#include <cmath>
#include <utility>
#include <vector>

namespace kiln::ref {
namespace {

// Determinant of the n x n row-major matrix in a (overwritten by its LU factors).
double LuDet(std::vector<double>& a, int64_t n) {
  double det = 1.0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t pivot = k;
    for (int64_t i = k + 1; i < n; ++i)
      if (std::fabs(a[i * n + k]) > std::fabs(a[pivot * n + k])) pivot = i;
    if (a[pivot * n + k] == 0.0) return 0.0;
    if (pivot != k) {
      for (int64_t j = 0; j < n; ++j) std::swap(a[k * n + j], a[pivot * n + j]);
      det = -det;
    }
    const double p = a[k * n + k];
    det *= p;
    for (int64_t i = k + 1; i < n; ++i) {
      const double f = a[i * n + k] / p;
      if (f == 0.0) continue;
      for (int64_t j = k + 1; j < n; ++j) a[i * n + j] -= f * a[k * n + j];
    }
  }
  return det;
}

}  // namespace

Status Det(const Tensor& x, Tensor* y) {
  const DType t = x.dtype();
  if (t != DType::kFloat32 && t != DType::kFloat64)
    return Status::Error("Det needs float32 or float64 input, got ", DescribeTensor(x));
  if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2))
    return Status::Error("Det needs square matrices [..., M, M], got ", DescribeTensor(x));
  const int64_t n = x.dim(x.rank() - 1);
  std::vector<int64_t> batch_dims(x.dims().begin(), x.dims().end() - 2);
  *y = Tensor(t, batch_dims);
  const int64_t batch = y->numel();
  std::vector<double> a(static_cast<size_t>(n * n));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < n * n; ++i) a[i] = x.AsDouble(b * n * n + i);
    const double det = LuDet(a, n);
    if (t == DType::kFloat32) {
      y->data<float>()[b] = static_cast<float>(det);
    } else {
      y->data<double>()[b] = det;
    }
  }
  return Status::Ok();
}

}  // namespace kiln::ref
