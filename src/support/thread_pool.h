// A thin wrapper on pthreadpool with an exact thread count. With one thread no pool is created
// and work runs inline on the caller. Kernels never start threads; they are handed a pool.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>

#include "support/status.h"

struct pthreadpool;

namespace kiln {

class ThreadPool {
 public:
  // threads >= 1; the caller counts as one of them (pthreadpool's convention).
  static Expected<std::unique_ptr<ThreadPool>> Create(size_t threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t threads() const { return threads_; }

  // Calls fn(i) for i in [0, n), spread over the pool; returns when all calls have returned.
  // Calls from different threads into one pool are serialized by pthreadpool.
  template <class Fn>
  void ParallelFor(size_t n, Fn&& fn) {
    if (n == 0) return;
    if (threads_ == 1 || n == 1) {
      for (size_t i = 0; i < n; ++i) fn(i);
      return;
    }
    using F = std::remove_reference_t<Fn>;
    Run(n, [](void* ctx, size_t i) { (*static_cast<F*>(ctx))(i); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  explicit ThreadPool(size_t threads, pthreadpool* pool) : threads_(threads), pool_(pool) {}
  void Run(size_t n, void (*task)(void*, size_t), void* ctx);

  size_t threads_;
  pthreadpool* pool_;  // null when threads_ == 1
};

// ParallelFor on `pool`, or inline when pool is null.
template <class Fn>
void ParallelFor(ThreadPool* pool, size_t n, Fn&& fn) {
  if (pool) {
    pool->ParallelFor(n, fn);
  } else {
    for (size_t i = 0; i < n; ++i) fn(i);
  }
}

inline size_t ThreadCount(const ThreadPool* pool) { return pool ? pool->threads() : 1; }

}  // namespace kiln
