// Reference Einsum: any equation (explicit or implicit output, repeated labels for diagonals,
// ellipsis with broadcasting) as one loop over the output labels and one over the summed labels.
// Each operand is read through per-label strides, so diagonals and broadcasts need no copies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/status.h"

namespace kiln::ref {

struct EinsumPlan {
  std::vector<int64_t> out_dims;
  // Loop extents: the output's labels in output order, then the summed labels.
  std::vector<int64_t> loop_sizes;
  size_t num_out_loops = 0;
  // strides[i][l]: operand i's element stride along loop l (0 if it does not use that label).
  std::vector<std::vector<int64_t>> strides;
};

// Parses `equation` for operands of the given shapes; errors say what is wrong with it.
Expected<EinsumPlan> PlanEinsum(const std::string& equation,
                                const std::vector<std::vector<int64_t>>& shapes);

// Floats sum in double, integers wrap modulo 2^64 before narrowing.
template <class T>
void Einsum(const EinsumPlan& plan, const std::vector<const T*>& operands, T* y);

}  // namespace kiln::ref
