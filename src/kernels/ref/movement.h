// Reference kernels for ops that move elements without arithmetic: Transpose, Concat, Split,
// Slice, Pad, Tile, Expand, DepthToSpace, Trilu, ReverseSequence, Compress, and the creation
// kernels (Range, EyeLike, ConstantOfShape). Parameters arrive validated and normalized by the
// op layer (axes in range, per-axis vectors of full rank); the kernels still refuse what would
// read or write out of bounds.
//
// Every kernel moves elements by their byte size, so one instantiation serves all types of that
// size (float16 and int16 alike); string tensors are copied element by element.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ref {

// Calls body(copy) where copy(i, j) sets dst element j to src element i. The copier works on the
// element's byte size, so 4 instantiations serve every fixed-size type; strings copy as strings.
// src and dst must have the same dtype.
template <class U, class F>
void WithCopierOf(const Tensor& src, Tensor* dst, F& body) {
  const U* s = static_cast<const U*>(src.raw());
  U* d = static_cast<U*>(dst->raw());
  body([s, d](int64_t i, int64_t j) { d[j] = s[i]; });
}
template <class F>
void WithElementCopier(const Tensor& src, Tensor* dst, F&& body) {
  if (src.dtype() == DType::kString) {
    const std::string* s = src.strings().data();
    std::string* d = dst->strings().data();
    body([s, d](int64_t i, int64_t j) { d[j] = s[i]; });
    return;
  }
  switch (DTypeSize(src.dtype())) {
    case 1:
      WithCopierOf<uint8_t>(src, dst, body);
      break;
    case 2:
      WithCopierOf<uint16_t>(src, dst, body);
      break;
    case 4:
      WithCopierOf<uint32_t>(src, dst, body);
      break;
    case 8:
      WithCopierOf<uint64_t>(src, dst, body);
      break;
    default:
      break;
  }
}

// For each axis of the output, the input coordinate that each output coordinate reads, or -1 for
// "leave the fill value". Slice, Pad, Tile and Expand are all this one copy.
using AxisMaps = std::vector<std::vector<int64_t>>;

// out[i0..ik] = in[maps[0][i0], ..., maps[k][ik]]; positions with a -1 keep out's current value.
// out must already have dims {maps[0].size(), ...} and in's dtype and rank.
void AxisMapCopy(const Tensor& in, const AxisMaps& maps, Tensor* out);

// Copies a strided view: for every index of `dims`, dst[dst_offset + idx . dst_strides] =
// src[src_offset + idx . src_strides]. Offsets and strides are in elements.
void StridedCopy(const Tensor& src, int64_t src_offset, const std::vector<int64_t>& src_strides,
                 Tensor* dst, int64_t dst_offset, const std::vector<int64_t>& dst_strides,
                 const std::vector<int64_t>& dims);

// Fills every element of out with element 0 of `value` (same dtype as out).
void FillWith(const Tensor& value, Tensor* out);

Expected<Tensor> Transpose(const Tensor& in, const std::vector<int64_t>& perm);
// All inputs share dtype and rank and agree on every dim but `axis`.
Expected<Tensor> Concat(const std::vector<const Tensor*>& inputs, int64_t axis);
// sizes sum to in.dim(axis).
Expected<std::vector<Tensor>> Split(const Tensor& in, int64_t axis,
                                    const std::vector<int64_t>& sizes);

// ONNX Slice's rule for one axis of size d: the first index read and the element count. start
// and end may be any int64 (INT64_MIN and INT64_MAX mean "from the far end"); step is not 0.
std::pair<int64_t, int64_t> SliceAxis(int64_t start, int64_t end, int64_t step, int64_t d);

// Full-rank slice parameters: starts already clamped per ONNX rules, count elements per axis.
struct SliceParams {
  std::vector<int64_t> starts, steps, counts;
};
Expected<Tensor> Slice(const Tensor& in, const SliceParams& p);

enum class PadMode { kConstant, kReflect, kEdge, kWrap };
// pads = [begin_0..begin_{r-1}, end_0..end_{r-1}], negative values crop. `value` is a scalar of
// in's dtype (used in constant mode; may be undefined for zero).
Expected<Tensor> Pad(const Tensor& in, const std::vector<int64_t>& pads, PadMode mode,
                     const Tensor& value);
Expected<Tensor> Tile(const Tensor& in, const std::vector<int64_t>& repeats);
// Broadcasts in to out_dims (numpy rules; out_dims already the broadcast result).
Expected<Tensor> Expand(const Tensor& in, const std::vector<int64_t>& out_dims);

// NCHW only. crd selects the CRD channel order, else DCR.
Expected<Tensor> DepthToSpace(const Tensor& in, int64_t blocksize, bool crd);
Expected<Tensor> SpaceToDepth(const Tensor& in, int64_t blocksize);

// Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims.
Expected<Tensor> Trilu(const Tensor& in, int64_t k, bool upper);
// Reverses the first seq_lens[b] elements along time_axis of each batch b.
Expected<Tensor> ReverseSequence(const Tensor& in, const std::vector<int64_t>& seq_lens,
                                 int64_t batch_axis, int64_t time_axis);
// Keeps the slices along `axis` (or of the flattened input when axis < 0) whose condition is true.
Expected<Tensor> Compress(const Tensor& in, const std::vector<bool>& condition, int64_t axis);

// start, limit and delta are scalars of one numeric dtype.
Expected<Tensor> Range(const Tensor& start, const Tensor& limit, const Tensor& delta);
// Ones on diagonal k of a 2-D tensor, zeros elsewhere.
Expected<Tensor> EyeLike(const std::vector<int64_t>& dims, DType dtype, int64_t k);

}  // namespace kiln::ref
