#include "kernels/ref/sort.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

namespace kiln::ref {
namespace {

// A strict total order on values where NaN ranks above everything; std::sort needs one, and a
// plain `>` with NaN is not.
template <class T>
bool Greater(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return a > b;
}

template <class T>
void TopKTyped(const Tensor& x, const TopKParams& p, int64_t outer, int64_t len, int64_t inner,
               Tensor* values, Tensor* indices) {
  const T* in = x.data<T>();
  T* val = values->data<T>();
  int64_t* idx = indices->data<int64_t>();
  std::vector<std::pair<T, int64_t>> row(len);
  auto before = [&p](const std::pair<T, int64_t>& a, const std::pair<T, int64_t>& b) {
    const bool a_first = p.largest ? Greater(a.first, b.first) : Greater(b.first, a.first);
    const bool b_first = p.largest ? Greater(b.first, a.first) : Greater(a.first, b.first);
    if (a_first || b_first) return a_first;
    return a.second < b.second;
  };
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < len; ++j) row[j] = {in[(o * len + j) * inner + i], j};
      std::partial_sort(row.begin(), row.begin() + p.k, row.end(), before);
      for (int64_t j = 0; j < p.k; ++j) {
        val[(o * p.k + j) * inner + i] = row[j].first;
        idx[(o * p.k + j) * inner + i] = row[j].second;
      }
    }
  }
}

template <class T>
void CumSumTyped(const T* x, T* y, int64_t outer, int64_t len, int64_t inner, bool exclusive,
                 bool reverse) {
  // Integers wrap through uint64 (defined behaviour); floats sum in double.
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      Acc acc = 0;
      for (int64_t s = 0; s < len; ++s) {
        const int64_t j = reverse ? len - 1 - s : s;
        const int64_t at = (o * len + j) * inner + i;
        if (exclusive) {
          y[at] = static_cast<T>(acc);
          acc += static_cast<Acc>(x[at]);
        } else {
          acc += static_cast<Acc>(x[at]);
          y[at] = static_cast<T>(acc);
        }
      }
    }
  }
}

struct Box {
  double y1, x1, y2, x2;  // y1 <= y2, x1 <= x2
};

template <class T>
Box ReadBox(const T* b, bool center_point_box) {
  const double a = b[0], c = b[1], d = b[2], e = b[3];
  if (center_point_box)  // [x_center, y_center, width, height]
    return {c - e / 2, a - d / 2, c + e / 2, a + d / 2};
  // [y1, x1, y2, x2], where either corner may come first.
  return {std::min(a, d), std::min(c, e), std::max(a, d), std::max(c, e)};
}

bool Suppresses(const Box& a, const Box& b, double iou_threshold) {
  const double ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  const double iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (!(ih > 0) || !(iw > 0)) return false;
  const double inter = ih * iw;
  const double uni = (a.y2 - a.y1) * (a.x2 - a.x1) + (b.y2 - b.y1) * (b.x2 - b.x1) - inter;
  if (!(uni > 0)) return false;
  return inter / uni > iou_threshold;
}

template <class T>
std::vector<int64_t> NmsTyped(const Tensor& boxes, const Tensor& scores, const NmsParams& p) {
  const int64_t batches = scores.dim(0), classes = scores.dim(1), spatial = scores.dim(2);
  const T* bx = boxes.data<T>();
  const T* sc = scores.data<T>();
  std::vector<int64_t> rows;
  std::vector<int64_t> order;
  std::vector<Box> kept;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      const T* s = sc + (b * classes + c) * spatial;
      order.clear();
      for (int64_t i = 0; i < spatial; ++i) {
        if (std::isnan(static_cast<double>(s[i]))) continue;
        if (p.score_threshold && !(static_cast<double>(s[i]) > *p.score_threshold)) continue;
        order.push_back(i);
      }
      std::stable_sort(order.begin(), order.end(),
                       [s](int64_t i, int64_t j) { return s[i] > s[j]; });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= p.max_output_boxes_per_class) break;
        const Box box = ReadBox(bx + (b * spatial + i) * 4, p.center_point_box);
        bool drop = false;
        for (const Box& k : kept) drop = drop || Suppresses(k, box, p.iou_threshold);
        if (drop) continue;
        kept.push_back(box);
        rows.insert(rows.end(), {b, c, i});
      }
    }
  }
  return rows;
}

}  // namespace

Status TopK(const Tensor& x, const TopKParams& p, Tensor* values, Tensor* indices) {
  const int64_t rank = x.rank();
  if (p.axis < 0 || p.axis >= rank)
    return Status::Error("axis ", p.axis, " is out of range for rank ", rank);
  const int64_t len = x.dim(p.axis);
  if (p.k < 0 || p.k > len)
    return Status::Error("k = ", p.k, " must be in [0, ", len, "], the size of axis ", p.axis,
                         " of ", DescribeTensor(x));
  std::vector<int64_t> out_dims = x.dims();
  out_dims[p.axis] = p.k;
  Tensor v(x.dtype(), out_dims), ix(DType::kInt64, out_dims);  // no larger than x
  if (v.numel() > 0) {
    int64_t outer = 1, inner = 1;  // x is not empty here, so no overflow
    for (int64_t i = 0; i < p.axis; ++i) outer *= x.dim(i);
    for (int64_t i = p.axis + 1; i < rank; ++i) inner *= x.dim(i);
    Status st;
    KILN_DISPATCH_NUMERIC(x.dtype(), T,
                          st = Status::Error("TopK does not take ", DTypeName(x.dtype())),
                          TopKTyped<T>(x, p, outer, len, inner, &v, &ix));
    KILN_RETURN_IF_ERROR(st);
  }
  *values = std::move(v);
  *indices = std::move(ix);
  return Status::Ok();
}

Expected<Tensor> CumSum(const Tensor& x, int64_t axis, bool exclusive, bool reverse) {
  if (axis < 0 || axis >= x.rank())
    return Status::Error("axis ", axis, " is out of range for rank ", x.rank());
  Tensor y(x.dtype(), x.dims());
  if (x.numel() == 0) return y;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dim(i);
  for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= x.dim(i);
  Status st;
  KILN_DISPATCH_NUMERIC(
      x.dtype(), T, st = Status::Error("CumSum does not take ", DTypeName(x.dtype())),
      CumSumTyped<T>(x.data<T>(), y.data<T>(), outer, x.dim(axis), inner, exclusive, reverse));
  KILN_RETURN_IF_ERROR(st);
  return y;
}

Expected<Tensor> NonMaxSuppression(const Tensor& boxes, const Tensor& scores, const NmsParams& p) {
  if (boxes.rank() != 3 || boxes.dim(2) != 4)
    return Status::Error("boxes must be [num_batches, spatial_dimension, 4], got ",
                         DescribeTensor(boxes));
  if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
    return Status::Error("scores must be [num_batches, num_classes, spatial_dimension] = [",
                         boxes.dim(0), ", C, ", boxes.dim(1), "], got ", DescribeTensor(scores));
  if (boxes.dtype() != scores.dtype() ||
      (boxes.dtype() != DType::kFloat32 && boxes.dtype() != DType::kFloat64))
    return Status::Error("boxes and scores must both be float32 or float64, got ",
                         DescribeTensor(boxes), " and ", DescribeTensor(scores));
  if (p.max_output_boxes_per_class < 0)
    return Status::Error("max_output_boxes_per_class must not be negative, got ",
                         p.max_output_boxes_per_class);
  if (!(p.iou_threshold >= 0 && p.iou_threshold <= 1))
    return Status::Error("iou_threshold must be in [0, 1], got ", p.iou_threshold);
  std::vector<int64_t> rows;
  if (scores.numel() > 0 && p.max_output_boxes_per_class > 0) {
    rows = boxes.dtype() == DType::kFloat32 ? NmsTyped<float>(boxes, scores, p)
                                            : NmsTyped<double>(boxes, scores, p);
  }
  const int64_t n = static_cast<int64_t>(rows.size()) / 3;
  Tensor out(DType::kInt64, {n, 3});
  std::copy(rows.begin(), rows.end(), out.data<int64_t>());
  return out;
}

}  // namespace kiln::ref
