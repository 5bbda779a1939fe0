// Residual adds folded into the conv before them (lower/fuse_residual.h): which patterns fold,
// which must not, and that every folded graph still computes what the interpreter does (at the
// active ISA here, and at AVX2 through the unit_runtime_isa_avx2 ctest entry).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "kernels/conv/conv.h"
#include "lower/fuse_residual.h"
#include "lower_test_util.h"
#include "runtime/kernel_registry.h"

namespace kiln {
namespace {

using lower_test::Compile;
using lower_test::Compiled;
using lower_test::CountKernel;
using lower_test::ExpectMatchesInterpreter;
using lower_test::RandomTensor;

// The conv2d steps with a residual input.
std::vector<const runtime::Step*> Residual(const runtime::Module& m) {
  std::vector<const runtime::Step*> out;
  for (const runtime::Step& s : m.steps)
    if (s.kernel == "conv2d" && s.params.IntOr("residual", 0) == 1) out.push_back(&s);
  return out;
}

// Every value is written by exactly one step or is an input or constant: the fold left no
// orphans behind, and the ids it renumbered still line up.
void ExpectNoOrphanValues(const runtime::Module& m) {
  std::set<int32_t> used(m.inputs.begin(), m.inputs.end());
  for (const runtime::Step& s : m.steps) {
    used.insert(s.inputs.begin(), s.inputs.end());
    used.insert(s.outputs.begin(), s.outputs.end());
  }
  for (size_t v = 0; v < m.values.size(); ++v)
    EXPECT_TRUE(used.count(static_cast<int32_t>(v)) ||
                m.values[v].kind == runtime::ValueKind::kConstant)
        << m.values[v].name;
  EXPECT_TRUE(m.Validate().ok()) << m.Validate().message();
}

// The tail of a ResNet bottleneck: 1x1 conv + Relu, 1x1 conv, Add(identity), Relu. `sum_reads`
// adds a second reader of the sum (a graph output), `conv_reads` one of the second conv's output.
std::string Bottleneck(int64_t batch, int64_t c, bool sum_reads, bool conv_reads) {
  const std::string b = std::to_string(batch), cs = std::to_string(c);
  const std::string t = "float32[" + b + "," + cs + ",9,9]";
  std::string s =
      "graph main (opsets ai.onnx=13)\n"
      "  input  %x: " + t + "\n"
      "  const  %w1: float32[" + cs + "," + cs + ",1,1] = random(seed=1)\n"
      "  const  %b1: float32[" + cs + "] = random(seed=2)\n"
      "  const  %w2: float32[" + cs + "," + cs + ",1,1] = random(seed=3)\n"
      "  const  %b2: float32[" + cs + "] = random(seed=4)\n"
      "  %c1 = Conv(%x, %w1, %b1) {kernel_shape=[1,1]} : " + t + "  # conv1\n"
      "  %r1 = Relu(%c1) : " + t + "  # relu1\n"
      "  %c2 = Conv(%r1, %w2, %b2) {kernel_shape=[1,1]} : " + t + "  # conv2\n"
      "  %a = Add(%x, %c2) : " + t + "  # add\n"
      "  %y = Relu(%a) : " + t + "  # relu2\n"
      "  output %y: " + t + "\n";
  if (sum_reads) s += "  output %a: " + t + "\n";
  if (conv_reads) s += "  output %c2: " + t + "\n";
  return s;
}

TEST(LowerFuseResidual, BottleneckTailIsOneStep) {
  for (int64_t batch : {1, 2}) {
    SCOPED_TRACE(batch);
    Compiled c = Compile(Bottleneck(batch, 24, false, false));
    ASSERT_TRUE(c.module);
    const auto fused = Residual(*c.module);
    ASSERT_EQ(fused.size(), 1u);
    EXPECT_EQ(fused[0]->op, "Conv+Add+Relu");
    EXPECT_EQ(fused[0]->params.strings.at("activation"), "relu");
    EXPECT_EQ(fused[0]->inputs.size(), 2u);
    EXPECT_EQ(CountKernel(*c.module, "eltwise_binary"), 0u);
    EXPECT_EQ(CountKernel(*c.module, "eltwise_unary"), 0u);
    EXPECT_EQ(c.module->steps.size(), 2u);
    ExpectNoOrphanValues(*c.module);
    ExpectMatchesInterpreter(c, RandomTensor({batch, 24, 9, 9}, 7));
  }
}

TEST(LowerFuseResidual, SumReadTwiceKeepsItsRelu) {
  // The sum is a graph output too: the add folds, the Relu stays a step of its own.
  Compiled c = Compile(Bottleneck(1, 16, true, false));
  ASSERT_TRUE(c.module);
  const auto fused = Residual(*c.module);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0]->op, "Conv+Add");
  EXPECT_EQ(fused[0]->params.strings.at("activation"), "none");
  EXPECT_EQ(CountKernel(*c.module, "eltwise_unary"), 1u);
  ExpectNoOrphanValues(*c.module);
  ExpectMatchesInterpreter(c, RandomTensor({1, 16, 9, 9}, 8));
}

TEST(LowerFuseResidual, ConvOutputReadTwiceDoesNotFold) {
  Compiled c = Compile(Bottleneck(1, 16, false, true));
  ASSERT_TRUE(c.module);
  EXPECT_TRUE(Residual(*c.module).empty());
  EXPECT_EQ(CountKernel(*c.module, "eltwise_binary"), 1u);
  ExpectMatchesInterpreter(c, RandomTensor({1, 16, 9, 9}, 9));
}

TEST(LowerFuseResidual, TurnedOffByEnvironment) {
  setenv("KILN_FUSE_RESIDUAL", "0", 1);
  EXPECT_FALSE(lower::ResidualFusionEnabled());
  Compiled c = Compile(Bottleneck(1, 16, false, false));
  unsetenv("KILN_FUSE_RESIDUAL");
  ASSERT_TRUE(c.module);
  EXPECT_TRUE(Residual(*c.module).empty());
  EXPECT_EQ(CountKernel(*c.module, "eltwise_binary"), 1u);
}

// A downsampling block: the main branch (3x3 stride 2) and the shortcut (1x1 stride 2) both end
// in a conv; the shortcut is computed after the main branch's conv, so the fused step must wait
// for it (it takes the Add's place). A broadcast Add of a per-channel bias never folds.
TEST(LowerFuseResidual, DownsampleBlockAndBroadcastAdd) {
  const std::string text =
      "graph main (opsets ai.onnx=13)\n"
      "  input  %x: float32[1,32,14,14]\n"
      "  const  %w1: float32[32,32,3,3] = random(seed=11)\n"
      "  const  %w2: float32[32,32,1,1] = random(seed=12)\n"
      "  const  %w3: float32[32,32,3,3] = random(seed=13)\n"
      "  const  %bias: float32[1,32,1,1] = random(seed=14)\n"
      "  %m = Conv(%x, %w1) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]} : float32[1,32,7,7]  # main\n"
      "  %s = Conv(%x, %w2) {kernel_shape=[1,1], strides=[2,2]} : float32[1,32,7,7]  # shortcut\n"
      "  %a = Add(%m, %s) : float32[1,32,7,7]  # add\n"
      "  %r = Relu(%a) : float32[1,32,7,7]  # relu\n"
      "  %c = Conv(%r, %w3) {kernel_shape=[3,3], pads=[1,1,1,1]} : float32[1,32,7,7]  # conv3\n"
      "  %y = Add(%c, %bias) : float32[1,32,7,7]  # bias\n"
      "  output %y: float32[1,32,7,7]\n";
  Compiled c = Compile(text);
  ASSERT_TRUE(c.module);
  const auto fused = Residual(*c.module);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0]->op, "Conv+Add+Relu");
  ExpectNoOrphanValues(*c.module);
  ExpectMatchesInterpreter(c, RandomTensor({1, 32, 14, 14}, 10));
}

// Winograd cannot add onto its output: a residual after it stays an Add step.
TEST(LowerFuseResidual, OnlyAccumulatingAlgorithmsFold) {
  const std::string text =
      "graph main (opsets ai.onnx=13)\n"
      "  input  %x: float32[1,64,28,28]\n"
      "  const  %w: float32[64,64,3,3] = random(seed=21)\n"
      "  %c = Conv(%x, %w) {kernel_shape=[3,3], pads=[1,1,1,1]} : float32[1,64,28,28]  # conv\n"
      "  %a = Add(%c, %x) : float32[1,64,28,28]  # add\n"
      "  output %a: float32[1,64,28,28]\n";
  Compiled c = Compile(text);
  ASSERT_TRUE(c.module);
  std::string algo;
  for (const runtime::Step& s : c.module->steps)
    if (s.kernel == "conv2d") algo = s.params.strings.at("algorithm");
  const bool accumulates =
      algo != conv::AlgorithmName(conv::Algorithm::kWinograd) &&
      algo != conv::AlgorithmName(conv::Algorithm::kDepthwise) &&
      algo != conv::AlgorithmName(conv::Algorithm::kGroupedDirect);
  EXPECT_EQ(Residual(*c.module).size(), accumulates ? 1u : 0u) << algo;
  EXPECT_EQ(CountKernel(*c.module, "eltwise_binary"), accumulates ? 0u : 1u) << algo;
  ExpectMatchesInterpreter(c, RandomTensor({1, 64, 28, 28}, 11));
}

TEST(LowerFuseResidual, HostileParamsAreRefused) {
  Compiled c = Compile(Bottleneck(1, 16, false, false));
  ASSERT_TRUE(c.module);
  const auto fused = Residual(*c.module);
  ASSERT_EQ(fused.size(), 1u);
  runtime::Step step = *fused[0];
  ASSERT_TRUE(runtime::CreateKernel(step, *c.module).ok());
  runtime::Step bad = step;
  bad.params.ints["residual"] = 2;
  EXPECT_FALSE(runtime::CreateKernel(bad, *c.module).ok());
  bad = step;
  bad.inputs.pop_back();  // a residual step without Z
  EXPECT_FALSE(runtime::CreateKernel(bad, *c.module).ok());
  bad = step;
  bad.params.ints.erase("residual");  // Z without the param
  EXPECT_FALSE(runtime::CreateKernel(bad, *c.module).ok());

  // Z of the wrong dims is an error of InferShapes, not a read past a buffer.
  auto k = runtime::CreateKernel(step, *c.module);
  ASSERT_TRUE(k.ok());
  using runtime::Dims;
  const Dims x{1, 16, 9, 9}, z_bad{1, 16, 9, 8};
  std::vector<std::optional<Dims>> out;
  const Dims* wrong[] = {&x, &z_bad};
  const Status st = (*k)->InferShapes(wrong, &out);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("residual"), std::string::npos) << st.message();
  const Dims* right[] = {&x, &x};
  EXPECT_TRUE((*k)->InferShapes(right, &out).ok());
}

}  // namespace
}  // namespace kiln
