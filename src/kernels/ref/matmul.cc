#include "kernels/ref/matmul.h"

#include <algorithm>
#include <type_traits>

#include "kernels/ref/broadcast.h"
#include "support/tensor.h"

namespace kiln::ref {
namespace {

// Floats sum in double; integers in uint64, which wraps instead of overflowing.
template <class T>
using AccOf = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

template <class Acc, class T>
inline Acc Widen(T v) {
  if constexpr (std::is_floating_point_v<Acc>) {
    return static_cast<Acc>(v);
  } else {
    return static_cast<Acc>(static_cast<int64_t>(v));  // sign-extends, then wraps
  }
}

// Calls body(batch_index, a_offset, b_offset) for every batch entry, in matrices.
template <class Body>
void ForBatches(const MatMulGeometry& g, Body&& body) {
  if (g.batch.empty()) {
    body(0, 0, 0);
    return;
  }
  for (BroadcastIter it(g.batch, {g.a_batch_strides, g.b_batch_strides}); !it.done(); it.next())
    body(it.index(), it.offset(0), it.offset(1));
}

}  // namespace

Expected<MatMulGeometry> PlanMatMul(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                    std::vector<int64_t>* out_dims) {
  if (a.empty() || b.empty())
    return Status::Error("MatMul operands must have rank >= 1, got ", DimsToString(a), " and ",
                         DimsToString(b));
  std::vector<int64_t> a2 = a, b2 = b;
  if (a2.size() == 1) a2.insert(a2.begin(), 1);
  if (b2.size() == 1) b2.push_back(1);
  MatMulGeometry g;
  g.m = a2[a2.size() - 2];
  g.k = a2.back();
  g.n = b2.back();
  if (b2[b2.size() - 2] != g.k)
    return Status::Error("inner dims differ: A ", DimsToString(a), " has K = ", g.k, " but B ",
                         DimsToString(b), " has K = ", b2[b2.size() - 2]);
  std::vector<int64_t> ab(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
  auto batch = BroadcastDims({ab, bb});
  if (!batch.ok())
    return Status::Error("batch dims of A ", DimsToString(a), " and B ", DimsToString(b),
                         " do not broadcast");
  g.batch = *batch;
  g.a_batch_strides = BroadcastStrides(ab, g.batch);
  g.b_batch_strides = BroadcastStrides(bb, g.batch);
  *out_dims = g.batch;
  if (a.size() > 1) out_dims->push_back(g.m);
  if (b.size() > 1) out_dims->push_back(g.n);
  return g;
}

template <class T>
void MatMul(const MatMulGeometry& g, const T* a, const T* b, T* y) {
  using Acc = AccOf<T>;
  std::vector<Acc> acc(g.n);
  ForBatches(g, [&](int64_t bi, int64_t ao, int64_t bo) {
    const T* am = a + ao * g.m * g.k;
    const T* bm = b + bo * g.k * g.n;
    T* ym = y + bi * g.m * g.n;
    for (int64_t i = 0; i < g.m; ++i) {
      std::fill(acc.begin(), acc.end(), Acc{0});
      for (int64_t p = 0; p < g.k; ++p) {
        const Acc av = Widen<Acc>(am[i * g.k + p]);
        const T* brow = bm + p * g.n;
        for (int64_t j = 0; j < g.n; ++j) acc[j] += av * Widen<Acc>(brow[j]);
      }
      for (int64_t j = 0; j < g.n; ++j) ym[i * g.n + j] = static_cast<T>(acc[j]);
    }
  });
}

template <class TA, class TB>
void MatMulInteger(const MatMulGeometry& g, const TA* a, const std::vector<int32_t>& a_zero,
                   const TB* b, const std::vector<int32_t>& b_zero, int32_t* y) {
  std::vector<int64_t> acc(g.n);
  ForBatches(g, [&](int64_t bi, int64_t ao, int64_t bo) {
    const TA* am = a + ao * g.m * g.k;
    const TB* bm = b + bo * g.k * g.n;
    int32_t* ym = y + bi * g.m * g.n;
    for (int64_t i = 0; i < g.m; ++i) {
      std::fill(acc.begin(), acc.end(), 0);
      for (int64_t p = 0; p < g.k; ++p) {
        const int64_t av = static_cast<int64_t>(am[i * g.k + p]) - a_zero[i];
        const TB* brow = bm + p * g.n;
        for (int64_t j = 0; j < g.n; ++j)
          acc[j] += av * (static_cast<int64_t>(brow[j]) - b_zero[j]);
      }
      for (int64_t j = 0; j < g.n; ++j) ym[i * g.n + j] = static_cast<int32_t>(acc[j]);
    }
  });
}

template <class T>
void Gemm(int64_t m, int64_t k, int64_t n, const T* a, bool trans_a, const T* b, bool trans_b,
          double alpha, const T* c, int64_t c_row_stride, int64_t c_col_stride, double beta, T* y) {
  std::vector<double> acc(n);
  for (int64_t i = 0; i < m; ++i) {
    if (trans_b && !trans_a) {
      // Both operands are contiguous along k: dot products (the Linear-layer case).
      const T* arow = a + i * k;
      for (int64_t j = 0; j < n; ++j) {
        const T* brow = b + j * k;
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += static_cast<double>(arow[p]) * brow[p];
        acc[j] = s;
      }
    } else {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t p = 0; p < k; ++p) {
        const double av = trans_a ? a[p * m + i] : a[i * k + p];
        if (!trans_b) {
          const T* brow = b + p * n;
          for (int64_t j = 0; j < n; ++j) acc[j] += av * brow[j];
        } else {
          for (int64_t j = 0; j < n; ++j) acc[j] += av * b[j * k + p];
        }
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      double v = alpha * acc[j];
      if (c != nullptr) v += beta * static_cast<double>(c[i * c_row_stride + j * c_col_stride]);
      y[i * n + j] = static_cast<T>(v);
    }
  }
}

#define KILN_INSTANTIATE_MATMUL(T) \
  template void MatMul<T>(const MatMulGeometry&, const T*, const T*, T*);
KILN_INSTANTIATE_MATMUL(float)
KILN_INSTANTIATE_MATMUL(double)
KILN_INSTANTIATE_MATMUL(int8_t)
KILN_INSTANTIATE_MATMUL(int16_t)
KILN_INSTANTIATE_MATMUL(int32_t)
KILN_INSTANTIATE_MATMUL(int64_t)
KILN_INSTANTIATE_MATMUL(uint8_t)
KILN_INSTANTIATE_MATMUL(uint16_t)
KILN_INSTANTIATE_MATMUL(uint32_t)
KILN_INSTANTIATE_MATMUL(uint64_t)
#undef KILN_INSTANTIATE_MATMUL

#define KILN_INSTANTIATE_MATMUL_INTEGER(TA, TB)                               \
  template void MatMulInteger<TA, TB>(const MatMulGeometry&, const TA*,       \
                                      const std::vector<int32_t>&, const TB*, \
                                      const std::vector<int32_t>&, int32_t*);
KILN_INSTANTIATE_MATMUL_INTEGER(uint8_t, uint8_t)
KILN_INSTANTIATE_MATMUL_INTEGER(uint8_t, int8_t)
KILN_INSTANTIATE_MATMUL_INTEGER(int8_t, uint8_t)
KILN_INSTANTIATE_MATMUL_INTEGER(int8_t, int8_t)
#undef KILN_INSTANTIATE_MATMUL_INTEGER

template void Gemm<float>(int64_t, int64_t, int64_t, const float*, bool, const float*, bool, double,
                          const float*, int64_t, int64_t, double, float*);
template void Gemm<double>(int64_t, int64_t, int64_t, const double*, bool, const double*, bool,
                           double, const double*, int64_t, int64_t, double, double*);

}  // namespace kiln::ref
