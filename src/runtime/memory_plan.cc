#include "runtime/memory_plan.h"

namespace kiln::runtime {

// Placeholder until the planner lands: every buffer gets its own memory (correct, no reuse).
MemoryPlan PlanMemory(const std::vector<BufferRequest>& requests) {
  MemoryPlan plan;
  for (const BufferRequest& r : requests) {
    const size_t bytes = (r.bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    plan.offsets.push_back(plan.arena_bytes);
    plan.arena_bytes += bytes;
    plan.total_bytes += bytes;
  }
  return plan;
}

}  // namespace kiln::runtime
