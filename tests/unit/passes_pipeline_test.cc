// End to end: digits_cnn through the frontend and each optimization level gives the same logits
// as the graph as imported, on the held-out samples.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "frontend/onnx/importer.h"
#include "interp/interpreter.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "tools/npy.h"

namespace kiln {
namespace {

const std::string kModel = std::string(KILN_SOURCE_DIR) + "/models/digits_cnn.onnx";

std::vector<Tensor> RunOn(const ir::Graph& g, const Tensor& x) {
  std::vector<Tensor> out;
  Status st = interp::Run(g, {{g.inputs[0]->name, x}}, &out);
  EXPECT_TRUE(st.ok()) << st.message();
  return out;
}

size_t CountOp(const ir::Graph& g, const std::string& op) {
  size_t n = 0;
  for (const auto& node : g.nodes()) n += node->op_type == op ? 1 : 0;
  return n;
}

class DigitsPipeline : public testing::TestWithParam<int> {};

TEST_P(DigitsPipeline, SameLogitsOnHeldOutSamples) {
  auto samples =
      tools::ReadNpy(std::string(KILN_SOURCE_DIR) + "/models/digits_samples/samples.npy");
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  auto original = onnx::LoadModel(kModel);
  auto optimized = onnx::LoadModel(kModel);
  ASSERT_TRUE(original.ok() && optimized.ok());

  passes::PassManagerOptions opts;
  opts.verify = true;
  passes::PassManager pm(opts);
  for (auto& p : passes::BuildPipeline(GetParam())) pm.Add(std::move(p));
  Status st = pm.Run(*optimized->graph);
  ASSERT_TRUE(st.ok()) << st.message();
  if (GetParam() >= 2) {
    EXPECT_EQ(CountOp(*optimized->graph, "BatchNormalization"), 0u);
    EXPECT_EQ(optimized->graph->outputs[0]->name, "logits");
  }

  const std::vector<Tensor> want = RunOn(*original->graph, *samples);
  const std::vector<Tensor> got = RunOn(*optimized->graph, *samples);
  ASSERT_EQ(want.size(), 1u);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(want[0].dims(), got[0].dims());
  for (int64_t i = 0; i < want[0].numel(); ++i) {
    const double a = want[0].AsDouble(i), b = got[0].AsDouble(i);
    ASSERT_LE(std::fabs(a - b), 1e-5 * std::max(std::fabs(a), std::fabs(b)) + 1e-5)
        << "logit " << i << ": " << a << " vs " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, DigitsPipeline, testing::Values(0, 1, 2));

TEST(KilnCompile, PrintsIrAfterEveryPass) {
  const std::string cmd = StrCat(KILN_BINARY, " compile ", kModel,
                                 " -O2 --print-ir-after=all --time-passes > /dev/null");
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string bad =
      StrCat(KILN_BINARY, " compile ", kModel, " --disable-pass=nope 2> /dev/null");
  EXPECT_NE(std::system(bad.c_str()), 0) << "an unknown pass name is an error";
}

}  // namespace
}  // namespace kiln
