// Helpers of the lowering tests: compile IR text through the -O2 pipeline and lowering, count
// steps, and compare a session's outputs with the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "interp/interpreter.h"
#include "ir/parser.h"
#include "lower/lower.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "runtime/session.h"
#include "runtime_ref/reference_partition.h"

namespace kiln::lower_test {

struct Compiled {
  std::unique_ptr<ir::Graph> graph;  // as parsed: the interpreter's input
  std::shared_ptr<const runtime::Module> module;
  std::shared_ptr<const runtime::CompiledModel> model;
};

inline Compiled Compile(const std::string& text) {
  runtime_ref::EnableReferencePartitions();
  Compiled c;
  auto parsed = ir::ParseGraph(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (!parsed.ok()) return c;
  c.graph = std::move(*parsed);
  auto optimized = ir::ParseGraph(text);
  passes::PassManager pm({});
  for (auto& p : passes::BuildPipeline(2)) pm.Add(std::move(p));
  EXPECT_TRUE(pm.Run(**optimized).ok());
  auto module = lower::Lower(**optimized, lower::LowerOptions{});
  EXPECT_TRUE(module.ok()) << module.status().message();
  if (!module.ok()) return c;
  c.module = std::make_shared<const runtime::Module>(std::move(*module));
  auto model = runtime::CompiledModel::Create(c.module);
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (model.ok()) c.model = *model;
  return c;
}

inline size_t CountKernel(const runtime::Module& m, const std::string& kernel) {
  size_t n = 0;
  for (const runtime::Step& s : m.steps) n += s.kernel == kernel;
  return n;
}

inline Tensor RandomTensor(std::vector<int64_t> dims, uint32_t seed) {
  Tensor t(DType::kFloat32, std::move(dims));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
  return t;
}

// Runs `c` on `x` (two threads) and compares every output with the interpreter.
inline void ExpectMatchesInterpreter(const Compiled& c, const Tensor& x) {
  ASSERT_TRUE(c.model);
  runtime::SessionOptions options;
  options.threads = 2;
  auto session = runtime::Session::Create(c.model, options);
  ASSERT_TRUE(session.ok()) << session.status().message();
  const Tensor* in[] = {&x};
  Status st = (*session)->Run(in);
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<Tensor> want;
  st = interp::Run(*c.graph, {{"x", x}}, &want);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(want.size(), c.module->outputs.size());
  for (size_t o = 0; o < want.size(); ++o) {
    const Tensor& got = (*session)->output(o);
    ASSERT_EQ(got.dims(), want[o].dims()) << "output " << o;
    double max_ref = 0;
    for (int64_t i = 0; i < want[o].numel(); ++i)
      max_ref = std::max(max_ref, std::fabs(double(want[o].data<float>()[i])));
    for (int64_t i = 0; i < want[o].numel(); ++i)
      ASSERT_NEAR(got.data<float>()[i], want[o].data<float>()[i], 1e-4 * max_ref + 1e-5)
          << "output " << o << " at " << i;
  }
}

}  // namespace kiln::lower_test
