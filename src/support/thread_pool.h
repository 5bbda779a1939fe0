// A thread pool with an exact thread count. With one thread no worker is started and work runs
// inline on the caller. Kernels never start threads; they are handed a pool.
//
// Waiting threads spin a bounded time (2 ms a worker, 200 us the caller), then sleep in the
// kernel (a futex). pthreadpool's spin for about a million pauses: on a 2-core machine with more
// runnable threads than cores, each spinning thread burns the time slice its partner needs (a
// 2-thread MobileNetV2 took a median of 350 ms a run with it against 26 ms on one thread while
// builds ran; with this pool, 33 ms). thread_pool.cc gives the measurements behind the bounds.
// A thread that slept is also scheduled promptly when it is woken.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>

#include "support/status.h"

namespace kiln {

class ThreadPool {
 public:
  // threads >= 1; the caller counts as one of them (threads - 1 workers are started).
  static Expected<std::unique_ptr<ThreadPool>> Create(size_t threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t threads() const { return threads_; }

  // Calls fn(i) for i in [0, n), spread over the pool; returns when all calls have returned.
  // Each thread starts on its own contiguous share of [0, n) and, when done, takes what is left
  // of the others' (from their ends), so a late or descheduled thread delays no one. Which
  // thread runs an index must not change a result: use per-index, not per-thread, scratch.
  // Calls from different threads into one pool are serialized; a call from inside fn runs
  // inline on the calling thread.
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
  struct Impl;
  ThreadPool(size_t threads, std::unique_ptr<Impl> impl);
  void Run(size_t n, void (*task)(void*, size_t), void* ctx);

  size_t threads_;
  std::unique_ptr<Impl> impl_;  // null when threads_ == 1
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
