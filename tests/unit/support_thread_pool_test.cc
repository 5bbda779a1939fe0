// ThreadPool: every index runs exactly once at any count of indices and threads, no more
// threads than asked for take part, nested calls run inline, exceptions reach the caller, calls
// from several threads are serialized, and a pool whose workers have gone to sleep wakes up.
#include "support/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace kiln {
namespace {

std::unique_ptr<ThreadPool> MakePool(size_t threads) {
  auto pool = ThreadPool::Create(threads);
  EXPECT_TRUE(pool.ok()) << pool.status().message();
  return std::move(pool).value();
}

TEST(ThreadPool, RefusesZeroThreads) { EXPECT_FALSE(ThreadPool::Create(0).ok()); }

TEST(ThreadPool, EveryIndexOnce) {
  for (size_t threads : {1, 2, 3, 5}) {
    auto pool = MakePool(threads);
    EXPECT_EQ(pool->threads(), threads);
    for (size_t n : {0, 1, 2, 3, 7, 64, 1001}) {
      std::vector<std::atomic<int>> hits(n);
      pool->ParallelFor(n, [&](size_t i) { hits[i].fetch_add(1); });
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << threads << " " << n << " " << i;
    }
  }
}

TEST(ThreadPool, NoMoreThreadsThanAsked) {
  for (size_t threads : {1, 2, 3}) {
    auto pool = MakePool(threads);
    std::mutex mu;
    std::set<std::thread::id> seen;
    for (int rep = 0; rep < 50; ++rep) {
      pool->ParallelFor(64, [&](size_t) {
        // Long enough that the workers get a share.
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
        while (std::chrono::steady_clock::now() < until) {
        }
        std::lock_guard<std::mutex> lock(mu);
        seen.insert(std::this_thread::get_id());
      });
    }
    EXPECT_LE(seen.size(), threads);
    EXPECT_GE(seen.size(), 1u);
    if (threads == 1) {
      EXPECT_EQ(*seen.begin(), std::this_thread::get_id());
    }
  }
}

TEST(ThreadPool, NestedCallsRunInline) {
  auto pool = MakePool(2);
  std::vector<std::atomic<int>> hits(8 * 9);
  pool->ParallelFor(8, [&](size_t i) {
    const std::thread::id outer = std::this_thread::get_id();
    pool->ParallelFor(9, [&](size_t j) {
      EXPECT_EQ(std::this_thread::get_id(), outer);
      hits[i * 9 + j].fetch_add(1);
    });
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ThreadPool, ExceptionReachesTheCaller) {
  auto pool = MakePool(2);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool->ParallelFor(100,
                                 [&](size_t i) {
                                   ran.fetch_add(1);
                                   if (i == 77) throw std::runtime_error("index 77");
                                 }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 100);  // the other indices still ran
  // The pool works afterwards.
  std::atomic<int> after{0};
  pool->ParallelFor(10, [&](size_t) { after.fetch_add(1); });
  EXPECT_EQ(after.load(), 10);
}

TEST(ThreadPool, CallsFromSeveralThreads) {
  auto pool = MakePool(2);
  std::vector<std::thread> callers;
  std::atomic<int> total{0};
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 200; ++rep) {
        std::atomic<int> local{0};
        pool->ParallelFor(13, [&](size_t) { local.fetch_add(1); });
        EXPECT_EQ(local.load(), 13);
        total.fetch_add(local.load());
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 200 * 13);
}

TEST(ThreadPool, WakesSleepingWorkers) {
  auto pool = MakePool(3);
  for (int rep = 0; rep < 3; ++rep) {
    // Longer than any spin: the workers are asleep when the next call comes.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::vector<std::atomic<int>> hits(257);
    pool->ParallelFor(hits.size(), [&](size_t i) { hits[i].fetch_add(1); });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, ManyShortCalls) {
  // Back-to-back small jobs exercise late workers meeting a closed or newer job.
  auto pool = MakePool(4);
  for (int rep = 0; rep < 20000; ++rep) {
    const size_t n = 2 + rep % 5;
    std::atomic<size_t> sum{0};
    pool->ParallelFor(n, [&](size_t i) { sum.fetch_add(i + 1); });
    ASSERT_EQ(sum.load(), n * (n + 1) / 2) << rep;
  }
}

TEST(ThreadPool, FreeFunctionWithoutPool) {
  std::vector<int> hits(5, 0);
  ParallelFor(nullptr, hits.size(), [&](size_t i) { hits[i]++; });
  for (int h : hits) EXPECT_EQ(h, 1);
  EXPECT_EQ(ThreadCount(nullptr), 1u);
}

}  // namespace
}  // namespace kiln
