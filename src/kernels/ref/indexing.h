// Reference kernels for ops that read or write through index tensors: Gather, GatherElements,
// GatherND, ScatterElements, ScatterND, OneHot, NonZero, Unique.
//
// Index tensors are int32 or int64. A negative index wraps once (i + size); anything still
// outside [0, size) is an error that names the index, the axis and its size -- never a read or
// write out of bounds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ref {

// Wraps a negative index once and checks it against `size`.
Expected<int64_t> WrapIndex(int64_t index, int64_t size, int64_t axis);

// axis is normalized (0 <= axis < data.rank()).
Expected<Tensor> Gather(const Tensor& data, const Tensor& indices, int64_t axis);
Expected<Tensor> GatherElements(const Tensor& data, const Tensor& indices, int64_t axis);
Expected<Tensor> GatherND(const Tensor& data, const Tensor& indices, int64_t batch_dims);

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };
// Parses "none", "add", "mul", "max", "min".
Expected<Reduction> ParseReduction(const std::string& s);

Expected<Tensor> ScatterElements(const Tensor& data, const Tensor& indices, const Tensor& updates,
                                 int64_t axis, Reduction reduction);
Expected<Tensor> ScatterND(const Tensor& data, const Tensor& indices, const Tensor& updates,
                           Reduction reduction);

// values holds [off, on]; axis is normalized into [0, indices.rank()].
Expected<Tensor> OneHot(const Tensor& indices, int64_t depth, const Tensor& values, int64_t axis);
// int64 [max(rank, 1), count] of the coordinates of the nonzero elements, row-major order.
Expected<Tensor> NonZero(const Tensor& x);

struct UniqueResult {
  Tensor y, indices, inverse_indices, counts;
};
// axis < 0 means the flattened input; otherwise a normalized axis.
Expected<UniqueResult> Unique(const Tensor& x, int64_t axis, bool sorted);

}  // namespace kiln::ref
