#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace kiln::runtime {
namespace {

size_t Aligned(size_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

// The in-place rule restated from the header, independently of the planner: which requests
// may share their predecessor's memory. group[r] is the request heading r's chain.
std::vector<int32_t> InPlaceGroups(const std::vector<BufferRequest>& rs) {
  std::vector<int32_t> group(rs.size());
  std::vector<bool> taken_over(rs.size(), false);
  for (size_t r = 0; r < rs.size(); ++r) {
    group[r] = static_cast<int32_t>(r);
    const int32_t p = rs[r].in_place_of;
    if (p < 0 || static_cast<size_t>(p) >= r || taken_over[p]) continue;
    if (rs[p].last != rs[r].first || Aligned(rs[p].bytes) != Aligned(rs[r].bytes)) continue;
    taken_over[p] = true;
    group[r] = group[p];
  }
  return group;
}

// Checks every property of a plan by brute force over all pairs; returns "" or what is wrong.
std::string CheckPlan(const std::vector<BufferRequest>& rs, const MemoryPlan& plan) {
  if (plan.offsets.size() != rs.size()) return "one offset per request";
  const std::vector<int32_t> group = InPlaceGroups(rs);
  size_t arena = 0;
  size_t total = 0;
  for (size_t i = 0; i < rs.size(); ++i) {
    const size_t size = Aligned(rs[i].bytes);
    if (plan.offsets[i] % kArenaAlignment != 0) return "offset " + std::to_string(i) + " unaligned";
    if (size > 0) arena = std::max(arena, plan.offsets[i] + size);
    total += size;
    if (group[i] != static_cast<int32_t>(i) && plan.offsets[i] != plan.offsets[rs[i].in_place_of])
      return "valid in-place request " + std::to_string(i) + " not honoured";
  }
  if (plan.arena_bytes != arena) return "arena_bytes is not the highest end";
  if (plan.total_bytes != total) return "total_bytes is not the sum of aligned sizes";
  if (plan.arena_bytes > plan.total_bytes) return "arena larger than no reuse at all";
  for (size_t i = 0; i < rs.size(); ++i) {
    for (size_t j = i + 1; j < rs.size(); ++j) {
      if (group[i] == group[j]) continue;
      const bool alive_together = rs[i].first <= rs[j].last && rs[j].first <= rs[i].last;
      const size_t ei = plan.offsets[i] + Aligned(rs[i].bytes);
      const size_t ej = plan.offsets[j] + Aligned(rs[j].bytes);
      const bool share_memory = plan.offsets[i] < ej && plan.offsets[j] < ei;
      if (alive_together && share_memory)
        return "requests " + std::to_string(i) + " and " + std::to_string(j) +
               " are alive together and overlap in memory";
    }
  }
  return "";
}

// Random request sets shaped like a network's: mostly short lifetimes, a few long ones (skip
// connections), sizes from a small set so ties and in-place candidates are common, some zero,
// and in_place_of both valid and invalid in every way the header names.
std::vector<BufferRequest> RandomRequests(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  auto below = [&](uint32_t k) { return k == 0 ? 0u : static_cast<uint32_t>(rng() % k); };
  const size_t sizes[] = {0, 1, 64, 100, 128, 4096, 4000, 65536, 1 << 20, 3 << 18};
  const int32_t steps = static_cast<int32_t>(n / 2 + 2);
  std::vector<BufferRequest> rs;
  for (size_t r = 0; r < n; ++r) {
    BufferRequest req;
    req.bytes = sizes[below(std::size(sizes))];
    req.first = static_cast<int32_t>(below(steps));
    req.last = req.first + static_cast<int32_t>(below(8) == 0 ? below(steps) : below(3));
    const uint32_t kind = below(10);
    if (r > 0 && kind < 4) {
      // A candidate that may be valid (unless p was taken over already).
      const int32_t p = static_cast<int32_t>(below(static_cast<uint32_t>(r)));
      req.first = rs[p].last;
      req.last = req.first + static_cast<int32_t>(below(3));
      req.bytes = Aligned(rs[p].bytes) - (rs[p].bytes > 0 ? below(kArenaAlignment) : 0);
      req.in_place_of = p;
      if (kind == 3) req.bytes += kArenaAlignment;                 // size differs
      if (kind == 2 && below(2) == 0) req.first = rs[p].last + 1;  // not born where p dies
      if (req.last < req.first) req.last = req.first;
    } else if (kind == 4) {
      const int32_t invalid[] = {static_cast<int32_t>(r), static_cast<int32_t>(r + 3), -2,
                                 static_cast<int32_t>(n + 100)};
      req.in_place_of = invalid[below(4)];
    }
    rs.push_back(req);
  }
  return rs;
}

TEST(MemoryPlan, RandomPlansAreValid) {
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    const auto rs = RandomRequests(seed, 1 + seed % 97);
    const MemoryPlan plan = PlanMemory(rs);
    const std::string error = CheckPlan(rs, plan);
    ASSERT_EQ(error, "") << "seed " << seed;
  }
}

TEST(MemoryPlan, LargeRandomPlanIsValid) {
  const auto rs = RandomRequests(12345, 2000);
  const MemoryPlan plan = PlanMemory(rs);
  EXPECT_EQ(CheckPlan(rs, plan), "");
  // Short lifetimes leave lots to reuse; a planner that reused nothing would still be valid.
  EXPECT_LT(plan.arena_bytes * 4, plan.total_bytes);
}

TEST(MemoryPlan, RandomPlansHonourSomeAndIgnoreSomeInPlace) {
  // Guards the generator: the random sets must exercise both sides of the in-place rule.
  size_t honoured = 0;
  size_t ignored = 0;
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    const auto rs = RandomRequests(seed, 1 + seed % 97);
    const auto group = InPlaceGroups(rs);
    for (size_t r = 0; r < rs.size(); ++r) {
      if (rs[r].in_place_of == -1) continue;
      (group[r] != static_cast<int32_t>(r) ? honoured : ignored)++;
    }
  }
  EXPECT_GT(honoured, 200u);
  EXPECT_GT(ignored, 200u);
}

TEST(MemoryPlan, EmptyAndZeroBytes) {
  const MemoryPlan empty = PlanMemory({});
  EXPECT_TRUE(empty.offsets.empty());
  EXPECT_EQ(empty.arena_bytes, 0u);
  EXPECT_EQ(empty.total_bytes, 0u);

  const std::vector<BufferRequest> rs = {{0, 0, 5, -1}, {256, 1, 2, -1}, {0, 1, 1, -1}};
  const MemoryPlan plan = PlanMemory(rs);
  EXPECT_EQ(CheckPlan(rs, plan), "");
  EXPECT_EQ(plan.arena_bytes, 256u);
  EXPECT_EQ(plan.total_bytes, 256u);
}

TEST(MemoryPlan, ChainNeedsTwoBuffersWithoutInPlaceAndOneWith) {
  constexpr int32_t kN = 50;
  constexpr size_t kBytes = 1000;  // aligns up to 1024
  std::vector<BufferRequest> rs;
  for (int32_t i = 0; i < kN; ++i) rs.push_back({kBytes, i, i + 1, -1});
  const MemoryPlan apart = PlanMemory(rs);
  EXPECT_EQ(CheckPlan(rs, apart), "");
  EXPECT_EQ(apart.arena_bytes, 2 * Aligned(kBytes));
  EXPECT_EQ(apart.total_bytes, kN * Aligned(kBytes));

  for (int32_t i = 1; i < kN; ++i) rs[i].in_place_of = i - 1;
  const MemoryPlan in_place = PlanMemory(rs);
  EXPECT_EQ(CheckPlan(rs, in_place), "");
  EXPECT_EQ(in_place.arena_bytes, Aligned(kBytes));
  for (int32_t i = 0; i < kN; ++i) EXPECT_EQ(in_place.offsets[i], 0u) << i;
}

TEST(MemoryPlan, InvalidInPlaceIsIgnored) {
  // Request 0 lives [0, 2]; each case is a request born at step 2 (so alive together with 0)
  // whose in_place_of must be declined: it needs memory of its own.
  struct Case {
    const char* why;
    BufferRequest req;
  };
  const Case cases[] = {
      {"later index", {512, 2, 3, 2}},
      {"itself", {512, 2, 3, 1}},
      {"out of range", {512, 2, 3, 99}},
      {"negative", {512, 2, 3, -7}},
      {"different aligned size", {576, 2, 3, 0}},
      {"not born where p dies", {512, 1, 3, 0}},
  };
  for (const Case& c : cases) {
    const std::vector<BufferRequest> rs = {{512, 0, 2, -1}, c.req};
    const MemoryPlan plan = PlanMemory(rs);
    EXPECT_EQ(CheckPlan(rs, plan), "") << c.why;
    EXPECT_NE(plan.offsets[0], plan.offsets[1]) << c.why;
    EXPECT_EQ(plan.arena_bytes, 512u + Aligned(c.req.bytes)) << c.why;
  }
  // Same aligned size (500 and 512 both take 512) is enough.
  const std::vector<BufferRequest> ok = {{500, 0, 2, -1}, {512, 2, 3, 0}};
  EXPECT_EQ(PlanMemory(ok).arena_bytes, 512u);
}

TEST(MemoryPlan, EachRequestIsTakenOverAtMostOnce) {
  // Two outputs of step 2 both ask for request 0's memory: the first asker gets it, the second
  // is alive at the same time and must not share it.
  const std::vector<BufferRequest> rs = {{256, 0, 2, -1}, {256, 2, 4, 0}, {256, 2, 4, 0}};
  const MemoryPlan plan = PlanMemory(rs);
  EXPECT_EQ(CheckPlan(rs, plan), "");
  EXPECT_EQ(plan.offsets[1], plan.offsets[0]);
  EXPECT_NE(plan.offsets[2], plan.offsets[0]);
  EXPECT_EQ(plan.arena_bytes, 512u);
}

TEST(MemoryPlan, TouchingLifetimesOverlap) {
  // One dies at step 3, the other is born at step 3: both are live during step 3.
  const std::vector<BufferRequest> rs = {{128, 0, 3, -1}, {128, 3, 5, -1}, {128, 6, 7, -1}};
  const MemoryPlan plan = PlanMemory(rs);
  EXPECT_EQ(CheckPlan(rs, plan), "");
  EXPECT_NE(plan.offsets[0], plan.offsets[1]);
  EXPECT_EQ(plan.arena_bytes, 256u);  // the third reuses memory
}

TEST(MemoryPlan, LargestFirstFillsGaps) {
  // A big buffer for steps [0, 1] and [4, 5]; small ones in between reuse its memory, and two
  // small ones alive together sit side by side in it.
  const std::vector<BufferRequest> rs = {
      {4096, 0, 1, -1}, {1024, 2, 3, -1}, {1024, 2, 3, -1}, {4096, 4, 5, -1}, {64, 1, 2, -1}};
  const MemoryPlan plan = PlanMemory(rs);
  EXPECT_EQ(CheckPlan(rs, plan), "");
  EXPECT_EQ(plan.arena_bytes, 4096u + 64u);
}

// Views restated from the header, independently of the planner: each request's root and its
// byte offset inside it, and each root's lifetime widened over its views.
struct ViewTruth {
  std::vector<int32_t> root;
  std::vector<size_t> offset;
  std::vector<int32_t> first, last;
};

ViewTruth Views(const std::vector<BufferRequest>& rs) {
  const size_t n = rs.size();
  ViewTruth v;
  v.offset.assign(n, 0);
  for (size_t r = 0; r < n; ++r) {
    v.root.push_back(static_cast<int32_t>(r));
    v.first.push_back(rs[r].first);
    v.last.push_back(rs[r].last);
  }
  auto valid = [&](size_t r) {
    const int32_t p = rs[r].view_of;
    return p >= 0 && static_cast<size_t>(p) < n && static_cast<size_t>(p) != r &&
           rs[r].view_offset % kArenaAlignment == 0 &&
           rs[r].view_offset + rs[r].bytes <= rs[p].bytes;
  };
  for (size_t r = 0; r < n; ++r) {
    std::vector<bool> seen(n, false);
    size_t at = r, offset = 0;
    bool cycle = false;
    while (valid(at)) {
      seen[at] = true;
      offset += rs[at].view_offset;
      at = static_cast<size_t>(rs[at].view_of);
      if (seen[at]) {
        cycle = true;
        break;
      }
    }
    if (cycle || at == r) continue;
    v.root[r] = static_cast<int32_t>(at);
    v.offset[r] = offset;
  }
  for (size_t r = 0; r < n; ++r) {
    v.first[v.root[r]] = std::min(v.first[v.root[r]], rs[r].first);
    v.last[v.root[r]] = std::max(v.last[v.root[r]], rs[r].last);
  }
  return v;
}

// Checks a plan with views (and no in-place requests): every view at its root's offset plus its
// own, and any two buffers of different roots whose roots' widened lifetimes meet apart in
// memory. Returns "" or what is wrong.
std::string CheckViewPlan(const std::vector<BufferRequest>& rs, const MemoryPlan& plan) {
  const ViewTruth v = Views(rs);
  for (size_t i = 0; i < rs.size(); ++i) {
    if (plan.offsets[v.root[i]] + v.offset[i] != plan.offsets[i])
      return "request " + std::to_string(i) + " is not at its place in its root";
    if (rs[i].bytes > 0 && plan.offsets[i] + rs[i].bytes > plan.arena_bytes)
      return "request " + std::to_string(i) + " ends past the arena";
  }
  for (size_t i = 0; i < rs.size(); ++i) {
    for (size_t j = i + 1; j < rs.size(); ++j) {
      const int32_t a = v.root[i], b = v.root[j];
      if (a == b || rs[i].bytes == 0 || rs[j].bytes == 0) continue;
      const bool alive_together = v.first[a] <= v.last[b] && v.first[b] <= v.last[a];
      const bool share_memory = plan.offsets[i] < plan.offsets[j] + Aligned(rs[j].bytes) &&
                                plan.offsets[j] < plan.offsets[i] + Aligned(rs[i].bytes);
      if (alive_together && share_memory)
        return "requests " + std::to_string(i) + " and " + std::to_string(j) +
               " belong to roots alive together and overlap in memory";
    }
  }
  return "";
}

BufferRequest Req(size_t bytes, int32_t first, int32_t last, int32_t view_of = -1,
                  size_t view_offset = 0, int32_t in_place_of = -1) {
  BufferRequest r;
  r.bytes = bytes;
  r.first = first;
  r.last = last;
  r.in_place_of = in_place_of;
  r.view_of = view_of;
  r.view_offset = view_offset;
  return r;
}

TEST(MemoryPlan, DenseBlockSharesOneBuffer) {
  // DenseNet: x0 and f1 make c2 = concat(x0, f1); f2 joins them in c3 = concat(x0, f1, f2), so
  // c2 is c3's first part. All five live in c3's memory; t, alive meanwhile, must stay clear.
  const std::vector<BufferRequest> rs = {
      Req(256, 0, 4, 2, 0),    // 0 x0 -> c2 @ 0
      Req(256, 1, 4, 2, 256),  // 1 f1 -> c2 @ 256
      Req(512, 2, 3, 4, 0),    // 2 c2 -> c3 @ 0
      Req(256, 3, 4, 4, 512),  // 3 f2 -> c3 @ 512
      Req(768, 4, 5),          // 4 c3
      Req(1024, 1, 2),         // 5 t
      Req(768, 6, 7),          // 6 after the block
  };
  const MemoryPlan plan = PlanMemory(rs);
  EXPECT_EQ(CheckViewPlan(rs, plan), "");
  EXPECT_EQ(plan.offsets[0], plan.offsets[4]);
  EXPECT_EQ(plan.offsets[1], plan.offsets[4] + 256);
  EXPECT_EQ(plan.offsets[2], plan.offsets[4]);
  EXPECT_EQ(plan.offsets[3], plan.offsets[4] + 512);
  EXPECT_EQ(plan.arena_bytes, 1024u + 768u);  // 6 reuses memory of the block or of t
}

TEST(MemoryPlan, InvalidViewsAreIgnored) {
  struct Case {
    const char* why;
    BufferRequest req;
  };
  const Case cases[] = {
      {"unaligned offset", Req(256, 0, 1, 1, 32)},
      {"past the parent", Req(256, 0, 1, 1, 512)},
      {"larger than the parent", Req(1024, 0, 1, 1, 0)},
      {"itself", Req(256, 0, 1, 0, 0)},
      {"out of range", Req(256, 0, 1, 9, 0)},
  };
  for (const Case& c : cases) {
    const std::vector<BufferRequest> rs = {c.req, Req(512, 1, 2)};
    const MemoryPlan plan = PlanMemory(rs);
    EXPECT_EQ(CheckPlan(rs, plan), "") << c.why;
    EXPECT_EQ(plan.arena_bytes, Aligned(c.req.bytes) + 512u) << c.why;
  }
  // A cycle has no root: both get memory of their own.
  const std::vector<BufferRequest> cycle = {Req(256, 0, 1, 1, 0), Req(256, 0, 1, 0, 0)};
  EXPECT_EQ(PlanMemory(cycle).arena_bytes, 512u);
}

TEST(MemoryPlan, ViewsAndTheirRootsTakeNothingOverInPlace) {
  // 1 is a view of 2; 0 dies where 1 is born and 3 is born where 2 dies. Neither in-place
  // request may be honoured: 1's bytes are 2's, and 2's last step is 3's first only because the
  // root's lifetime is its own (its view 1 is read until step 1, before 2 is written).
  const std::vector<BufferRequest> rs = {
      Req(256, 0, 1),
      Req(256, 1, 2, 2, 0, /*in_place_of=*/0),
      Req(512, 2, 3),
      Req(512, 3, 4, -1, 0, /*in_place_of=*/2),
  };
  const MemoryPlan plan = PlanMemory(rs);
  EXPECT_EQ(plan.offsets[1], plan.offsets[2]);
  EXPECT_NE(plan.offsets[1], plan.offsets[0]);
  EXPECT_NE(plan.offsets[3], plan.offsets[2]);
}

TEST(MemoryPlan, RandomViewPlansAreValid) {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    std::vector<BufferRequest> rs = RandomRequests(seed, 120);
    std::mt19937 rng(seed);
    for (size_t r = 0; r < rs.size(); ++r) {
      rs[r].in_place_of = -1;
      if (rng() % 3 != 0) continue;
      const auto p = static_cast<int32_t>(rng() % rs.size());
      rs[r].view_of = p;
      // Mostly fitting, aligned offsets; sometimes too far, unaligned or a cycle.
      const size_t room = rs[p].bytes >= rs[r].bytes ? rs[p].bytes - rs[r].bytes : 0;
      rs[r].view_offset = room / kArenaAlignment * kArenaAlignment;
      if (rng() % 5 == 0) rs[r].view_offset += rng() % 2 ? kArenaAlignment : 8;
    }
    const MemoryPlan plan = PlanMemory(rs);
    EXPECT_EQ(CheckViewPlan(rs, plan), "") << "seed " << seed;
  }
}

TEST(MemoryPlan, Deterministic) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const auto rs = RandomRequests(seed, 300);
    const MemoryPlan a = PlanMemory(rs);
    const MemoryPlan b = PlanMemory(rs);
    EXPECT_EQ(a.offsets, b.offsets) << "seed " << seed;
    EXPECT_EQ(a.arena_bytes, b.arena_bytes) << "seed " << seed;
  }
  // Equal sizes tie-break by first step, then index: the earlier-born goes to offset 0.
  const std::vector<BufferRequest> rs = {{128, 2, 3, -1}, {128, 1, 2, -1}, {128, 1, 2, -1}};
  const MemoryPlan plan = PlanMemory(rs);
  EXPECT_EQ(plan.offsets[1], 0u);
  EXPECT_EQ(plan.offsets[2], 128u);
  EXPECT_EQ(plan.offsets[0], 256u);
}

}  // namespace
}  // namespace kiln::runtime
