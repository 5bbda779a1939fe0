#include "support/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

// How long a thread spins before it sleeps. A worker spins across the gap between two parallel
// regions (a step's bookkeeping, a small single-threaded step), which is a few microseconds when
// nothing else runs; the caller spins while its partner finishes the last index. Too short, and
// a worker is asleep when the next region starts whenever another process competes for a core:
// with 200 / 50 us, ShuffleNet at 2 threads beside onnxruntime's spinning threads
// (bench/compare.py) took 4.48 ms against pthreadpool's 2.61; with 2 ms / 200 us, 3.10. Too
// long, and spinning threads burn the time slices their partners need when the machine is
// oversubscribed: with three busy processes on the 2 cores, MobileNetV2 / ResNet-18 at 2
// threads took 20.0 / 60.0 ms here against pthreadpool's 24.3 / 92.4 (12.4 / 51.1 with the
// shorter spins). With one busy process the two pools are level (8.4 / 6.7 ms, MobileNetV2 /
// ShuffleNet), and on a quiet machine too.
constexpr auto kWorkerSpin = std::chrono::microseconds(2000);
constexpr auto kCallerSpin = std::chrono::microseconds(200);

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

void FutexWait(std::atomic<uint32_t>* word, uint32_t expected) {
#if defined(__linux__)
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
#else
  word->wait(expected);
#endif
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
#else
  word->notify_all();
#endif
}

// Spins until pred() holds or `budget` has passed; true when pred() held.
template <class Pred>
bool SpinFor(Clock::duration budget, Pred pred) {
  const Clock::time_point until = Clock::now() + budget;
  for (unsigned i = 1;; ++i) {
    if (pred()) return true;
    CpuRelax();
    if (i % 64 == 0 && Clock::now() >= until) return pred();
  }
}

// Set while a thread runs an index of some pool: a nested ParallelFor runs inline (no pool
// over-subscribes the machine, and no call waits on a pool its own thread is working for).
thread_local bool tls_in_task = false;

// One thread's share of the indices: [start, end) with `length` of them unclaimed. The owner
// claims from the front (start is its own), others from the back; claiming decrements length
// first, so the two ends never cross.
struct alignas(64) Range {
  std::atomic<size_t> length{0};
  size_t start = 0;
  std::atomic<size_t> end{0};
};

bool Claim(Range& r) {
  size_t len = r.length.load(std::memory_order_relaxed);
  while (len > 0) {
    if (r.length.compare_exchange_weak(len, len - 1, std::memory_order_relaxed)) return true;
  }
  return false;
}

// The join word of a job: its generation in the high half, kClosed once the caller has stopped
// admitting workers, and the count of workers that joined.
constexpr uint64_t kClosed = uint64_t{1} << 31;
constexpr uint64_t kCountMask = kClosed - 1;

}  // namespace

struct ThreadPool::Impl {
  explicit Impl(size_t threads) : ranges(threads) {}

  std::mutex dispatch;  // one ParallelFor at a time
  std::vector<Range> ranges;
  std::vector<std::thread> workers;

  // The current job, written by the caller before `generation` is published.
  void (*task)(void*, size_t) = nullptr;
  void* ctx = nullptr;
  std::exception_ptr error;  // the first exception an index threw
  std::mutex error_mu;

  std::atomic<uint32_t> generation{0};  // futex word the idle workers sleep on
  std::atomic<uint64_t> join{0};
  std::atomic<uint32_t> finished{0};  // futex word the caller sleeps on
  std::atomic<uint32_t> sleepers{0};
  std::atomic<uint32_t> caller_sleeping{0};
  std::atomic<bool> stop{false};

  // Runs the indices of range `self`, then whatever is left of the others'.
  void Work(size_t self) {
    const size_t t = ranges.size();
    tls_in_task = true;
    Range& own = ranges[self];
    while (Claim(own)) Call(own.start++);
    for (size_t k = 1; k < t; ++k) {
      Range& victim = ranges[(self + k) % t];
      while (Claim(victim)) Call(victim.end.fetch_sub(1, std::memory_order_relaxed) - 1);
    }
    tls_in_task = false;
  }

  void Call(size_t i) {
    try {
      task(ctx, i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!error) error = std::current_exception();
    }
  }

  uint32_t WaitForJob(uint32_t seen) {
    uint32_t g = seen;
    if (SpinFor(kWorkerSpin, [&] {
          g = generation.load(std::memory_order_acquire);
          return g != seen;
        })) {
      return g;
    }
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    while ((g = generation.load(std::memory_order_seq_cst)) == seen) FutexWait(&generation, seen);
    sleepers.fetch_sub(1, std::memory_order_relaxed);
    return g;
  }

  void WorkerLoop(size_t self) {
    uint32_t seen = 0;
    for (;;) {
      const uint32_t g = WaitForJob(seen);
      seen = g;
      if (stop.load(std::memory_order_acquire)) return;
      // Join job g unless the caller has closed it (it found no index left) or moved on.
      uint64_t j = join.load(std::memory_order_acquire);
      bool joined = false;
      while ((j >> 32) == g && (j & kClosed) == 0) {
        if (join.compare_exchange_weak(j, j + 1, std::memory_order_acq_rel)) {
          joined = true;
          break;
        }
      }
      if (!joined) continue;
      Work(self);
      finished.fetch_add(1, std::memory_order_seq_cst);
      if (caller_sleeping.load(std::memory_order_seq_cst)) FutexWakeAll(&finished);
    }
  }

  void Run(size_t n, void (*fn)(void*, size_t), void* context) {
    std::lock_guard<std::mutex> lock(dispatch);
    const size_t t = ranges.size();
    task = fn;
    ctx = context;
    error = nullptr;
    for (size_t i = 0; i < t; ++i) {
      ranges[i].start = i * n / t;
      ranges[i].end.store((i + 1) * n / t, std::memory_order_relaxed);
      ranges[i].length.store((i + 1) * n / t - i * n / t, std::memory_order_relaxed);
    }
    finished.store(0, std::memory_order_relaxed);
    const uint32_t g = generation.load(std::memory_order_relaxed) + 1;
    join.store(uint64_t{g} << 32, std::memory_order_relaxed);
    generation.store(g, std::memory_order_seq_cst);  // publishes the job
    if (sleepers.load(std::memory_order_seq_cst) > 0) FutexWakeAll(&generation);
    Work(0);
    // Every index is claimed: admit no more workers and wait for those that joined.
    const uint32_t joined =
        static_cast<uint32_t>(join.fetch_or(kClosed, std::memory_order_acq_rel) & kCountMask);
    if (!SpinFor(kCallerSpin, [&] {
          return finished.load(std::memory_order_acquire) == joined;
        })) {
      caller_sleeping.store(1, std::memory_order_seq_cst);
      uint32_t f;
      while ((f = finished.load(std::memory_order_seq_cst)) != joined) FutexWait(&finished, f);
      caller_sleeping.store(0, std::memory_order_relaxed);
    }
    if (error) {
      std::exception_ptr e = std::move(error);
      error = nullptr;
      std::rethrow_exception(e);
    }
  }

  void Stop() {
    stop.store(true, std::memory_order_release);
    generation.fetch_add(1, std::memory_order_seq_cst);
    FutexWakeAll(&generation);
    for (std::thread& w : workers) w.join();
    workers.clear();
  }
};

ThreadPool::ThreadPool(size_t threads, std::unique_ptr<Impl> impl)
    : threads_(threads), impl_(std::move(impl)) {}

Expected<std::unique_ptr<ThreadPool>> ThreadPool::Create(size_t threads) {
  if (threads == 0) return Status::Error("thread pool: thread count must be at least 1");
  std::unique_ptr<Impl> impl;
  if (threads > 1) {
    impl = std::make_unique<Impl>(threads);
    try {
      for (size_t i = 1; i < threads; ++i) {
        Impl* p = impl.get();
        impl->workers.emplace_back([p, i] { p->WorkerLoop(i); });
      }
    } catch (const std::system_error&) {
      impl->Stop();
      return Status::Error("thread pool: could not start ", threads, " threads");
    }
  }
  return std::unique_ptr<ThreadPool>(new ThreadPool(threads, std::move(impl)));
}

ThreadPool::~ThreadPool() {
  if (impl_) impl_->Stop();
}

void ThreadPool::Run(size_t n, void (*task)(void*, size_t), void* ctx) {
  if (tls_in_task) {
    for (size_t i = 0; i < n; ++i) task(ctx, i);
    return;
  }
  impl_->Run(n, task, ctx);
}

}  // namespace kiln
