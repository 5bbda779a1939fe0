// Reference reductions: Reduce* over a set of axes, and ArgMax / ArgMin along one axis.
#pragma once

#include <cstdint>
#include <vector>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ref {

enum class ReduceKind {
  kSum,
  kMean,
  kMax,
  kMin,
  kProd,
  kL1,
  kL2,
  kLogSum,
  kLogSumExp,
  kSumSquare,
};

// Reduces `in` over `axes` (each in [0, rank), no duplicates; empty means no axis, so the
// result is `in` element-wise finalized, e.g. ReduceL1 gives |x|). Float types accumulate in
// double; integer Sum/Prod/L1/SumSquare/Mean/Max/Min are exact (sums wrap like the type would),
// and integer L2/LogSum/LogSumExp go through double and saturate. A reduction over no elements
// gives the identity of the operation: 0 for sums, 1 for Prod, -inf (or the type's lowest) for
// Max and LogSum(Exp), +inf (or the highest) for Min, NaN (0 for integers) for Mean.
Expected<Tensor> Reduce(const Tensor& in, ReduceKind kind, const std::vector<int64_t>& axes,
                        bool keepdims);

// Index of the largest (is_max) or smallest element along `axis` (in [0, rank)), as int64.
// Ties go to the first index, or the last with select_last_index. NaN never wins a comparison.
Expected<Tensor> ArgReduce(const Tensor& in, bool is_max, int64_t axis, bool keepdims,
                           bool select_last_index);

}  // namespace kiln::ref
