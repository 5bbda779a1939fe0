// Session::Run at an unchanged shape must not touch the heap (../shared/DESIGN.md: "run: bind
// pointers and execute; no allocation"). This file replaces the global operator new and delete
// for the whole kiln_unit_tests binary: every form forwards to malloc / aligned_alloc / free, so
// other tests see no difference, and allocations are counted only on a thread whose counting
// flag one of these tests has set.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "ir/parser.h"
#include "lower/lower.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "runtime/session.h"
#include "runtime_ref/reference_partition.h"
#include "support/tensor.h"

// Under AddressSanitizer the replacement stays out: ASan's own operator new is what reports
// mismatched new/delete for the whole binary, and the release build runs these tests anyway.
#if defined(__SANITIZE_ADDRESS__)
#define KILN_COUNT_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_COUNT_ALLOCATIONS 0
#endif
#endif
#ifndef KILN_COUNT_ALLOCATIONS
#define KILN_COUNT_ALLOCATIONS 1
#endif

namespace {

// Plain globals (no constructors), so they are usable before main and after exit. Counting is
// per thread: the sessions here have one thread, the caller's, so every allocation a run makes
// happens on the counting thread, and nothing another thread does can make a test flaky.
thread_local bool t_counting = false;
thread_local size_t t_allocations = 0;
thread_local size_t t_largest = 0;

void Note(size_t bytes) {
  if (!t_counting) return;
  ++t_allocations;
  t_largest = std::max(t_largest, bytes);
}

[[maybe_unused]] void* Allocate(size_t bytes) {
  Note(bytes);
  for (;;) {
    if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

[[maybe_unused]] void* AllocateAligned(size_t bytes, std::align_val_t align) {
  Note(bytes);
  const size_t a = static_cast<size_t>(align);
  // aligned_alloc wants a size that is a multiple of the alignment.
  const size_t rounded = (std::max<size_t>(bytes, 1) + a - 1) / a * a;
  for (;;) {
    if (void* p = std::aligned_alloc(a, rounded)) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

// Counts what a scope allocates on this thread.
class CountAllocations {
 public:
  CountAllocations() {
    t_allocations = 0;
    t_largest = 0;
    t_counting = true;
  }
  ~CountAllocations() { t_counting = false; }
  size_t count() const { return t_allocations; }
  size_t largest() const { return t_largest; }
};

}  // namespace

#if KILN_COUNT_ALLOCATIONS
// The replaceable allocation functions, every standard form.
void* operator new(size_t bytes) { return Allocate(bytes); }
void* operator new[](size_t bytes) { return Allocate(bytes); }
void* operator new(size_t bytes, const std::nothrow_t&) noexcept {
  try {
    return Allocate(bytes);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t bytes, const std::nothrow_t&) noexcept {
  try {
    return Allocate(bytes);
  } catch (...) {
    return nullptr;
  }
}
void* operator new(size_t bytes, std::align_val_t align) { return AllocateAligned(bytes, align); }
void* operator new[](size_t bytes, std::align_val_t align) { return AllocateAligned(bytes, align); }
void* operator new(size_t bytes, std::align_val_t align, const std::nothrow_t&) noexcept {
  try {
    return AllocateAligned(bytes, align);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t bytes, std::align_val_t align, const std::nothrow_t&) noexcept {
  try {
    return AllocateAligned(bytes, align);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
#endif  // KILN_COUNT_ALLOCATIONS

namespace kiln {
namespace {

// A small CNN with every family the native kernels cover: Conv(+Relu), MaxPool, a residual Add,
// GlobalAveragePool, Flatten, Gemm. `batch` is "1" for static shapes or a name for a symbolic
// batch dimension.
std::string SmallCnn(const std::string& batch) {
  std::string text = R"(graph main (opsets ai.onnx=13)
  input  %x: float32[$B,3,32,32]
  const  %w1: float32[16,3,3,3] = random(seed=1)
  const  %b1: float32[16] = random(seed=2)
  const  %w2: float32[16,16,3,3] = random(seed=3)
  const  %b2: float32[16] = random(seed=4)
  const  %w3: float32[10,16] = random(seed=5)
  const  %b3: float32[10] = random(seed=6)
  %c1 = Conv(%x, %w1, %b1) {kernel_shape=[3,3], pads=[1,1,1,1]} : float32[$B,16,32,32]  # conv1
  %r1 = Relu(%c1) : float32[$B,16,32,32]  # relu1
  %p1 = MaxPool(%r1) {kernel_shape=[2,2], strides=[2,2]} : float32[$B,16,16,16]  # pool1
  %c2 = Conv(%p1, %w2, %b2) {kernel_shape=[3,3], pads=[1,1,1,1]} : float32[$B,16,16,16]  # conv2
  %a = Add(%c2, %p1) : float32[$B,16,16,16]  # add
  %r2 = Relu(%a) : float32[$B,16,16,16]  # relu2
  %g = GlobalAveragePool(%r2) : float32[$B,16,1,1]  # gap
  %f = Flatten(%g) {axis=1} : float32[$B,16]  # flatten
  %y = Gemm(%f, %w3, %b3) {transB=1} : float32[$B,10]  # fc
  output %y: float32[$B,10]
)";
  for (size_t at = text.find("$B"); at != std::string::npos; at = text.find("$B", at))
    text.replace(at, 2, batch);
  return text;
}

struct Compiled {
  std::shared_ptr<const runtime::CompiledModel> model;
  lower::LowerReport report;
};

// Parses, optimizes (-O2, as `kiln` compiles) and lowers; fails the test on any error.
Compiled Compile(const std::string& text) {
  Compiled out;
  auto graph = ir::ParseGraph(text);
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  if (!graph.ok()) return out;
  passes::PassManager pm(passes::PassManagerOptions{});
  for (auto& pass : passes::BuildPipeline(2)) pm.Add(std::move(pass));
  const Status optimized = pm.Run(**graph);
  EXPECT_TRUE(optimized.ok()) << optimized.message();
  if (!optimized.ok()) return out;
  auto module = lower::Lower(**graph, lower::LowerOptions{}, &out.report);
  EXPECT_TRUE(module.ok()) << module.status().message();
  if (!module.ok()) return out;
  // Reference partitions need their kernel registered to run at all.
  runtime_ref::EnableReferencePartitions();
  auto model =
      runtime::CompiledModel::Create(std::make_shared<const runtime::Module>(std::move(*module)));
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (model.ok()) out.model = *model;
  return out;
}

Tensor Input(int64_t batch) {
  Tensor x(DType::kFloat32, {batch, 3, 32, 32});
  float* p = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = static_cast<float>(i % 17) * 0.125f - 1.0f;
  return x;
}

std::unique_ptr<runtime::Session> OneThreadSession(const Compiled& c) {
  runtime::SessionOptions options;
  options.threads = 1;  // every allocation of a run then happens on the counting thread
  auto session = runtime::Session::Create(c.model, options);
  EXPECT_TRUE(session.ok()) << session.status().message();
  return session.ok() ? std::move(*session) : nullptr;
}

TEST(SessionAlloc, CounterSeesEveryForm) {
  if (!KILN_COUNT_ALLOCATIONS) GTEST_SKIP() << "allocation counting is off under AddressSanitizer";
  // Guards the counter itself: a test that counts nothing would always pass.
  CountAllocations counter;
  auto a = std::make_unique<int>(1);
  auto b = std::make_unique<int[]>(8);
  struct alignas(128) Wide {
    char bytes[128];
  };
  auto c = std::make_unique<Wide>();
  void* d = ::operator new(3, std::nothrow);
  ::operator delete(d, std::nothrow);
  EXPECT_EQ(counter.count(), 4u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c.get()) % 128, 0u);
}

TEST(SessionAlloc, RunAtUnchangedShapeDoesNotAllocate) {
  if (!KILN_COUNT_ALLOCATIONS) GTEST_SKIP() << "allocation counting is off under AddressSanitizer";
  const Compiled c = Compile(SmallCnn("1"));
  ASSERT_NE(c.model, nullptr);
  if (c.report.reference_steps > 0)
    GTEST_SKIP() << "the model still has " << c.report.reference_steps
                 << " reference partition(s) (" << c.report.reference_nodes
                 << " nodes; the interpreter allocates what it computes); this test enforces "
                    "zero allocations once native kernels cover every node";
  auto session = OneThreadSession(c);
  ASSERT_NE(session, nullptr);
  const Tensor x = Input(1);
  const std::vector<const Tensor*> inputs = {&x};
  {
    // The warm-up run plans and allocates the arena: the counter must see that, or a zero
    // below would prove nothing.
    CountAllocations counter;
    const Status status = session->Run(inputs);
    const size_t warm_up = counter.count();
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_GT(warm_up, 0u);
  }

  for (int run = 2; run <= 3; ++run) {
    Status status;
    size_t allocations = 0;
    size_t largest = 0;
    {
      CountAllocations counter;
      status = session->Run(inputs);
      allocations = counter.count();
      largest = counter.largest();
    }
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(allocations, 0u) << "run " << run << " allocated " << allocations
                               << " times (largest " << largest << " bytes)";
  }
  EXPECT_EQ(session->output(0).dims(), (std::vector<int64_t>{1, 10}));
}

TEST(SessionAlloc, AlternatingBatchSizesKeepOneArena) {
  if (!KILN_COUNT_ALLOCATIONS) GTEST_SKIP() << "allocation counting is off under AddressSanitizer";
  const Compiled c = Compile(SmallCnn("N"));
  ASSERT_NE(c.model, nullptr);
  if (c.report.reference_steps > 0)
    GTEST_SKIP() << "the native kernels refuse the symbolic batch: " << c.report.reference_steps
                 << " reference partition(s) remain, and their outputs are not planned";
  auto session = OneThreadSession(c);
  ASSERT_NE(session, nullptr);
  const Tensor small = Input(2);
  const Tensor large = Input(5);
  const std::vector<const Tensor*> small_inputs = {&small};
  const std::vector<const Tensor*> large_inputs = {&large};

  size_t small_arena = 0;
  size_t large_arena = 0;
  for (int round = 0; round < 20; ++round) {
    for (bool is_large : {true, false}) {
      Status status;
      size_t largest = 0;
      {
        CountAllocations counter;
        status = session->Run(is_large ? large_inputs : small_inputs);
        largest = counter.largest();
      }
      ASSERT_TRUE(status.ok()) << "round " << round << ": " << status.message();
      const size_t arena = session->memory().arena_bytes;
      size_t& first_seen = is_large ? large_arena : small_arena;
      if (round == 0) {
        first_seen = arena;
        continue;
      }
      // The plan for a shape is the same every time, so the arena stops growing once both
      // shapes have been seen...
      EXPECT_EQ(arena, first_seen) << "round " << round << (is_large ? " large" : " small");
      // ...and a re-plan reuses the arena it has: re-planning allocates bookkeeping, never a
      // buffer the size of an arena.
      EXPECT_LT(largest, small_arena) << "round " << round << (is_large ? " large" : " small");
    }
  }
  EXPECT_GT(small_arena, 0u);
  EXPECT_GT(large_arena, small_arena);
}

}  // namespace
}  // namespace kiln
