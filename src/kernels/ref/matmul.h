// Reference matrix products: Gemm, numpy-style batched MatMul and its integer form. Float sums
// accumulate in double; integer sums wrap modulo 2^64 before narrowing, as C's unsigned
// arithmetic does, so hostile values cannot cause undefined behaviour.
#pragma once

#include <cstdint>
#include <vector>

#include "support/status.h"

namespace kiln::ref {

// Shape of a batched product after numpy broadcasting: out = batch + [m, n]. The batch strides
// (in elements of whole matrices) are 0 along broadcast dims.
struct MatMulGeometry {
  int64_t m = 1, k = 1, n = 1;
  std::vector<int64_t> batch;
  std::vector<int64_t> a_batch_strides, b_batch_strides;  // per batch dim, in matrices
};

// Numpy matmul shapes: 1-D operands are promoted (and the promoted dim dropped from out_dims),
// batch dims broadcast. Errors name the mismatch.
Expected<MatMulGeometry> PlanMatMul(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                    std::vector<int64_t>* out_dims);

// y[batch, m, n] = sum_k a[batch, m, k] * b[batch, k, n]. float, double and integer types.
template <class T>
void MatMul(const MatMulGeometry& g, const T* a, const T* b, T* y);

// y = sum_k (a - a_zero[m]) * (b - b_zero[n]) in int32. a_zero has m entries, b_zero n.
template <class TA, class TB>
void MatMulInteger(const MatMulGeometry& g, const TA* a, const std::vector<int32_t>& a_zero,
                   const TB* b, const std::vector<int32_t>& b_zero, int32_t* y);

// y[m, n] = alpha * op(a)[m, k] * op(b)[k, n] + beta * c, where op transposes when asked, a is
// [m, k] or [k, m] and b [k, n] or [n, k]. c (nullable) is read at c[i * c_row_stride + j *
// c_col_stride] so that broadcast biases need no copy.
template <class T>
void Gemm(int64_t m, int64_t k, int64_t n, const T* a, bool trans_a, const T* b, bool trans_b,
          double alpha, const T* c, int64_t c_row_stride, int64_t c_col_stride, double beta, T* y);

}  // namespace kiln::ref
