// fp32 softmax and log-softmax over the innermost axis of a [rows, cols] matrix.
//
// Numerically stable: each row's maximum is subtracted before exp, so no input overflows. The
// driver is portable C++ and splits rows over a ThreadPool; per row it runs three microkernels
// (max; sum of exp(x - max), stored for softmax; scale by 1 / sum, or add -max - log(sum) for
// log-softmax). y may equal x (in place).
#pragma once

#include <cstddef>
#include <optional>

#include "support/cpu.h"
#include "support/status.h"
#include "support/thread_pool.h"

namespace kiln::softmax {

struct Options {
  bool log = false;             // log-softmax
  ThreadPool* pool = nullptr;   // null: run on the caller only
  std::optional<IsaLevel> isa;  // caps the ISA below ActiveIsa() (tests, benchmarks)
};

// y[r, :] = softmax(x[r, :]) for r < rows; rows are contiguous, `cols` floats each.
Status Softmax(size_t rows, size_t cols, const float* x, float* y, const Options& options = {});

}  // namespace kiln::softmax
