// Reference TopK, CumSum and NonMaxSuppression.
#pragma once

#include <cstdint>
#include <optional>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ref {

struct TopKParams {
  int64_t axis = -1;  // in [0, rank)
  int64_t k = 0;      // in [0, dim(axis)]
  bool largest = true;
  bool sorted = true;  // results are always sorted; sorted=false allows any order
};

// The k largest (or smallest) elements along `axis` and their int64 indices. Equal values keep
// the lower index first. NaN ranks above every number (so it comes first when largest).
Status TopK(const Tensor& x, const TopKParams& p, Tensor* values, Tensor* indices);

// Running sum along `axis` (in [0, rank)); exclusive shifts by one (the first sum is 0), reverse
// sums from the end. Floats accumulate in double; integers wrap like the type would.
Expected<Tensor> CumSum(const Tensor& x, int64_t axis, bool exclusive, bool reverse);

struct NmsParams {
  bool center_point_box = false;  // boxes are [x_center, y_center, w, h] instead of corners
  int64_t max_output_boxes_per_class = 0;  // >= 0; 0 selects nothing
  float iou_threshold = 0;                 // in [0, 1]; a box whose IoU exceeds it is dropped
  std::optional<float> score_threshold;    // boxes scoring at or below it are never selected
};

// Greedy non-maximum suppression per (batch, class). boxes [B, S, 4], scores [B, C, S], both
// float32/float64. Returns int64 [num_selected, 3] rows of (batch, class, box), ordered by batch,
// then class, then descending score (ties by lower box index).
Expected<Tensor> NonMaxSuppression(const Tensor& boxes, const Tensor& scores, const NmsParams& p);

}  // namespace kiln::ref
