// fp32 layer normalization over the innermost axis of a [rows, cols] matrix:
//   y = (x - mean) / sqrt(var + epsilon) * scale + bias,
// with the population variance. Two passes over each row (a first mean, then the sums of the
// differences from it and of their squares, which correct the mean and give the variance) keep
// both accurate when the mean is large against the spread.
// The driver is portable C++ and splits rows over a ThreadPool. y may equal x (in place).
#pragma once

#include <cstddef>
#include <optional>

#include "support/cpu.h"
#include "support/status.h"
#include "support/thread_pool.h"

namespace kiln::layernorm {

struct Options {
  ThreadPool* pool = nullptr;   // null: run on the caller only
  std::optional<IsaLevel> isa;  // caps the ISA below ActiveIsa() (tests, benchmarks)
};

// scale has cols values; bias has cols values or is null. mean and inv_std (nullable) receive
// one value per row (ONNX LayerNormalization's optional outputs).
Status LayerNorm(size_t rows, size_t cols, const float* x, const float* scale, const float* bias,
                 float epsilon, float* y, float* mean = nullptr, float* inv_std = nullptr,
                 const Options& options = {});

}  // namespace kiln::layernorm
