#include "kernels/ref/movement.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/ref/broadcast.h"

namespace kiln::ref {

void AxisMapCopy(const Tensor& in, const AxisMaps& maps, Tensor* out) {
  const size_t rank = maps.size();
  if (out->numel() == 0) return;
  const std::vector<int64_t> in_strides = Strides(in.dims());
  // Per-axis source offsets, -1 where the output keeps its fill value.
  std::vector<std::vector<int64_t>> offsets(rank);
  for (size_t k = 0; k < rank; ++k) {
    offsets[k].reserve(maps[k].size());
    for (int64_t m : maps[k]) offsets[k].push_back(m < 0 ? -1 : m * in_strides[k]);
  }
  const std::vector<int64_t>& dims = out->dims();
  WithElementCopier(in, out, [&](auto copy) {
    std::vector<int64_t> pos(rank, 0);
    const int64_t n = out->numel();
    for (int64_t i = 0; i < n; ++i) {
      int64_t src = 0;
      bool fill = false;
      for (size_t k = 0; k < rank && !fill; ++k) {
        const int64_t o = offsets[k][pos[k]];
        fill = o < 0;
        src += o;
      }
      if (!fill) copy(src, i);
      for (size_t k = rank; k-- > 0;) {
        if (++pos[k] < dims[k]) break;
        pos[k] = 0;
      }
    }
  });
}

void StridedCopy(const Tensor& src, int64_t src_offset, const std::vector<int64_t>& src_strides,
                 Tensor* dst, int64_t dst_offset, const std::vector<int64_t>& dst_strides,
                 const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  if (n == 0) return;
  const size_t rank = dims.size();
  WithElementCopier(src, dst, [&](auto copy) {
    std::vector<int64_t> pos(rank, 0);
    int64_t s = src_offset, d = dst_offset;
    for (int64_t i = 0; i < n; ++i) {
      copy(s, d);
      for (size_t k = rank; k-- > 0;) {
        s += src_strides[k];
        d += dst_strides[k];
        if (++pos[k] < dims[k]) break;
        s -= src_strides[k] * dims[k];
        d -= dst_strides[k] * dims[k];
        pos[k] = 0;
      }
    }
  });
}

void FillWith(const Tensor& value, Tensor* out) {
  if (value.numel() == 0) return;
  WithElementCopier(value, out, [&](auto copy) {
    for (int64_t i = 0; i < out->numel(); ++i) copy(0, i);
  });
}

Expected<Tensor> Transpose(const Tensor& in, const std::vector<int64_t>& perm) {
  const int64_t rank = in.rank();
  if (static_cast<int64_t>(perm.size()) != rank)
    return Status::Error("perm has ", perm.size(), " entries for a rank-", rank, " input");
  std::vector<bool> seen(rank, false);
  std::vector<int64_t> out_dims(rank), src_strides(rank);
  const std::vector<int64_t> in_strides = Strides(in.dims());
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t p = perm[i];
    if (p < 0 || p >= rank || seen[p])
      return Status::Error("perm ", DimsToString(perm), " is not a permutation of 0..", rank - 1);
    seen[p] = true;
    out_dims[i] = in.dim(p);
    src_strides[i] = in_strides[p];
  }
  Tensor out(in.dtype(), out_dims);
  StridedCopy(in, 0, src_strides, &out, 0, Strides(out_dims), out_dims);
  return out;
}

Expected<Tensor> Concat(const std::vector<const Tensor*>& inputs, int64_t axis) {
  if (inputs.empty()) return Status::Error("Concat needs at least one input");
  const Tensor& first = *inputs[0];
  if (axis < 0 || axis >= first.rank())
    return Status::Error("axis ", axis, " is out of range for rank ", first.rank());
  std::vector<int64_t> out_dims = first.dims();
  out_dims[axis] = 0;
  for (const Tensor* t : inputs) {
    if (t->dtype() != first.dtype() || t->rank() != first.rank())
      return Status::Error("inputs ", DescribeTensor(first), " and ", DescribeTensor(*t),
                           " differ in type or rank");
    for (int64_t k = 0; k < first.rank(); ++k)
      if (k != axis && t->dim(k) != first.dim(k))
        return Status::Error("inputs ", DescribeTensor(first), " and ", DescribeTensor(*t),
                             " differ in dim ", k);
    // Real tensors can still carry huge dims beside a zero: the sum must not overflow.
    if (t->dim(axis) > std::numeric_limits<int64_t>::max() - out_dims[axis])
      return Status::Error("Concat output dim ", axis, " overflows");
    out_dims[axis] += t->dim(axis);
  }
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Make(first.dtype(), out_dims, "Concat output"));
  const std::vector<int64_t> out_strides = Strides(out_dims);
  int64_t offset = 0;
  for (const Tensor* t : inputs) {
    StridedCopy(*t, 0, Strides(t->dims()), &out, offset * out_strides[axis], out_strides,
                t->dims());
    offset += t->dim(axis);
  }
  return out;
}

Expected<std::vector<Tensor>> Split(const Tensor& in, int64_t axis,
                                    const std::vector<int64_t>& sizes) {
  if (axis < 0 || axis >= in.rank())
    return Status::Error("axis ", axis, " is out of range for rank ", in.rank());
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0 || s > in.dim(axis) - total)
      return Status::Error("split sizes ", DimsToString(sizes), " do not fit dim ", axis, " of ",
                           DescribeTensor(in));
    total += s;
  }
  if (total != in.dim(axis))
    return Status::Error("split sizes ", DimsToString(sizes), " sum to ", total, ", not dim ", axis,
                         " of ", DescribeTensor(in));
  const std::vector<int64_t> in_strides = Strides(in.dims());
  std::vector<Tensor> outs;
  int64_t offset = 0;
  for (int64_t s : sizes) {
    std::vector<int64_t> dims = in.dims();
    dims[axis] = s;
    Tensor piece(in.dtype(), dims);
    StridedCopy(in, offset * in_strides[axis], in_strides, &piece, 0, Strides(dims), dims);
    outs.push_back(std::move(piece));
    offset += s;
  }
  return outs;
}

std::pair<int64_t, int64_t> SliceAxis(int64_t start, int64_t end, int64_t step, int64_t d) {
  // Clamped first so that adding d to a huge negative bound cannot overflow.
  constexpr int64_t kLimit = int64_t{1} << 61;
  start = std::clamp(start, -kLimit, kLimit);
  end = std::clamp(end, -kLimit, kLimit);
  if (start < 0) start += d;
  if (end < 0) end += d;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, d);
    end = std::clamp<int64_t>(end, 0, d);
    return {start, end > start ? (end - start + step - 1) / step : 0};
  }
  start = std::clamp<int64_t>(start, -1, d - 1);
  end = std::clamp<int64_t>(end, -1, d - 1);
  // end - start and step are negative: count = ceil((start - end) / -step).
  return {start, start > end ? (start - end + (-step) - 1) / (-step) : 0};
}

Expected<Tensor> Slice(const Tensor& in, const SliceParams& p) {
  const size_t rank = in.dims().size();
  if (p.starts.size() != rank || p.steps.size() != rank || p.counts.size() != rank)
    return Status::Error("slice parameters do not match rank ", rank);
  const std::vector<int64_t> in_strides = Strides(in.dims());
  int64_t offset = 0;
  std::vector<int64_t> src_strides(rank);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t c = p.counts[k];
    if (c < 0 || p.steps[k] == 0) return Status::Error("invalid slice on axis ", k);
    if (c > 0) {
      // The first and last elements read must lie inside the input.
      const int64_t last = p.starts[k] + (c - 1) * p.steps[k];
      if (p.starts[k] < 0 || p.starts[k] >= in.dim(k) || last < 0 || last >= in.dim(k))
        return Status::Error("slice on axis ", k, " reads outside ", DescribeTensor(in));
    }
    offset += p.starts[k] * in_strides[k];
    src_strides[k] = p.steps[k] * in_strides[k];
  }
  Tensor out(in.dtype(), p.counts);
  StridedCopy(in, offset, src_strides, &out, 0, Strides(p.counts), p.counts);
  return out;
}

Expected<Tensor> Pad(const Tensor& in, const std::vector<int64_t>& pads, PadMode mode,
                     const Tensor& value) {
  const int64_t rank = in.rank();
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return Status::Error("pads has ", pads.size(), " entries for a rank-", rank, " input");
  std::vector<int64_t> out_dims(rank);
  const int64_t kLimit = int64_t{1} << 62;
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t b = pads[k], e = pads[k + rank];
    if (b < -kLimit || b > kLimit || e < -kLimit || e > kLimit)
      return Status::Error("pad ", b, ",", e, " on axis ", k, " is too large");
    out_dims[k] = in.dim(k) + b + e;
    if (out_dims[k] < 0)
      return Status::Error("pads ", DimsToString(pads), " crop more than ", DescribeTensor(in));
  }
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Make(in.dtype(), out_dims, "Pad output"));
  if (out.numel() == 0) return out;  // dims may be huge around a zero
  AxisMaps maps(rank);
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t d = in.dim(k);
    if (d == 0 && out_dims[k] > 0 && mode != PadMode::kConstant)
      return Status::Error("cannot pad empty axis ", k, " in a non-constant mode");
    maps[k].resize(out_dims[k]);
    for (int64_t o = 0; o < out_dims[k]; ++o) {
      int64_t i = o - pads[k];
      if (i < 0 || i >= d) {
        switch (mode) {
          case PadMode::kConstant:
            i = -1;
            break;
          case PadMode::kEdge:
            i = std::clamp<int64_t>(i, 0, d - 1);
            break;
          case PadMode::kWrap:
            i = ((i % d) + d) % d;
            break;
          case PadMode::kReflect:
            if (d == 1) {
              i = 0;
            } else {
              const int64_t period = 2 * (d - 1);
              i = ((i % period) + period) % period;
              if (i >= d) i = period - i;
            }
            break;
        }
      }
      maps[k][o] = i;
    }
  }
  if (mode == PadMode::kConstant && value.defined()) {
    if (value.dtype() != in.dtype())
      return Status::Error("pad value is ", DTypeName(value.dtype()), ", input is ",
                           DTypeName(in.dtype()));
    FillWith(value, &out);
  }
  AxisMapCopy(in, maps, &out);
  return out;
}

Expected<Tensor> Tile(const Tensor& in, const std::vector<int64_t>& repeats) {
  const int64_t rank = in.rank();
  if (static_cast<int64_t>(repeats.size()) != rank)
    return Status::Error("repeats has ", repeats.size(), " entries for a rank-", rank, " input");
  std::vector<int64_t> out_dims(rank);
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t r = repeats[k], d = in.dim(k);
    if (r < 0) return Status::Error("repeat ", r, " on axis ", k, " is negative");
    if (d != 0 && r > std::numeric_limits<int64_t>::max() / d)
      return Status::Error("repeat ", r, " on axis ", k, " overflows");
    out_dims[k] = d * r;
  }
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Make(in.dtype(), out_dims, "Tile output"));
  if (out.numel() == 0) return out;  // dims may be huge around a zero
  AxisMaps maps(rank);
  for (int64_t k = 0; k < rank; ++k) {
    maps[k].resize(out_dims[k]);
    for (int64_t o = 0; o < out_dims[k]; ++o) maps[k][o] = o % in.dim(k);
  }
  AxisMapCopy(in, maps, &out);
  return out;
}

Expected<Tensor> Expand(const Tensor& in, const std::vector<int64_t>& out_dims) {
  const size_t rank = out_dims.size();
  if (in.dims().size() > rank) return Status::Error("cannot expand to a lower rank");
  std::vector<int64_t> in_dims(rank - in.dims().size(), 1);
  in_dims.insert(in_dims.end(), in.dims().begin(), in.dims().end());
  for (size_t k = 0; k < rank; ++k)
    if (in_dims[k] != 1 && in_dims[k] != out_dims[k])
      return Status::Error(DescribeTensor(in), " does not broadcast to ", DimsToString(out_dims));
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Make(in.dtype(), out_dims, "Expand output"));
  if (out.numel() == 0) return out;  // dims may be huge around a zero
  AxisMaps maps(rank);
  for (size_t k = 0; k < rank; ++k) {
    maps[k].resize(out_dims[k]);
    for (int64_t o = 0; o < out_dims[k]; ++o) maps[k][o] = in_dims[k] == 1 ? 0 : o;
  }
  AxisMapCopy(in.Reshaped(in_dims), maps, &out);
  return out;
}

Expected<Tensor> DepthToSpace(const Tensor& in, int64_t b, bool crd) {
  if (in.rank() != 4) return Status::Error("input must be 4-D NCHW, got ", DescribeTensor(in));
  if (b <= 0 || b > (int64_t{1} << 20) || in.dim(1) % (b * b) != 0)
    return Status::Error("blocksize ", b, " does not divide the channels of ", DescribeTensor(in));
  const int64_t n = in.dim(0), c = in.dim(1) / (b * b), h = in.dim(2), w = in.dim(3);
  Tensor view = crd ? in.Reshaped({n, c, b, b, h, w}) : in.Reshaped({n, b, b, c, h, w});
  std::vector<int64_t> perm =
      crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
  KILN_ASSIGN_OR_RETURN(Tensor t, Transpose(view, perm));
  return t.Reshaped({n, c, h * b, w * b});
}

Expected<Tensor> SpaceToDepth(const Tensor& in, int64_t b) {
  if (in.rank() != 4) return Status::Error("input must be 4-D NCHW, got ", DescribeTensor(in));
  if (b <= 0 || in.dim(2) % b != 0 || in.dim(3) % b != 0)
    return Status::Error("blocksize ", b, " does not divide the spatial dims of ",
                         DescribeTensor(in));
  const int64_t n = in.dim(0), c = in.dim(1), h = in.dim(2) / b, w = in.dim(3) / b;
  KILN_ASSIGN_OR_RETURN(Tensor t, Transpose(in.Reshaped({n, c, h, b, w, b}), {0, 3, 5, 1, 2, 4}));
  return t.Reshaped({n, c * b * b, h, w});
}

Expected<Tensor> Trilu(const Tensor& in, int64_t k, bool upper) {
  if (in.rank() < 2) return Status::Error("input must have rank >= 2, got ", DescribeTensor(in));
  if (in.dtype() == DType::kString) return Status::Error("string input is not supported");
  const int64_t rows = in.dim(in.rank() - 2), cols = in.dim(in.rank() - 1);
  Tensor out(in.dtype(), in.dims());  // zero bytes are zero in every numeric type
  const int64_t mats = rows * cols == 0 ? 0 : in.numel() / (rows * cols);
  WithElementCopier(in, &out, [&](auto copy) {
    for (int64_t m = 0; m < mats; ++m)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          // Compared without forming j - i - k, which a huge k could overflow.
          const bool keep = upper ? (j - i >= k) : (j - i <= k);
          if (keep) copy((m * rows + i) * cols + j, (m * rows + i) * cols + j);
        }
  });
  return out;
}

Expected<Tensor> ReverseSequence(const Tensor& in, const std::vector<int64_t>& seq_lens,
                                 int64_t batch_axis, int64_t time_axis) {
  if (in.rank() < 2) return Status::Error("input must have rank >= 2, got ", DescribeTensor(in));
  if (batch_axis == time_axis || batch_axis < 0 || batch_axis > 1 || time_axis < 0 || time_axis > 1)
    return Status::Error("batch_axis and time_axis must be 0 and 1 in some order");
  const int64_t batch = in.dim(batch_axis), steps = in.dim(time_axis);
  if (static_cast<int64_t>(seq_lens.size()) != batch)
    return Status::Error("sequence_lens has ", seq_lens.size(), " entries for batch ", batch);
  for (int64_t len : seq_lens)
    if (len < 0 || len > steps)
      return Status::Error("sequence length ", len, " is outside [0, ", steps, "]");
  const std::vector<int64_t> strides = Strides(in.dims());
  Tensor out(in.dtype(), in.dims());
  if (out.numel() == 0) return out;
  // The two axes are 0 and 1, so each (batch, time) pair owns one contiguous run of `inner`.
  const int64_t inner = strides[1];
  WithElementCopier(in, &out, [&](auto copy) {
    for (int64_t bi = 0; bi < batch; ++bi)
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t src_t = t < seq_lens[bi] ? seq_lens[bi] - 1 - t : t;
        const int64_t dst = bi * strides[batch_axis] + t * strides[time_axis];
        const int64_t src = bi * strides[batch_axis] + src_t * strides[time_axis];
        for (int64_t i = 0; i < inner; ++i) copy(src + i, dst + i);
      }
  });
  return out;
}

Expected<Tensor> Compress(const Tensor& in, const std::vector<bool>& condition, int64_t axis) {
  Tensor src = axis < 0 ? in.Reshaped({in.numel()}) : in;
  const int64_t a = axis < 0 ? 0 : axis;
  if (a >= src.rank()) return Status::Error("axis ", axis, " is out of range");
  const int64_t d = src.dim(a);
  std::vector<int64_t> keep;
  for (size_t i = 0; i < condition.size(); ++i) {
    if (!condition[i]) continue;
    if (static_cast<int64_t>(i) >= d)
      return Status::Error("condition selects index ", i, " but the axis has size ", d);
    keep.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> out_dims = src.dims();
  out_dims[a] = static_cast<int64_t>(keep.size());
  Tensor out(in.dtype(), out_dims);
  if (out.numel() == 0) return out;
  AxisMaps maps(src.rank());
  for (int64_t k = 0; k < src.rank(); ++k) {
    if (k == a) {
      maps[k] = keep;
      continue;
    }
    maps[k].resize(out_dims[k]);
    for (int64_t o = 0; o < out_dims[k]; ++o) maps[k][o] = o;
  }
  AxisMapCopy(src, maps, &out);
  return out;
}

Expected<Tensor> Range(const Tensor& start, const Tensor& limit, const Tensor& delta) {
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1)
    return Status::Error("start, limit and delta must be scalars");
  const DType t = start.dtype();
  if (limit.dtype() != t || delta.dtype() != t)
    return Status::Error("start, limit and delta must share one type");
  int64_t count = 0;
  if (IsFloat(t)) {
    const double s = start.AsDouble(0), l = limit.AsDouble(0), d = delta.AsDouble(0);
    if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d))
      return Status::Error("Range needs finite start/limit and a nonzero delta");
    const double c = std::ceil((l - s) / d);
    if (c > 1e15) return Status::Error("Range of ", c, " elements is too large");
    count = c > 0 ? static_cast<int64_t>(c) : 0;
  } else if (IsInteger(t)) {
    const __int128 s = start.AsInt64(0), l = limit.AsInt64(0), d = delta.AsInt64(0);
    if (d == 0) return Status::Error("Range needs a nonzero delta");
    // Ceiling division in 128 bits: limit - start cannot overflow there.
    const __int128 span = l - s;
    __int128 c = span / d;
    if (c * d != span && ((span > 0) == (d > 0))) ++c;
    if (c > (__int128{1} << 50)) return Status::Error("Range is too large");
    count = c > 0 ? static_cast<int64_t>(c) : 0;
  } else {
    return Status::Error("Range does not support ", DTypeName(t));
  }
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Make(t, {count}, "Range output"));
  switch (t) {
    case DType::kFloat16:
    case DType::kBFloat16: {
      const float s = static_cast<float>(start.AsDouble(0)),
                  d = static_cast<float>(delta.AsDouble(0));
      uint16_t* o = out.data<uint16_t>();
      for (int64_t i = 0; i < count; ++i)
        o[i] = t == DType::kFloat16 ? FloatToHalf(s + i * d) : FloatToBFloat16(s + i * d);
      break;
    }
    default:
      KILN_DISPATCH_NUMERIC(t, T, break, {
        const T s = start.data<T>()[0], d = delta.data<T>()[0];
        T* o = out.data<T>();
        for (int64_t i = 0; i < count; ++i) o[i] = static_cast<T>(s + static_cast<T>(i) * d);
      });
  }
  return out;
}

Expected<Tensor> EyeLike(const std::vector<int64_t>& dims, DType dtype, int64_t k) {
  if (dims.size() != 2) return Status::Error("EyeLike needs a 2-D shape, got ", DimsToString(dims));
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Make(dtype, dims, "EyeLike output"));
  if (out.numel() == 0) return out;  // dims may be huge around a zero
  for (int64_t i = 0; i < dims[0]; ++i) {
    // j = i + k, computed only when it lands inside the row.
    if (k >= dims[1] || (k < 0 && -k > i)) continue;
    const int64_t j = i + k;
    if (j < 0 || j >= dims[1]) continue;
    const int64_t at = i * dims[1] + j;
    switch (dtype) {
      case DType::kBool:
        out.data<bool>()[at] = true;
        break;
      case DType::kFloat16:
        out.data<uint16_t>()[at] = FloatToHalf(1.0f);
        break;
      case DType::kBFloat16:
        out.data<uint16_t>()[at] = FloatToBFloat16(1.0f);
        break;
      default:
        KILN_DISPATCH_NUMERIC(dtype, T,
                              return Status::Error("EyeLike does not support ", DTypeName(dtype)),
                              out.data<T>()[at] = T(1));
    }
  }
  return out;
}

}  // namespace kiln::ref
