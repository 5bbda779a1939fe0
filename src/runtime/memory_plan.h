// Static memory planning: places buffers with known sizes and lifetimes in one arena so that
// buffers whose lifetimes overlap never overlap in memory, a buffer may take over the memory of
// one that dies at the step it is born (in place), and a buffer may live inside another one
// (a view: a concat's input written straight into its place in the concat's output).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::runtime {

inline constexpr size_t kArenaAlignment = 64;

struct BufferRequest {
  size_t bytes = 0;
  // Steps [first, last]: written by step `first`, last read by step `last` (first <= last).
  int32_t first = 0;
  int32_t last = 0;
  // Index of an earlier request this buffer may share in place (same bytes, last == this
  // buffer's first), or -1. The planner may decline.
  int32_t in_place_of = -1;
  // Index of a request this buffer lives inside, at byte `view_offset`, or -1. The parent's
  // memory then stays reserved from the first birth to the last death of all of them; views
  // nest. The planner may decline (then the buffer gets memory of its own).
  int32_t view_of = -1;
  size_t view_offset = 0;
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // one per request, multiples of kArenaAlignment
  size_t arena_bytes = 0;       // the arena size the offsets need
  size_t total_bytes = 0;       // sum of all requests (aligned): the size without reuse
};

// Greedy by size (largest first, each at the lowest offset that no buffer with an overlapping
// lifetime occupies), after in-place pairs are merged into one lifetime.
//
// It cannot fail, so its inputs are the caller's to get right:
// - Every request has first <= last (an inverted range is read as [last, first]).
// - Lifetimes are inclusive: a buffer born at the step another dies overlaps it, unless it is
//   an honoured in-place pair.
// - in_place_of is honoured only when it names an earlier request p with p.last == first, the
//   same aligned size, and no other request already took p over; otherwise it is ignored and
//   the request gets memory of its own.
// - view_of is honoured when it names another request whose bytes hold [view_offset,
//   view_offset + bytes), view_offset is a multiple of kArenaAlignment, and following view_of
//   from it ends without a cycle; a view's offset is its root's plus the offsets on the way.
//   A request in a view relation (either side) neither takes over nor is taken over in place:
//   a view's bytes belong to its root for the root's whole lifetime.
// - Zero-byte requests get offset 0 and take no space.
// Deterministic: ties in size go to the earlier first step, then the lower request index.
// O(n^2) in the number of buffers at worst; 5,000 requests plan in a few milliseconds.
MemoryPlan PlanMemory(const std::vector<BufferRequest>& requests);

}  // namespace kiln::runtime
