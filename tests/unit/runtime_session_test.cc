// runtime::Session against the reference interpreter: compiled CNNs (native steps), graphs that
// fall back to reference partitions, several threads running one compiled model at once, input
// shapes that change between runs, and inputs that do not fit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include "interp/interpreter.h"
#include "ir/parser.h"
#include "lower/lower.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "runtime/session.h"
#include "runtime_ref/reference_partition.h"

namespace kiln {
namespace {

// Conv+Relu, MaxPool, Conv, a residual Add, GlobalAveragePool, Flatten, Gemm; a Softsign (no
// native kernel: a reference partition between native steps); batch `b` (a symbol or a number).
std::string Cnn(const std::string& b) {
  return "graph main (opsets ai.onnx=13)\n"
         "  input  %x: float32[" + b + ",3,16,16]\n"
         "  const  %w1: float32[8,3,3,3] = random(seed=11)\n"
         "  const  %b1: float32[8] = random(seed=12)\n"
         "  const  %w2: float32[8,8,3,3] = random(seed=13)\n"
         "  const  %w3: float32[5,8] = random(seed=14)\n"
         "  const  %b3: float32[5] = [0.1,0.2,0.3,0.4,0.5]\n"
         "  %c1 = Conv(%x, %w1, %b1) {kernel_shape=[3,3], pads=[1,1,1,1]} : float32[" + b + ",8,16,16]  # conv1\n"
         "  %r1 = Relu(%c1) : float32[" + b + ",8,16,16]  # relu1\n"
         "  %p1 = MaxPool(%r1) {kernel_shape=[2,2], strides=[2,2]} : float32[" + b + ",8,8,8]  # pool1\n"
         "  %s1 = Softsign(%p1) : float32[" + b + ",8,8,8]  # softsign\n"
         "  %c2 = Conv(%s1, %w2) {kernel_shape=[3,3], pads=[1,1,1,1]} : float32[" + b + ",8,8,8]  # conv2\n"
         "  %a = Add(%c2, %p1) : float32[" + b + ",8,8,8]  # residual\n"
         "  %g = GlobalAveragePool(%a) : float32[" + b + ",8,1,1]  # gap\n"
         "  %f = Flatten(%g) {axis=1} : float32[" + b + ",8]  # flatten\n"
         "  %y = Gemm(%f, %w3, %b3) {transB=1} : float32[" + b + ",5]  # fc\n"
         "  output %y: float32[" + b + ",5]\n";
}

struct Compiled {
  std::unique_ptr<ir::Graph> graph;  // as parsed: the interpreter's input
  std::shared_ptr<const runtime::CompiledModel> model;
  lower::LowerReport report;
};

Compiled Compile(const std::string& text, int opt_level = 2) {
  runtime_ref::EnableReferencePartitions();
  Compiled c;
  auto parsed = ir::ParseGraph(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  c.graph = std::move(*parsed);
  auto optimized = ir::ParseGraph(text);
  passes::PassManager pm({});
  for (auto& p : passes::BuildPipeline(opt_level)) pm.Add(std::move(p));
  EXPECT_TRUE(pm.Run(**optimized).ok());
  lower::LowerOptions options;
  options.native = opt_level > 0;
  options.measure_algorithms = opt_level >= 3;
  auto module = lower::Lower(**optimized, options, &c.report);
  EXPECT_TRUE(module.ok()) << module.status().message();
  auto model = runtime::CompiledModel::Create(
      std::make_shared<const runtime::Module>(std::move(*module)));
  EXPECT_TRUE(model.ok()) << model.status().message();
  c.model = *model;
  return c;
}

Tensor RandomTensor(std::vector<int64_t> dims, uint32_t seed) {
  Tensor t(DType::kFloat32, std::move(dims));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
  return t;
}

void ExpectNear(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dims(), want.dims());
  double max_ref = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    max_ref = std::max(max_ref, std::fabs(double(want.data<float>()[i])));
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-4 * max_ref + 1e-6) << "at " << i;
}

Tensor Reference(const Compiled& c, const Tensor& x) {
  std::vector<Tensor> out;
  Status st = interp::Run(*c.graph, {{"x", x}}, &out);
  EXPECT_TRUE(st.ok()) << st.message();
  return out.empty() ? Tensor() : out[0];
}

std::unique_ptr<runtime::Session> NewSession(const Compiled& c, int threads = 1) {
  runtime::SessionOptions options;
  options.threads = threads;
  auto s = runtime::Session::Create(c.model, options);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(*s) : nullptr;
}

TEST(RuntimeSession, CompiledCnnMatchesInterpreterAtEveryLevel) {
  for (int level : {0, 1, 2, 3}) {
    SCOPED_TRACE(level);
    Compiled c = Compile(Cnn("1"), level);
    if (level == 0) {
      EXPECT_EQ(c.report.native_steps, 0u);
    }
    if (level >= 2) {
      EXPECT_GT(c.report.native_steps, 0u);
    }
    EXPECT_GE(c.report.reference_steps, 1u);  // Softsign has no native kernel
    auto session = NewSession(c, 2);
    const Tensor x = RandomTensor({1, 3, 16, 16}, 1);
    const Tensor* in[] = {&x};
    ASSERT_TRUE(session->Run(in).ok());
    ExpectNear(session->output(0), Reference(c, x));
  }
}

TEST(RuntimeSession, ThreadsShareOneModelAndMatchSequentialRuns) {
  Compiled c = Compile(Cnn("1"));
  constexpr int kThreads = 4, kRuns = 5;
  std::vector<Tensor> inputs, expected;
  auto sequential = NewSession(c);
  for (int i = 0; i < kThreads * kRuns; ++i) {
    inputs.push_back(RandomTensor({1, 3, 16, 16}, 100 + i));
    const Tensor* in[] = {&inputs.back()};
    ASSERT_TRUE(sequential->Run(in).ok());
    expected.push_back(sequential->output(0).Clone());
  }
  std::vector<std::vector<Tensor>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto session = NewSession(c);
      for (int r = 0; r < kRuns; ++r) {
        const Tensor* in[] = {&inputs[t * kRuns + r]};
        if (!session->Run(in).ok()) return;
        got[t].push_back(session->output(0).Clone());
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(got[t].size(), static_cast<size_t>(kRuns));
    for (int r = 0; r < kRuns; ++r) {
      const Tensor& a = got[t][r];
      const Tensor& b = expected[t * kRuns + r];
      ASSERT_EQ(a.dims(), b.dims());
      // Same kernels, same thread count: bit-identical to the sequential run.
      EXPECT_EQ(0, std::memcmp(a.raw(), b.raw(), a.nbytes())) << "thread " << t << " run " << r;
    }
  }
}

// A dense block (DenseNet): each concat takes every feature so far. With one image the planner
// places the features and the first concat inside the last concat's buffer, so the convs write
// there and the concats copy nothing; cat1's Sigmoid, its last reader, must not run in place
// (cat1's bytes are cat2's first part, read later). Two images: no concat range is contiguous,
// so everything is copied as before. Both match the interpreter.
std::string DenseBlock(const std::string& b) {
  return "graph main (opsets ai.onnx=13)\n"
         "  input  %x: float32[" + b + ",8,6,6]\n"
         "  const  %w1: float32[8,8,3,3] = random(seed=21)\n"
         "  const  %w2: float32[8,16,3,3] = random(seed=22)\n"
         "  %c1 = Conv(%x, %w1) {kernel_shape=[3,3], pads=[1,1,1,1]} : float32[" + b + ",8,6,6]\n"
         "  %f1 = Relu(%c1) : float32[" + b + ",8,6,6]\n"
         "  %cat1 = Concat(%x, %f1) {axis=1} : float32[" + b + ",16,6,6]\n"
         "  %s = Sigmoid(%cat1) : float32[" + b + ",16,6,6]\n"
         "  %f2 = Conv(%s, %w2) {kernel_shape=[3,3], pads=[1,1,1,1]} : float32[" + b + ",8,6,6]\n"
         "  %cat2 = Concat(%x, %f1, %f2) {axis=1} : float32[" + b + ",24,6,6]\n"
         "  %y = GlobalAveragePool(%cat2) : float32[" + b + ",24,1,1]\n"
         "  output %y: float32[" + b + ",24,1,1]\n";
}

int32_t ValueNamed(const runtime::CompiledModel& model, const std::string& name) {
  const auto& values = model.module().values;
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name) return static_cast<int32_t>(i);
  ADD_FAILURE() << "no value " << name;
  return -1;
}

TEST(RuntimeSession, DenseBlockConcatsWriteInPlace) {
  for (const char* batch : {"1", "2"}) {
    SCOPED_TRACE(batch);
    Compiled c = Compile(DenseBlock(batch));
    auto session = NewSession(c);
    const Tensor x = RandomTensor({std::stoi(batch), 8, 6, 6}, 3);
    const Tensor* in[] = {&x};
    ASSERT_TRUE(session->Run(in).ok());
    ExpectNear(session->output(0), Reference(c, x));
    const auto* cat2 = static_cast<const std::byte*>(
        session->value(ValueNamed(*c.model, "cat2"))->raw());
    const auto* cat1 = static_cast<const std::byte*>(
        session->value(ValueNamed(*c.model, "cat1"))->raw());
    const auto* f1 = static_cast<const std::byte*>(session->value(ValueNamed(*c.model, "f1"))->raw());
    const auto* f2 = static_cast<const std::byte*>(session->value(ValueNamed(*c.model, "f2"))->raw());
    const size_t feature = 8 * 6 * 6 * sizeof(float);
    if (std::string(batch) == "1") {
      EXPECT_EQ(cat1, cat2);
      EXPECT_EQ(f1, cat2 + feature);
      EXPECT_EQ(f2, cat2 + 2 * feature);
    } else {
      EXPECT_NE(f1, cat2 + feature);
    }
  }
}

TEST(RuntimeSession, ChangingBatchReplansAndMemoryStopsGrowing) {
  Compiled c = Compile(Cnn("N"));
  auto session = NewSession(c);
  size_t arena_after_first_round = 0;
  for (int round = 0; round < 4; ++round) {
    for (int64_t batch : {1, 3, 2}) {
      const Tensor x = RandomTensor({batch, 3, 16, 16}, static_cast<uint32_t>(round * 10 + batch));
      const Tensor* in[] = {&x};
      Status st = session->Run(in);
      ASSERT_TRUE(st.ok()) << st.message();
      ExpectNear(session->output(0), Reference(c, x));
    }
    if (round == 0) arena_after_first_round = session->memory().arena_bytes;
    // The arena is re-planned per shape but its buffer only grows to the largest plan.
    EXPECT_EQ(session->memory().arena_bytes, arena_after_first_round);
  }
}

TEST(RuntimeSession, InputsThatDoNotFitAreErrors) {
  Compiled c = Compile(Cnn("1"));
  auto session = NewSession(c);
  const Tensor wrong_dims = RandomTensor({1, 3, 17, 16}, 1);
  const Tensor* in1[] = {&wrong_dims};
  Status st = session->Run(in1);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("input 'x' has dims [1,3,17,16]"), std::string::npos) << st.message();
  const Tensor wrong_type(DType::kInt64, {1, 3, 16, 16});
  const Tensor* in2[] = {&wrong_type};
  st = session->Run(in2);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("must be float32, not int64"), std::string::npos) << st.message();
  const Tensor* none[] = {nullptr};
  EXPECT_FALSE(session->Run(none).ok());
  EXPECT_FALSE(session->Run(std::span<const Tensor* const>()).ok());
  // After the errors the session still runs correctly.
  const Tensor x = RandomTensor({1, 3, 16, 16}, 5);
  const Tensor* in[] = {&x};
  ASSERT_TRUE(session->Run(in).ok());
  ExpectNear(session->output(0), Reference(c, x));
}

TEST(RuntimeSession, ThreadCountIsHonoured) {
  Compiled c = Compile(Cnn("1"));
  for (int threads : {1, 2, 3}) EXPECT_EQ(NewSession(c, threads)->threads(), size_t(threads));
  runtime::SessionOptions zero;
  zero.threads = 0;
  EXPECT_FALSE(runtime::Session::Create(c.model, zero).ok());
}

TEST(RuntimeSession, ModuleForABetterIsaIsRefused) {
  if (ActiveIsa() == IsaLevel::kAvx512) GTEST_SKIP() << "no ISA above avx512 to ask for";
  Compiled c = Compile(Cnn("1"));
  auto module = std::make_shared<runtime::Module>(c.model->module());
  module->isa = IsaLevel::kAvx512;
  auto refused = runtime::CompiledModel::Create(module);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("compile it again"), std::string::npos);
}

}  // namespace
}  // namespace kiln
