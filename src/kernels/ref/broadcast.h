// Broadcasting and index helpers shared by the reference kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "support/status.h"

namespace kiln::ref {

// Numpy broadcast of two or more shapes; error if they do not broadcast.
Expected<std::vector<int64_t>> BroadcastDims(const std::vector<std::vector<int64_t>>& shapes);
// Row-major strides of dims.
std::vector<int64_t> Strides(const std::vector<int64_t>& dims);
// Strides of `in` viewed as `out` under broadcasting: 0 where in's dim is 1 (or missing).
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& in,
                                      const std::vector<int64_t>& out);

// Walks every index of `dims` in row-major order, tracking one linear offset per operand.
// for (BroadcastIter it(out_dims, {sa, sb}); !it.done(); it.next()) out[it.index()] = a[it.offset(0)] ...
class BroadcastIter {
 public:
  BroadcastIter(const std::vector<int64_t>& dims, std::vector<std::vector<int64_t>> strides);
  bool done() const { return done_; }
  int64_t index() const { return index_; }
  int64_t offset(size_t operand) const { return offsets_[operand]; }
  void next();

 private:
  std::vector<int64_t> dims_, pos_;
  std::vector<std::vector<int64_t>> strides_;
  std::vector<int64_t> offsets_;
  int64_t index_ = 0;
  bool done_ = false;
};

}  // namespace kiln::ref
