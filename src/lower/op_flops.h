// Floating-point operations of one node, counted from its static shapes for the plain algorithm
// (BENCHMARKING.md, rule 5: when kiln skips work, the count does not shrink, so GFLOP/s stay
// comparable). Multiply and add count as two.
#pragma once

#include "ir/graph.h"

namespace kiln::lower {

// Conv: 2 * N * M * C/g * prod(kernel) * prod(output spatial); ConvTranspose: 2 * N * C *
// M/g * prod(kernel) * prod(input spatial); Gemm and MatMul: 2 * M * N * K (times the batch).
// Bias adds are not counted. Other ops: 0. -1 when a shape the count needs is not static.
double NodeFlops(const ir::Node& node);

}  // namespace kiln::lower
