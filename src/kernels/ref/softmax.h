// Reference Softmax / LogSoftmax / Hardmax and the two classification losses built on them.
#pragma once

#include <cstdint>
#include <optional>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ref {

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

// Normalizes float32/float64 `in`, viewed as [outer, len, inner], over the middle dimension.
// The caller picks the view: one axis (opset >= 13) or the flattened trailing dims (older
// opsets). The max is subtracted first so large inputs do not overflow; sums are in double.
// Hardmax marks the first maximum of each row with 1.
Expected<Tensor> Softmax(const Tensor& in, SoftmaxKind kind, int64_t outer, int64_t len,
                         int64_t inner);

enum class LossReduction { kNone, kSum, kMean };

struct LossParams {
  LossReduction reduction = LossReduction::kMean;
  std::optional<int64_t> ignore_index;  // targets equal to it contribute nothing
};

// NegativeLogLikelihoodLoss. input [N, C, d1..dk] (float32/float64), target [N, d1..dk]
// (int32/int64, each in [0, C) unless ignored), weight [C] or null. Per element the loss is
// -input[n, t, d] * weight[t]; kMean divides the sum by the total weight of the elements that
// are not ignored (NaN when every element is ignored).
Expected<Tensor> NllLoss(const Tensor& input, const Tensor& target, const Tensor* weight,
                         const LossParams& p);

// SoftmaxCrossEntropyLoss: NllLoss over LogSoftmax(scores) along dim 1. Returns the loss and the
// log-probabilities (same shape as scores).
struct CrossEntropyResult {
  Tensor loss;
  Tensor log_prob;
};
Expected<CrossEntropyResult> SoftmaxCrossEntropy(const Tensor& scores, const Tensor& labels,
                                                 const Tensor* weight, const LossParams& p);

}  // namespace kiln::ref
