#include "support/thread_pool.h"

#include <pthreadpool.h>

namespace kiln {

Expected<std::unique_ptr<ThreadPool>> ThreadPool::Create(size_t threads) {
  if (threads == 0) return Status::Error("thread pool: thread count must be at least 1");
  pthreadpool_t pool = nullptr;
  if (threads > 1) {
    pool = pthreadpool_create(threads);
    if (!pool) return Status::Error("thread pool: could not start ", threads, " threads");
  }
  return std::unique_ptr<ThreadPool>(new ThreadPool(threads, pool));
}

ThreadPool::~ThreadPool() {
  if (pool_) pthreadpool_destroy(pool_);
}

void ThreadPool::Run(size_t n, void (*task)(void*, size_t), void* ctx) {
  pthreadpool_parallelize_1d(pool_, task, ctx, n, 0);
}

}  // namespace kiln
