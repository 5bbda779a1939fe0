#include "kernels/ref/indexing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "kernels/ref/broadcast.h"
#include "kernels/ref/movement.h"

namespace kiln::ref {

Expected<int64_t> WrapIndex(int64_t index, int64_t size, int64_t axis) {
  const int64_t i = index < 0 ? index + size : index;
  if (i < 0 || i >= size)
    return Status::Error("index ", index, " is out of range for axis ", axis, " of size ", size);
  return i;
}

namespace {

Status CheckIndexType(const Tensor& indices) {
  if (indices.dtype() != DType::kInt64 && indices.dtype() != DType::kInt32)
    return Status::Error("indices must be int32 or int64, got ", DTypeName(indices.dtype()));
  return Status::Ok();
}

int64_t Product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t k = from; k < to; ++k) n *= dims[k];
  return n;
}

// Integer add/mul wrap (done unsigned: signed overflow from hostile data must not be UB).
template <class T>
T Combine(T a, T b, Reduction r) {
  switch (r) {
    case Reduction::kAdd:
      if constexpr (std::is_integral_v<T>)
        return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
      else
        return a + b;
    case Reduction::kMul:
      if constexpr (std::is_integral_v<T>)
        return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
      else
        return a * b;
    case Reduction::kMax:
      return std::max(a, b);
    case Reduction::kMin:
      return std::min(a, b);
    case Reduction::kNone:
      return b;
  }
  return b;
}

// Writes update i to out element dst_of[i], in order (so with kNone the last duplicate wins).
Status ScatterApply(const std::vector<int64_t>& dst_of, const Tensor& updates, Reduction r,
                    Tensor* out) {
  const int64_t n = static_cast<int64_t>(dst_of.size());
  if (r == Reduction::kNone) {
    WithElementCopier(updates, out, [&](auto copy) {
      for (int64_t i = 0; i < n; ++i) copy(i, dst_of[i]);
    });
    return Status::Ok();
  }
  const DType t = out->dtype();
  if (t == DType::kFloat16 || t == DType::kBFloat16) {
    const bool half = t == DType::kFloat16;
    uint16_t* o = out->data<uint16_t>();
    const uint16_t* u = updates.data<uint16_t>();
    for (int64_t i = 0; i < n; ++i) {
      const float a = half ? HalfToFloat(o[dst_of[i]]) : BFloat16ToFloat(o[dst_of[i]]);
      const float b = half ? HalfToFloat(u[i]) : BFloat16ToFloat(u[i]);
      const float c = Combine(a, b, r);
      o[dst_of[i]] = half ? FloatToHalf(c) : FloatToBFloat16(c);
    }
    return Status::Ok();
  }
  KILN_DISPATCH_NUMERIC(t, T, return Status::Error("reduction is not supported for ", DTypeName(t)),
                        {
                          T* o = out->data<T>();
                          const T* u = updates.data<T>();
                          for (int64_t i = 0; i < n; ++i)
                            o[dst_of[i]] = Combine(o[dst_of[i]], u[i], r);
                        });
  return Status::Ok();
}

}  // namespace

Expected<Reduction> ParseReduction(const std::string& s) {
  if (s == "none") return Reduction::kNone;
  if (s == "add") return Reduction::kAdd;
  if (s == "mul") return Reduction::kMul;
  if (s == "max") return Reduction::kMax;
  if (s == "min") return Reduction::kMin;
  return Status::Error("reduction '", s, "' is not one of none, add, mul, max, min");
}

Expected<Tensor> Gather(const Tensor& data, const Tensor& indices, int64_t axis) {
  KILN_RETURN_IF_ERROR(CheckIndexType(indices));
  if (axis < 0 || axis >= data.rank())
    return Status::Error("axis ", axis, " is out of range for ", DescribeTensor(data));
  const std::vector<int64_t>& d = data.dims();
  std::vector<int64_t> out_dims(d.begin(), d.begin() + axis);
  out_dims.insert(out_dims.end(), indices.dims().begin(), indices.dims().end());
  out_dims.insert(out_dims.end(), d.begin() + axis + 1, d.end());
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Make(data.dtype(), out_dims, "Gather output"));
  if (out.numel() == 0) return out;
  const int64_t outer = Product(d, 0, axis), inner = Product(d, axis + 1, d.size());
  const int64_t size = d[axis], n = indices.numel();
  std::vector<int64_t> idx(n);
  for (int64_t j = 0; j < n; ++j) {
    KILN_ASSIGN_OR_RETURN(idx[j], WrapIndex(indices.AsInt64(j), size, axis));
  }
  WithElementCopier(data, &out, [&](auto copy) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i)
          copy((o * size + idx[j]) * inner + i, (o * n + j) * inner + i);
  });
  return out;
}

namespace {

// Checks that indices/updates of GatherElements/ScatterElements fit data on every other axis, and
// returns, for every element of `indices`, the data offset it addresses.
Expected<std::vector<int64_t>> ElementOffsets(const Tensor& data, const Tensor& indices,
                                              int64_t axis) {
  KILN_RETURN_IF_ERROR(CheckIndexType(indices));
  if (indices.rank() != data.rank())
    return Status::Error("indices ", DescribeTensor(indices), " must have the rank of data ",
                         DescribeTensor(data));
  if (axis < 0 || axis >= data.rank())
    return Status::Error("axis ", axis, " is out of range for ", DescribeTensor(data));
  for (int64_t k = 0; k < data.rank(); ++k)
    if (k != axis && indices.dim(k) > data.dim(k))
      return Status::Error("indices ", DescribeTensor(indices), " exceed data ",
                           DescribeTensor(data), " on axis ", k);
  const std::vector<int64_t> strides = Strides(data.dims());
  const size_t rank = data.dims().size();
  std::vector<int64_t> offsets(indices.numel());
  std::vector<int64_t> pos(rank, 0);
  for (int64_t i = 0; i < indices.numel(); ++i) {
    KILN_ASSIGN_OR_RETURN(int64_t at, WrapIndex(indices.AsInt64(i), data.dim(axis), axis));
    int64_t off = 0;
    for (size_t k = 0; k < rank; ++k)
      off += (static_cast<int64_t>(k) == axis ? at : pos[k]) * strides[k];
    offsets[i] = off;
    for (size_t k = rank; k-- > 0;) {
      if (++pos[k] < indices.dim(k)) break;
      pos[k] = 0;
    }
  }
  return offsets;
}

}  // namespace

Expected<Tensor> GatherElements(const Tensor& data, const Tensor& indices, int64_t axis) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, ElementOffsets(data, indices, axis));
  Tensor out(data.dtype(), indices.dims());
  WithElementCopier(data, &out, [&](auto copy) {
    for (size_t i = 0; i < offsets.size(); ++i) copy(offsets[i], static_cast<int64_t>(i));
  });
  return out;
}

Expected<Tensor> ScatterElements(const Tensor& data, const Tensor& indices, const Tensor& updates,
                                 int64_t axis, Reduction reduction) {
  if (updates.dims() != indices.dims() || updates.dtype() != data.dtype())
    return Status::Error("updates ", DescribeTensor(updates), " must match indices ",
                         DescribeTensor(indices), " in shape and data in type");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, ElementOffsets(data, indices, axis));
  Tensor out = data.Clone();
  KILN_RETURN_IF_ERROR(ScatterApply(offsets, updates, reduction, &out));
  return out;
}

namespace {

// GatherND / ScatterND addressing: for each index tuple (the last dim of indices), the offset of
// the slice it selects in data, with batch_dims leading dims shared.
struct NDPlan {
  std::vector<int64_t> offsets;   // one per tuple, in row-major order of indices[:-1]
  int64_t slice = 1;              // elements per selected slice
  std::vector<int64_t> out_dims;  // indices.dims[:-1] + data.dims[batch_dims + m:]
};

Expected<NDPlan> PlanND(const Tensor& data, const Tensor& indices, int64_t batch_dims) {
  KILN_RETURN_IF_ERROR(CheckIndexType(indices));
  const int64_t r = data.rank(), q = indices.rank();
  if (q < 1) return Status::Error("indices must have rank >= 1");
  if (batch_dims < 0 || batch_dims >= std::min(r, q))
    return Status::Error("batch_dims ", batch_dims, " must be below the ranks of data and indices");
  const int64_t m = indices.dim(q - 1);
  if (m < 1 || m > r - batch_dims)
    return Status::Error("indices ", DescribeTensor(indices), " address ", m, " dims, data ",
                         DescribeTensor(data), " has ", r - batch_dims, " after batch_dims");
  for (int64_t k = 0; k < batch_dims; ++k)
    if (indices.dim(k) != data.dim(k))
      return Status::Error("batch dim ", k, " differs: data ", DescribeTensor(data), ", indices ",
                           DescribeTensor(indices));
  NDPlan plan;
  plan.out_dims.assign(indices.dims().begin(), indices.dims().end() - 1);
  plan.out_dims.insert(plan.out_dims.end(), data.dims().begin() + batch_dims + m,
                       data.dims().end());
  plan.slice = Product(data.dims(), batch_dims + m, r);
  const int64_t batch = Product(data.dims(), 0, batch_dims);
  const int64_t batch_stride = Product(data.dims(), batch_dims, r);
  const int64_t tuples = m == 0 ? 0 : indices.numel() / m;
  const int64_t per_batch = batch == 0 ? 0 : tuples / batch;
  const std::vector<int64_t> strides = Strides(data.dims());
  plan.offsets.resize(tuples);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = (per_batch == 0 ? 0 : t / per_batch) * batch_stride;
    for (int64_t k = 0; k < m; ++k) {
      const int64_t axis = batch_dims + k;
      KILN_ASSIGN_OR_RETURN(int64_t at,
                            WrapIndex(indices.AsInt64(t * m + k), data.dim(axis), axis));
      off += at * strides[axis];
    }
    plan.offsets[t] = off;
  }
  return plan;
}

}  // namespace

Expected<Tensor> GatherND(const Tensor& data, const Tensor& indices, int64_t batch_dims) {
  KILN_ASSIGN_OR_RETURN(NDPlan plan, PlanND(data, indices, batch_dims));
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Make(data.dtype(), plan.out_dims, "GatherND output"));
  WithElementCopier(data, &out, [&](auto copy) {
    for (size_t t = 0; t < plan.offsets.size(); ++t)
      for (int64_t i = 0; i < plan.slice; ++i)
        copy(plan.offsets[t] + i, static_cast<int64_t>(t) * plan.slice + i);
  });
  return out;
}

Expected<Tensor> ScatterND(const Tensor& data, const Tensor& indices, const Tensor& updates,
                           Reduction reduction) {
  KILN_ASSIGN_OR_RETURN(NDPlan plan, PlanND(data, indices, 0));
  if (updates.dims() != plan.out_dims || updates.dtype() != data.dtype())
    return Status::Error("updates ", DescribeTensor(updates), " must be ", DTypeName(data.dtype()),
                         DimsToString(plan.out_dims));
  std::vector<int64_t> dst_of;
  dst_of.reserve(updates.numel());
  for (int64_t off : plan.offsets)
    for (int64_t i = 0; i < plan.slice; ++i) dst_of.push_back(off + i);
  Tensor out = data.Clone();
  KILN_RETURN_IF_ERROR(ScatterApply(dst_of, updates, reduction, &out));
  return out;
}

Expected<Tensor> OneHot(const Tensor& indices, int64_t depth, const Tensor& values, int64_t axis) {
  if (values.numel() != 2)
    return Status::Error("values must hold [off, on], got ", DescribeTensor(values));
  if (depth < 1) return Status::Error("depth ", depth, " must be positive");
  if (axis < 0 || axis > indices.rank()) return Status::Error("axis ", axis, " is out of range");
  std::vector<int64_t> out_dims = indices.dims();
  out_dims.insert(out_dims.begin() + axis, depth);
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Make(values.dtype(), out_dims, "OneHot output"));
  if (out.numel() == 0) return out;
  const int64_t outer = Product(indices.dims(), 0, axis);
  const int64_t inner = Product(indices.dims(), axis, indices.dims().size());
  WithElementCopier(values, &out, [&](auto copy) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        // Read as double: a float index may be NaN or huge, which no integer cast survives.
        double v = std::trunc(indices.AsDouble(o * inner + i));
        if (v < 0) v += static_cast<double>(depth);
        const int64_t hot =
            (v >= 0 && v < static_cast<double>(depth)) ? static_cast<int64_t>(v) : -1;
        for (int64_t d = 0; d < depth; ++d) copy(d == hot ? 1 : 0, (o * depth + d) * inner + i);
      }
  });
  return out;
}

Expected<Tensor> NonZero(const Tensor& x) {
  if (x.dtype() == DType::kString) return Status::Error("string input is not supported");
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (x.AsDouble(i) != 0) hits.push_back(i);
  const int64_t rank = std::max<int64_t>(x.rank(), 1);
  const std::vector<int64_t> dims = x.rank() == 0 ? std::vector<int64_t>{1} : x.dims();
  const int64_t count = static_cast<int64_t>(hits.size());
  Tensor out(DType::kInt64, {rank, count});
  int64_t* o = out.data<int64_t>();
  for (int64_t j = 0; j < count; ++j) {
    int64_t rest = hits[j];
    for (int64_t k = rank; k-- > 0;) {
      o[k * count + j] = rest % dims[k];
      rest /= dims[k];
    }
  }
  return out;
}

namespace {

// Orders slices j of a [outer, d, inner] view lexicographically in (o, i) order.
template <class T>
void SortSlices(const T* x, int64_t outer, int64_t d, int64_t inner, std::vector<int64_t>* order,
                std::vector<bool>* equal_to_prev) {
  auto at = [&](int64_t j, int64_t e) { return x[((e / inner) * d + j) * inner + e % inner]; };
  const int64_t len = outer * inner;
  auto compare = [&](int64_t a, int64_t b) {
    for (int64_t e = 0; e < len; ++e) {
      const T va = at(a, e), vb = at(b, e);
      if (va < vb) return -1;
      if (vb < va) return 1;
    }
    return 0;
  };
  std::stable_sort(order->begin(), order->end(),
                   [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
  equal_to_prev->assign(order->size(), false);
  for (size_t s = 1; s < order->size(); ++s)
    (*equal_to_prev)[s] = compare((*order)[s - 1], (*order)[s]) == 0;
}

}  // namespace

Expected<UniqueResult> Unique(const Tensor& x, int64_t axis, bool sorted) {
  const Tensor src = axis < 0 ? x.Reshaped({x.numel()}) : x;
  const int64_t a = axis < 0 ? 0 : axis;
  if (a >= src.rank()) return Status::Error("axis ", axis, " is out of range");
  const int64_t d = src.dim(a);
  const int64_t outer = Product(src.dims(), 0, a), inner = Product(src.dims(), a + 1, src.rank());
  std::vector<int64_t> order(d);
  std::iota(order.begin(), order.end(), 0);
  std::vector<bool> equal_to_prev;
  if (outer * inner == 0) {
    equal_to_prev.assign(d, true);  // empty slices are all equal
    if (d > 0) equal_to_prev[0] = false;
  } else if (src.dtype() == DType::kFloat16 || src.dtype() == DType::kBFloat16) {
    std::vector<float> wide = src.ToFloatVector();
    SortSlices(wide.data(), outer, d, inner, &order, &equal_to_prev);
  } else {
    KILN_DISPATCH_NUMERIC(src.dtype(), T,
                          return Status::Error("Unique does not support ", DTypeName(src.dtype())),
                          SortSlices(src.data<T>(), outer, d, inner, &order, &equal_to_prev));
  }
  // Groups of equal slices in sorted order; a stable sort puts each group's first occurrence first.
  std::vector<int64_t> first, counts, group_of(d);
  for (int64_t s = 0; s < d; ++s) {
    if (!equal_to_prev[s]) {
      first.push_back(order[s]);
      counts.push_back(0);
    }
    ++counts.back();
    group_of[order[s]] = static_cast<int64_t>(first.size()) - 1;
  }
  const int64_t groups = static_cast<int64_t>(first.size());
  std::vector<int64_t> rank_of(groups);  // output position of each group
  std::iota(rank_of.begin(), rank_of.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(groups);
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t g, int64_t h) { return first[g] < first[h]; });
    for (int64_t p = 0; p < groups; ++p) rank_of[by_first[p]] = p;
  }
  UniqueResult r;
  r.indices = Tensor(DType::kInt64, {groups});
  r.counts = Tensor(DType::kInt64, {groups});
  r.inverse_indices = Tensor(DType::kInt64, {d});
  AxisMaps maps(src.rank());
  for (int64_t k = 0; k < src.rank(); ++k) {
    if (k == a) continue;
    maps[k].resize(src.dim(k));
    std::iota(maps[k].begin(), maps[k].end(), 0);
  }
  maps[a].resize(groups);
  for (int64_t g = 0; g < groups; ++g) {
    r.indices.data<int64_t>()[rank_of[g]] = first[g];
    r.counts.data<int64_t>()[rank_of[g]] = counts[g];
    maps[a][rank_of[g]] = first[g];
  }
  for (int64_t j = 0; j < d; ++j) r.inverse_indices.data<int64_t>()[j] = rank_of[group_of[j]];
  std::vector<int64_t> y_dims = src.dims();
  y_dims[a] = groups;
  r.y = Tensor(src.dtype(), y_dims);
  AxisMapCopy(src, maps, &r.y);
  return r;
}

}  // namespace kiln::ref
