// Reference pooling: windowed max / average / Lp pooling over 1-3 spatial dims (as 3-D, see
// conv.h), their global forms, and MaxUnpool's scatter.
#pragma once

#include <array>
#include <cstdint>

#include "kernels/ref/conv.h"
#include "support/status.h"

namespace kiln::ref {

// g.batch * g.in_channels planes; g.out_channels is ignored (pooling keeps channels).
struct PoolGeometry {
  ConvGeometry g;
  std::array<int64_t, 3> pad_end{0, 0, 0};
};

// Max over each window; padding never wins. `indices` (nullable) receives the flat index of each
// maximum in x (row-major, or column-major over the spatial dims when col_major), counting the
// image and channel as ONNX's MaxPool does.
template <class T>
void MaxPool(const PoolGeometry& p, const T* x, T* y, int64_t* indices, bool col_major);

// Mean over each window. count_include_pad counts positions in the explicit padding (not those
// past it, which ceil_mode may add); otherwise only positions inside the input count.
template <class T>
void AveragePool(const PoolGeometry& p, const T* x, T* y, bool count_include_pad);

// (sum |x|^p)^(1/p) over each window; padding contributes nothing.
template <class T>
void LpPool(const PoolGeometry& p, const T* x, T* y, double power);

enum class GlobalPoolKind { kAverage, kMax, kLp };
// One value per plane of `plane_size` elements; `planes` planes.
template <class T>
void GlobalPool(GlobalPoolKind kind, int64_t planes, int64_t plane_size, const T* x, T* y,
                double power);

// y (zero-filled, y_numel elements) gets y[indices[i]] = x[i]; an index outside y is an error.
template <class T>
Status MaxUnpool(const T* x, const int64_t* indices, int64_t n, T* y, int64_t y_numel);

}  // namespace kiln::ref
