// Dispatch over a microkernel table. Rows go from the oldest ISA to the newest and start at
// scalar; the newest row the CPU (and an optional cap) allows is chosen. Used by the drivers
// only: ISA-flagged microkernel files must not instantiate shared templates (see CMakeLists).
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>

#include "support/cpu.h"

namespace kiln::kernels {

template <class Row, size_t N>
constexpr bool IsaRowsAreOrdered(const Row (&table)[N]) {
  for (size_t i = 1; i < N; ++i)
    if (table[i].isa <= table[i - 1].isa) return false;
  return table[0].isa == IsaLevel::kScalar;
}

template <class Row>
const Row& SelectByIsa(std::span<const Row> table, IsaLevel cap) {
  cap = std::min(cap, ActiveIsa());
  const Row* best = &table[0];
  for (const Row& row : table)
    if (row.isa <= cap) best = &row;
  return *best;
}

}  // namespace kiln::kernels
