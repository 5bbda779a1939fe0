// Reference resampling kernels: Resize (and Upsample, which is Resize with fixed options),
// GridSample and RoiAlign. Resize is separable, so it runs one axis at a time through a 1-D
// weight table; the arithmetic is float64 whatever the element type, like ONNX's reference.
#pragma once

#include <cstdint>
#include <vector>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ref {

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class ResizeCoord {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize,
};
// kSimple is Upsample's and Resize-10's rule: floor when enlarging, ceil when shrinking.
enum class NearestRound { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

struct ResizeOptions {
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoord coord = ResizeCoord::kHalfPixel;
  NearestRound nearest = NearestRound::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0.0;
  bool antialias = false;  // widens linear/cubic filters by 1/scale when downsampling
};

// What one input axis becomes. `scale` is the factor the coordinate transform uses (the given
// scale, or out_size / in_size when sizes were given); roi applies to tf_crop_and_resize only.
struct ResizeAxis {
  int64_t out_size = 0;
  double scale = 1.0;
  double roi_start = 0.0;
  double roi_end = 1.0;
};

// Resizes `x` (float32, float64 or any integer type) to `axes[i].out_size` along each axis.
// Integer results are rounded half to even and saturated. axes.size() must equal x.rank().
Status Resize(const Tensor& x, const std::vector<ResizeAxis>& axes, const ResizeOptions& options,
              Tensor* out);

enum class GridSampleMode { kBilinear, kNearest, kBicubic };
enum class GridSamplePadding { kZeros, kBorder, kReflection };

// GridSample over N-d spatial dims: x [N, C, D1..Dk], grid [N, O1..Ok, k] with normalized
// coordinates in [-1, 1] ordered (x = innermost dim first). Output [N, C, O1..Ok].
Status GridSample(const Tensor& x, const Tensor& grid, GridSampleMode mode,
                  GridSamplePadding padding, bool align_corners, Tensor* out);

enum class RoiAlignPool { kAvg, kMax };

struct RoiAlignOptions {
  RoiAlignPool pool = RoiAlignPool::kAvg;
  int64_t output_height = 1;
  int64_t output_width = 1;
  int64_t sampling_ratio = 0;  // 0: adaptive, ceil(roi size / output size)
  double spatial_scale = 1.0;
  bool half_pixel = true;  // opset 16 default; false is the opset 10 "output_half_pixel"
};

// RoiAlign: x [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R] (int64 values,
// already checked against N by the caller). Output [R, C, output_height, output_width].
Status RoiAlign(const Tensor& x, const Tensor& rois, const std::vector<int64_t>& batch_indices,
                const RoiAlignOptions& options, Tensor* out);

}  // namespace kiln::ref
