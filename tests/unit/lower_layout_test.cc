// Layout planning (lower/layout.h): chains of kDirectNchwc (and blocked Winograd and depthwise)
// convs and the elementwise steps between them stay channel-blocked, with explicit reorders only where they meet NCHW steps.
// Every graph runs in a session and is compared with the reference interpreter; the reorder
// counts are asserted so that a plan that stops propagating fails here. Under KILN_ISA=avx2 the
// block is 8, under KILN_ISA=scalar no conv runs NCHWc and nothing may change.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <unistd.h>

#include "interp/interpreter.h"
#include "ir/parser.h"
#include "kernels/conv/conv.h"
#include "lower/layout.h"
#include "lower/lower.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "runtime/kernel_registry.h"
#include "runtime/module_file.h"
#include "runtime/session.h"
#include "runtime_ref/reference_partition.h"
#include "lower_test_util.h"

namespace kiln {
namespace {

using lower_test::Compile;
using lower_test::Compiled;
using lower_test::CountKernel;
using lower_test::ExpectMatchesInterpreter;
using lower_test::RandomTensor;

// The block kDirectNchwc uses at the active ISA, or 0 where the cost model never picks it.
int64_t ActiveBlock() {
  if (ActiveIsa() >= IsaLevel::kAvx512) return 16;
  if (ActiveIsa() >= IsaLevel::kAvx2) return 8;
  return 0;
}

// Sets KILN_LAYOUT for one scope.
class LayoutEnv {
 public:
  explicit LayoutEnv(const char* value) { setenv("KILN_LAYOUT", value, 1); }
  ~LayoutEnv() { unsetenv("KILN_LAYOUT"); }
};

// conv steps that run NCHWc, and those of them with a blocked side.
size_t CountDirect(const runtime::Module& m) {
  size_t n = 0;
  for (const runtime::Step& s : m.steps)
    n += s.kernel == "conv2d" && s.params.strings.at("algorithm") ==
                                     conv::AlgorithmName(conv::Algorithm::kDirectNchwc);
  return n;
}
size_t CountBlockedSides(const runtime::Module& m) {
  size_t n = 0;
  for (const runtime::Step& s : m.steps)
    n += s.params.ints.count("layout_in") + s.params.ints.count("layout_out");
  return n;
}

// Conv 3x3 (C -> M) + Relu, Conv 3x3 (M -> M), a residual Add, MaxPool, GlobalAveragePool,
// Flatten, Gemm: the convs and the Add form one blocked chain when C and M fill whole blocks.
std::string Chain(int64_t batch, int64_t c, int64_t m) {
  const std::string b = std::to_string(batch), cs = std::to_string(c), ms = std::to_string(m);
  return "graph main (opsets ai.onnx=13)\n"
         "  input  %x: float32[" + b + "," + cs + ",12,12]\n"
         "  const  %w1: float32[" + ms + "," + cs + ",3,3] = random(seed=11)\n"
         "  const  %b1: float32[" + ms + "] = random(seed=12)\n"
         "  const  %w2: float32[" + ms + "," + ms + ",3,3] = random(seed=13)\n"
         "  const  %w3: float32[5," + ms + "] = random(seed=14)\n"
         "  %c1 = Conv(%x, %w1, %b1) {kernel_shape=[3,3], pads=[1,1,1,1]} : float32[" + b + "," + ms + ",12,12]  # conv1\n"
         "  %r1 = Relu(%c1) : float32[" + b + "," + ms + ",12,12]  # relu1\n"
         "  %c2 = Conv(%r1, %w2) {kernel_shape=[3,3], pads=[1,1,1,1]} : float32[" + b + "," + ms + ",12,12]  # conv2\n"
         "  %a = Add(%c2, %r1) : float32[" + b + "," + ms + ",12,12]  # residual\n"
         "  %p = MaxPool(%a) {kernel_shape=[2,2], strides=[2,2]} : float32[" + b + "," + ms + ",6,6]  # pool\n"
         "  %g = GlobalAveragePool(%p) : float32[" + b + "," + ms + ",1,1]  # gap\n"
         "  %f = Flatten(%g) {axis=1} : float32[" + b + "," + ms + "]  # flatten\n"
         "  %y = Gemm(%f, %w3) {transB=1} : float32[" + b + ",5]  # fc\n"
         "  output %y: float32[" + b + ",5]\n";
}

TEST(LowerLayout, ConvChainStaysBlockedWithReordersOnlyAtItsEnds) {
  const int64_t block = ActiveBlock();
  Compiled c = Compile(Chain(2, 16, 32));
  ASSERT_TRUE(c.module);
  if (block == 0) {
    // No conv runs NCHWc, so nothing is blocked and nothing is reordered.
    EXPECT_EQ(CountDirect(*c.module), 0u);
    EXPECT_EQ(CountKernel(*c.module, "layout_reorder"), 0u);
    EXPECT_EQ(CountBlockedSides(*c.module), 0u);
  } else {
    ASSERT_EQ(CountDirect(*c.module), 2u);
    // x enters through conv1's own in-step reorder (a reorder step there would save nothing);
    // the conv->relu->conv->add values stay blocked; one reorder step leaves the chain (the
    // Add's sum, read by MaxPool).
    EXPECT_EQ(CountKernel(*c.module, "layout_reorder"), 1u);
    EXPECT_EQ(CountBlockedSides(*c.module), 3u);
    for (const runtime::ValueInfo& v : c.module->values) {
      if (v.dims.size() == 5) {
        EXPECT_EQ(v.dims[4], block) << v.name;
      }
    }
  }
  ExpectMatchesInterpreter(c, RandomTensor({2, 16, 12, 12}, 1));
}

TEST(LowerLayout, ChannelsThatDoNotFillBlocksStayNchw) {
  // 17 channels would pad their last block of 8 or 16 by more than a third: the convs may run
  // NCHWc, but only inside their own steps.
  Compiled c = Compile(Chain(1, 17, 17));
  ASSERT_TRUE(c.module);
  EXPECT_EQ(CountKernel(*c.module, "layout_reorder"), 0u);
  EXPECT_EQ(CountBlockedSides(*c.module), 0u);
  for (const runtime::ValueInfo& v : c.module->values) EXPECT_LE(v.dims.size(), 4u) << v.name;
  ExpectMatchesInterpreter(c, RandomTensor({1, 17, 12, 12}, 3));
}

TEST(LowerLayout, TurnedOffByEnvironment) {
  LayoutEnv off("0");
  EXPECT_FALSE(lower::LayoutPlanningEnabled());
  Compiled c = Compile(Chain(1, 16, 32));
  ASSERT_TRUE(c.module);
  EXPECT_EQ(CountKernel(*c.module, "layout_reorder"), 0u);
  EXPECT_EQ(CountBlockedSides(*c.module), 0u);
  ExpectMatchesInterpreter(c, RandomTensor({1, 16, 12, 12}, 4));
}

TEST(LowerLayout, ValueWithBlockedAndPlainReadersGetsOneSharedReorder) {
  const int64_t block = ActiveBlock();
  // r1 feeds conv2 (blocked), MaxPool and AveragePool (NCHW) and is a graph output.
  const std::string text =
      "graph main (opsets ai.onnx=13)\n"
      "  input  %x: float32[1,16,10,10]\n"
      "  const  %w1: float32[16,16,3,3] = random(seed=21)\n"
      "  const  %w2: float32[16,16,3,3] = random(seed=22)\n"
      "  %c1 = Conv(%x, %w1) {kernel_shape=[3,3], pads=[1,1,1,1]} : float32[1,16,10,10]  # conv1\n"
      "  %r1 = Clip(%c1) {min=0.0, max=6.0} : float32[1,16,10,10]  # clip\n"
      "  %t1 = Sigmoid(%r1) : float32[1,16,10,10]  # sigmoid\n"
      "  %c2 = Conv(%t1, %w2) {kernel_shape=[3,3], pads=[1,1,1,1]} : float32[1,16,10,10]  # conv2\n"
      "  %m = Mul(%c2, %r1) : float32[1,16,10,10]  # mul\n"
      "  %p = MaxPool(%r1) {kernel_shape=[2,2], strides=[2,2]} : float32[1,16,5,5]  # maxpool\n"
      "  %q = AveragePool(%r1) {kernel_shape=[2,2], strides=[2,2]} : float32[1,16,5,5]  # avgpool\n"
      "  %s = Add(%p, %q) : float32[1,16,5,5]  # sum\n"
      "  output %m: float32[1,16,10,10]\n"
      "  output %s: float32[1,16,5,5]\n"
      "  output %r1: float32[1,16,10,10]\n";
  Compiled c = Compile(text);
  ASSERT_TRUE(c.module);
  if (block == 0) {
    EXPECT_EQ(CountKernel(*c.module, "layout_reorder"), 0u);
  } else {
    // r1 out once (both pools and the caller share it); m out to the caller.
    EXPECT_EQ(CountKernel(*c.module, "layout_reorder"), 2u);
    size_t from_r1 = 0;
    for (const runtime::Step& s : c.module->steps)
      if (s.kernel == "layout_reorder" && s.name == "r1") ++from_r1;
    EXPECT_EQ(from_r1, 1u);
  }
  ExpectMatchesInterpreter(c, RandomTensor({1, 16, 10, 10}, 5));
}

TEST(LowerLayout, BroadcastBinaryAndGemmConvsStayNchw) {
  // A per-channel Mul (broadcast) is not layout-agnostic and the 1x1 conv runs on a GEMM: the
  // lone NCHWc conv keeps its in-step reorders.
  const std::string text =
      "graph main (opsets ai.onnx=13)\n"
      "  input  %x: float32[1,16,8,8]\n"
      "  const  %w1: float32[16,16,3,3] = random(seed=31)\n"
      "  const  %w2: float32[16,16,1,1] = random(seed=32)\n"
      "  const  %s: float32[16,1,1] = random(seed=33)\n"
      "  %c1 = Conv(%x, %w1) {kernel_shape=[3,3], pads=[1,1,1,1]} : float32[1,16,8,8]  # conv1\n"
      "  %m = Mul(%c1, %s) : float32[1,16,8,8]  # scale\n"
      "  %y = Conv(%m, %w2) {kernel_shape=[1,1]} : float32[1,16,8,8]  # conv1x1\n"
      "  output %y: float32[1,16,8,8]\n";
  Compiled c = Compile(text);
  ASSERT_TRUE(c.module);
  EXPECT_EQ(CountKernel(*c.module, "layout_reorder"), 0u);
  ExpectMatchesInterpreter(c, RandomTensor({1, 16, 8, 8}, 6));
}

// A 3x3 stem, then a ResNet bottleneck (1x1, 3x3, 1x1, residual from the stem): the cost model
// gives both 3x3 layers Winograd, whose NCHWc form keeps the chain blocked from the stem's output
// to y, with the 1x1 layers on the direct kernel; x enters through the stem's in-step reorder,
// y leaves through one reorder step.
TEST(LowerLayout, BottleneckWithWinogradStaysBlocked) {
  const int64_t block = ActiveBlock();
  const std::string t = "float32[1,64,16,16]";
  const std::string text =
      "graph main (opsets ai.onnx=13)\n"
      "  input  %x: " + t + "\n"
      "  const  %w0: float32[64,64,3,3] = random(seed=40)\n"
      "  const  %w1: float32[64,64,1,1] = random(seed=41)\n"
      "  const  %w2: float32[64,64,3,3] = random(seed=42)\n"
      "  const  %b2: float32[64] = random(seed=43)\n"
      "  const  %w3: float32[64,64,1,1] = random(seed=44)\n"
      "  %c0 = Conv(%x, %w0) {kernel_shape=[3,3], pads=[1,1,1,1]} : " + t + "  # stem\n"
      "  %r0 = Relu(%c0) : " + t + "  # relu0\n"
      "  %c1 = Conv(%r0, %w1) {kernel_shape=[1,1]} : " + t + "  # reduce\n"
      "  %r1 = Relu(%c1) : " + t + "  # relu1\n"
      "  %c2 = Conv(%r1, %w2, %b2) {kernel_shape=[3,3], pads=[1,1,1,1]} : " + t + "  # conv3x3\n"
      "  %r2 = Relu(%c2) : " + t + "  # relu2\n"
      "  %c3 = Conv(%r2, %w3) {kernel_shape=[1,1]} : " + t + "  # expand\n"
      "  %a = Add(%c3, %r0) : " + t + "  # residual\n"
      "  %y = Relu(%a) : " + t + "  # relu3\n"
      "  output %y: " + t + "\n";
  Compiled c = Compile(text);
  ASSERT_TRUE(c.module);
  size_t winograd = 0, blocked_winograd = 0, blocked_through = 0;
  for (const runtime::Step& s : c.module->steps) {
    if (s.kernel != "conv2d" ||
        s.params.strings.at("algorithm") != conv::AlgorithmName(conv::Algorithm::kWinograd))
      continue;
    ++winograd;
    if (s.params.IntOr("block", 1) != block) continue;
    ++blocked_winograd;
    if (s.params.IntOr("layout_in", 0) == block && s.params.IntOr("layout_out", 0) == block)
      ++blocked_through;
  }
  if (block == 0) {
    EXPECT_EQ(CountBlockedSides(*c.module), 0u);
  } else {
    EXPECT_EQ(winograd, 2u);
    EXPECT_EQ(blocked_winograd, 2u);
    EXPECT_EQ(blocked_through, 1u);  // the bottleneck's; the stem reads x NCHW
    EXPECT_EQ(CountDirect(*c.module), 2u);
    EXPECT_EQ(CountKernel(*c.module, "layout_reorder"), 1u);
  }
  ExpectMatchesInterpreter(c, RandomTensor({1, 64, 16, 16}, 7));
}

// A Winograd layer between NCHW steps (pools): no group pays for reorder steps, so the conv runs
// its NCHWc form with in-step reorders (block set, no blocked side).
// Batches of one and three images (the runtime steps keep a one-image conv beside the batch's).
TEST(LowerLayout, LoneWinogradRunsBlockedInsideItsStep) {
  const int64_t block = ActiveBlock();
  for (int64_t batch : {1, 3}) {
    const std::string b = std::to_string(batch);
    const std::string text =
        "graph main (opsets ai.onnx=13)\n"
        "  input  %x: float32[" + b + ",32,30,30]\n"
        "  const  %w: float32[64,32,3,3] = random(seed=51)\n"
        "  %p = MaxPool(%x) {kernel_shape=[2,2], strides=[2,2]} : float32[" + b + ",32,15,15]"
        "  # pool1\n"
        "  %c = Conv(%p, %w) {kernel_shape=[3,3], pads=[1,1,1,1]} : float32[" + b + ",64,15,15]"
        "  # conv\n"
        "  %y = MaxPool(%c) {kernel_shape=[3,3], strides=[2,2]} : float32[" + b + ",64,7,7]"
        "  # pool2\n"
        "  output %y: float32[" + b + ",64,7,7]\n";
    Compiled c = Compile(text);
    ASSERT_TRUE(c.module);
    EXPECT_EQ(CountKernel(*c.module, "layout_reorder"), 0u);
    EXPECT_EQ(CountBlockedSides(*c.module), 0u);
    size_t convs = 0;
    for (const runtime::Step& s : c.module->steps) {
      if (s.kernel != "conv2d") continue;
      ++convs;
      if (block == 0) continue;  // no SIMD ISA: the cost model picks im2col
      EXPECT_EQ(s.params.strings.at("algorithm"),
                conv::AlgorithmName(conv::Algorithm::kWinograd));
      EXPECT_EQ(s.params.IntOr("block", 1), block);
    }
    EXPECT_EQ(convs, 1u);
    ExpectMatchesInterpreter(c, RandomTensor({batch, 32, 30, 30}, 8));
  }
}

// conv steps that run depthwise on NCHWc.
size_t CountBlockedDepthwise(const runtime::Module& m) {
  size_t n = 0;
  for (const runtime::Step& s : m.steps)
    n += s.kernel == "conv2d" &&
         s.params.strings.at("algorithm") == conv::AlgorithmName(conv::Algorithm::kDepthwise) &&
         s.params.IntOr("block", 1) > 1;
  return n;
}

// A MobileNetV2 inverted residual after a 3x3 stem: 1x1 expand (C -> E) + ReLU6, 3x3 depthwise
// (stride 1) + ReLU6, 1x1 project (E -> C), Add with the stem's output; then a graph output.
std::string InvertedResidual(int64_t c, int64_t e, int64_t dw_kernel = 3) {
  const std::string cs = std::to_string(c), es = std::to_string(e);
  const std::string k = std::to_string(dw_kernel), pad = std::to_string(dw_kernel / 2);
  const std::string t = "float32[1," + cs + ",10,10]", te = "float32[1," + es + ",10,10]";
  return "graph main (opsets ai.onnx=13)\n"
         "  input  %x: " + t + "\n"
         "  const  %w0: float32[" + cs + "," + cs + ",3,3] = random(seed=41)\n"
         "  const  %w1: float32[" + es + "," + cs + ",1,1] = random(seed=42)\n"
         "  const  %b1: float32[" + es + "] = random(seed=43)\n"
         "  const  %w2: float32[" + es + ",1," + k + "," + k + "] = random(seed=44)\n"
         "  const  %b2: float32[" + es + "] = random(seed=45)\n"
         "  const  %w3: float32[" + cs + "," + es + ",1,1] = random(seed=46)\n"
         "  %s = Conv(%x, %w0) {kernel_shape=[3,3], pads=[1,1,1,1]} : " + t + "  # stem\n"
         "  %e = Conv(%s, %w1, %b1) {kernel_shape=[1,1]} : " + te + "  # expand\n"
         "  %er = Clip(%e) {min=0.0, max=6.0} : " + te + "  # expand_relu6\n"
         "  %d = Conv(%er, %w2, %b2) {kernel_shape=[" + k + "," + k + "], pads=[" + pad + "," + pad +
         "," + pad + "," + pad + "], group=" + es + "} : " + te + "  # dw\n"
         "  %dr = Clip(%d) {min=0.0, max=6.0} : " + te + "  # dw_relu6\n"
         "  %p = Conv(%dr, %w3) {kernel_shape=[1,1]} : " + t + "  # project\n"
         "  %y = Add(%p, %s) : " + t + "  # residual\n"
         "  output %y: " + t + "\n";
}

TEST(LowerLayout, DepthwiseSeparableBlockStaysBlocked) {
  const int64_t block = ActiveBlock();
  Compiled c = Compile(InvertedResidual(16, 32));
  ASSERT_TRUE(c.module);
  if (block == 0) {
    EXPECT_EQ(CountBlockedDepthwise(*c.module), 0u);
    EXPECT_EQ(CountKernel(*c.module, "layout_reorder"), 0u);
    EXPECT_EQ(CountBlockedSides(*c.module), 0u);
  } else {
    // The 1x1 convs run direct on NCHWc, the depthwise one blocked: x enters through the stem's
    // own reorder, one reorder step takes the sum out to the caller, and every value between
    // is blocked (stem out, expand in/out, dw in/out, project in/out).
    EXPECT_EQ(CountDirect(*c.module), 3u);
    EXPECT_EQ(CountBlockedDepthwise(*c.module), 1u);
    EXPECT_EQ(CountKernel(*c.module, "layout_reorder"), 1u);
    EXPECT_EQ(CountBlockedSides(*c.module), 7u);
    for (const runtime::ValueInfo& v : c.module->values) {
      if (v.dims.size() == 5) {
        EXPECT_EQ(v.dims[4], block) << v.name;
      }
    }
  }
  ExpectMatchesInterpreter(c, RandomTensor({1, 16, 10, 10}, 7));
}

TEST(LowerLayout, DepthwiseSeparableBlockRoundTripsThroughAFile) {
  Compiled c = Compile(InvertedResidual(16, 48, 5));
  ASSERT_TRUE(c.module);
  if (ActiveBlock() > 0) {
    EXPECT_EQ(CountBlockedDepthwise(*c.module), 1u);
  }
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("lower_layout_test_" + std::to_string(getpid()) + ".kiln"))
                               .string();
  ASSERT_TRUE(runtime::SaveModule(*c.module, path).ok());
  auto loaded = runtime::LoadModule(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto model = runtime::CompiledModel::Create(*loaded);
  ASSERT_TRUE(model.ok()) << model.status().message();
  Compiled reloaded;
  reloaded.graph = std::move(c.graph);
  reloaded.module = *loaded;
  reloaded.model = *model;
  ExpectMatchesInterpreter(reloaded, RandomTensor({1, 16, 10, 10}, 8));
}

// MobileNetV3's inverted residual with squeeze-and-excitation: expand, depthwise, then
// GlobalAveragePool -> 1x1 fc1 + Relu -> 1x1 fc2 -> HardSigmoid -> Mul (a per-channel scale of
// the depthwise output), project, residual Add.
std::string SqueezeExcite(int64_t c, int64_t e, int64_t r, bool scale_first) {
  const std::string cs = std::to_string(c), es = std::to_string(e), rs = std::to_string(r);
  const std::string t = "float32[1," + cs + ",8,8]", te = "float32[1," + es + ",8,8]";
  const std::string mul = scale_first ? "Mul(%h, %dr)" : "Mul(%dr, %h)";
  return "graph main (opsets ai.onnx=13)\n"
         "  input  %x: " + t + "\n"
         "  const  %w0: float32[" + cs + "," + cs + ",3,3] = random(seed=51)\n"
         "  const  %w1: float32[" + es + "," + cs + ",1,1] = random(seed=52)\n"
         "  const  %w2: float32[" + es + ",1,3,3] = random(seed=53)\n"
         "  const  %f1: float32[" + rs + "," + es + ",1,1] = random(seed=54)\n"
         "  const  %f2: float32[" + es + "," + rs + ",1,1] = random(seed=55)\n"
         "  const  %w3: float32[" + cs + "," + es + ",1,1] = random(seed=56)\n"
         "  %s = Conv(%x, %w0) {kernel_shape=[3,3], pads=[1,1,1,1]} : " + t + "  # stem\n"
         "  %e = Conv(%s, %w1) {kernel_shape=[1,1]} : " + te + "  # expand\n"
         "  %er = HardSwish(%e) : " + te + "  # expand_act\n"
         "  %d = Conv(%er, %w2) {kernel_shape=[3,3], pads=[1,1,1,1], group=" + es + "} : " + te +
         "  # dw\n"
         "  %dr = HardSwish(%d) : " + te + "  # dw_act\n"
         "  %g = GlobalAveragePool(%dr) : float32[1," + es + ",1,1]  # gap\n"
         "  %q = Conv(%g, %f1) {kernel_shape=[1,1]} : float32[1," + rs + ",1,1]  # fc1\n"
         "  %qr = Relu(%q) : float32[1," + rs + ",1,1]  # fc1_relu\n"
         "  %h0 = Conv(%qr, %f2) {kernel_shape=[1,1]} : float32[1," + es + ",1,1]  # fc2\n"
         "  %h = HardSigmoid(%h0) {alpha=0.16666667, beta=0.5} : float32[1," + es + ",1,1]  # hsig\n"
         "  %m = " + mul + " : " + te + "  # scale\n"
         "  %p = Conv(%m, %w3) {kernel_shape=[1,1]} : " + t + "  # project\n"
         "  %y = Add(%p, %s) : " + t + "  # residual\n"
         "  output %y: " + t + "\n";
}

TEST(LowerLayout, SqueezeExciteStaysBlocked) {
  const int64_t block = ActiveBlock();
  for (bool scale_first : {false, true}) {
    SCOPED_TRACE(scale_first ? "Mul(scale, x)" : "Mul(x, scale)");
    Compiled c = Compile(SqueezeExcite(16, 48, 8, scale_first));
    ASSERT_TRUE(c.module);
    if (block > 0) {
      // The pool reads the blocked depthwise output; the Mul scales it in place of a broadcast;
      // only the sum leaves the chain through a reorder step.
      EXPECT_EQ(CountKernel(*c.module, "channel_scale_nchwc"), 1u);
      // The residual Add is folded into the project conv (lower/fuse_residual.h).
      EXPECT_EQ(CountKernel(*c.module, "eltwise_binary"), 0u);
      EXPECT_EQ(CountKernel(*c.module, "layout_reorder"), 1u);
      size_t blocked_pools = 0;
      for (const runtime::Step& st : c.module->steps)
        blocked_pools += st.kernel == "global_avgpool" && st.params.IntOr("layout_in", 0) == block;
      EXPECT_EQ(blocked_pools, 1u);
    } else {
      EXPECT_EQ(CountKernel(*c.module, "channel_scale_nchwc"), 0u);
    }
    size_t residual = 0;
    for (const runtime::Step& st : c.module->steps) residual += st.params.IntOr("residual", 0);
    EXPECT_EQ(residual, 1u);
    ExpectMatchesInterpreter(c, RandomTensor({1, 16, 8, 8}, 10));
  }
}

TEST(LowerLayout, BlockedStepsRefuseBadParams) {
  // A module file may be hostile: the blocked kernels check their params when created.
  runtime::Module m;
  for (const char* name : {"x", "s", "y"}) {
    runtime::ValueInfo v;
    v.name = name;
    v.dtype = DType::kFloat32;
    m.values.push_back(v);
  }
  runtime::Step scale;
  scale.name = "scale";
  scale.kernel = "channel_scale_nchwc";
  scale.inputs = {0, 1};
  scale.outputs = {2};
  for (int64_t block : {0, 1, 65}) {
    scale.params.ints["block"] = block;
    EXPECT_FALSE(runtime::CreateKernel(scale, m).ok()) << block;
  }
  scale.params.ints["block"] = 16;
  auto k = runtime::CreateKernel(scale, m);
  ASSERT_TRUE(k.ok()) << k.status().message();
  using runtime::Dims;
  const Dims x{1, 2, 3, 3, 16}, wrong{1, 16, 1, 1}, right{1, 32, 1, 1};
  std::vector<std::optional<Dims>> out;
  const Dims* bad[] = {&x, &wrong};
  EXPECT_FALSE((*k)->InferShapes(bad, &out).ok());
  const Dims* good[] = {&x, &right};
  ASSERT_TRUE((*k)->InferShapes(good, &out).ok());
  EXPECT_EQ(out[0], x);

  runtime::Step pool;
  pool.name = "pool";
  pool.inputs = {0};
  pool.outputs = {2};
  pool.params.ints["layout_in"] = 16;
  pool.kernel = "global_maxpool";  // only the average reads NCHWc
  EXPECT_FALSE(runtime::CreateKernel(pool, m).ok());
  pool.kernel = "global_avgpool";
  pool.params.ints["layout_in"] = 1;
  EXPECT_FALSE(runtime::CreateKernel(pool, m).ok());
  pool.params.ints["layout_in"] = 16;
  EXPECT_FALSE(runtime::CreateKernel(pool, m).ok());  // no channel count
  pool.params.ints["channels"] = 32;
  auto p = runtime::CreateKernel(pool, m);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const Dims* plain[] = {&wrong};
  EXPECT_FALSE((*p)->InferShapes(plain, &out).ok());
  const Dims* blocked[] = {&x};
  ASSERT_TRUE((*p)->InferShapes(blocked, &out).ok());
  EXPECT_EQ(out[0], (Dims{1, 32, 1, 1}));
}

TEST(LowerLayout, DepthwiseWithPaddedBlocks) {
  // 40 channels fill 2.5 blocks of 16 (5 of 8): held as 3 blocks, the last padded, within the
  // third of padding the plan accepts.
  const int64_t block = ActiveBlock();
  Compiled c = Compile(InvertedResidual(16, 40));
  ASSERT_TRUE(c.module);
  if (block > 0) {
    EXPECT_EQ(CountBlockedDepthwise(*c.module), 1u);
    bool padded = false;
    for (const runtime::ValueInfo& v : c.module->values) {
      if (v.dims.size() == 5) {
        EXPECT_EQ(v.dims[4], block) << v.name;
        padded = padded || v.dims[1] * v.dims[4] == 48;
      }
    }
    EXPECT_EQ(padded, block == 16);
  }
  ExpectMatchesInterpreter(c, RandomTensor({1, 16, 10, 10}, 9));
}

TEST(LowerLayout, SqueezeExciteWithPaddedBlocks) {
  // 72 channels: 4.5 blocks of 16. The pool skips and the scale zeroes the padding lanes.
  Compiled c = Compile(SqueezeExcite(16, 72, 24, false));
  ASSERT_TRUE(c.module);
  if (ActiveBlock() > 0) {
    EXPECT_EQ(CountKernel(*c.module, "channel_scale_nchwc"), 1u);
  }
  ExpectMatchesInterpreter(c, RandomTensor({1, 16, 8, 8}, 11));
}

TEST(LowerLayout, PaddedBlocksAvoidDivision) {
  // A Div inside a padded group could turn its zero padding lanes into NaN (0 / 0), which the
  // next conv's zero weights would not cancel: such a group stays NCHW.
  const std::string t = "float32[1,40,6,6]";
  const std::string text =
      "graph main (opsets ai.onnx=13)\n"
      "  input  %x: float32[1,16,6,6]\n"
      "  input  %d: " + t + "\n"
      "  const  %w1: float32[40,16,3,3] = random(seed=61)\n"
      "  const  %w2: float32[40,1,3,3] = random(seed=62)\n"
      "  %a = Conv(%x, %w1) {kernel_shape=[3,3], pads=[1,1,1,1]} : " + t + "  # conv\n"
      "  %q = Div(%a, %d) : " + t + "  # div\n"
      "  %y = Conv(%q, %w2) {kernel_shape=[3,3], pads=[1,1,1,1], group=40} : " + t + "  # dw\n"
      "  output %y: " + t + "\n";
  Compiled c = Compile(text);
  ASSERT_TRUE(c.module);
  if (ActiveBlock() == 16) {
    for (const runtime::ValueInfo& v : c.module->values) EXPECT_LE(v.dims.size(), 4u) << v.name;
  }
}

// An image stem (3 -> M, 3x3 s2) + an activation, then `next`: a depthwise 3x3 conv + ReLU and a
// 1x1 conv (MobileNet-like), or a MaxPool (ResNet-like).
std::string Stem(int64_t m, bool maxpool) {
  const std::string ms = std::to_string(m), t = "float32[2," + ms + ",8,9]";
  std::string g = "graph main (opsets ai.onnx=13)\n"
                  "  input  %x: float32[2,3,15,17]\n"
                  "  const  %w0: float32[" + ms + ",3,3,3] = random(seed=51)\n"
                  "  const  %b0: float32[" + ms + "] = random(seed=52)\n"
                  "  const  %w1: float32[" + ms + ",1,3,3] = random(seed=53)\n"
                  "  const  %w2: float32[8," + ms + ",1,1] = random(seed=54)\n"
                  "  %s = Conv(%x, %w0, %b0) {kernel_shape=[3,3], strides=[2,2], "
                  "pads=[1,1,1,1]} : " + t + "  # stem\n"
                  "  %sa = HardSwish(%s) : " + t + "  # stem_act\n";
  if (maxpool) {
    return g + "  %y = MaxPool(%sa) {kernel_shape=[2,2], strides=[2,2]} : float32[2," + ms +
           ",4,4]  # pool\n  output %y: float32[2," + ms + ",4,4]\n";
  }
  return g + "  %d = Conv(%sa, %w1) {kernel_shape=[3,3], pads=[1,1,1,1], group=" + ms + "} : " + t +
         "  # dw\n"
         "  %dr = Relu(%d) : " + t + "  # dw_relu\n"
         "  %y = Conv(%dr, %w2) {kernel_shape=[1,1]} : float32[2,8,8,9]  # project\n"
         "  output %y: float32[2,8,8,9]\n";
}

size_t CountStems(const runtime::Module& m) {
  size_t n = 0;
  for (const runtime::Step& s : m.steps)
    n += s.kernel == "conv2d" &&
         s.params.strings.at("algorithm") == conv::AlgorithmName(conv::Algorithm::kStemNchwc);
  return n;
}

TEST(LowerLayout, ImageStemWritesItsBlockedConsumersLayout) {
  for (int64_t m : {32, 24}) {  // whole blocks, and a padded last block at 16
    SCOPED_TRACE(m);
    Compiled c = Compile(Stem(m, false));
    ASSERT_TRUE(c.module);
    if (ActiveBlock() == 0) {
      EXPECT_EQ(CountStems(*c.module), 0u);
    } else {
      // The stem reads x as it is and writes NCHWc; the activation and the depthwise conv stay
      // blocked (no reorder step before it, and it reorders nothing itself).
      ASSERT_EQ(CountStems(*c.module), 1u);
      EXPECT_EQ(CountBlockedDepthwise(*c.module), 1u);
      for (const runtime::Step& s : c.module->steps) {
        EXPECT_FALSE(s.kernel == "layout_reorder" && s.params.IntOr("to_blocked", 0) == 1)
            << s.name;
        if (s.name == "stem") {
          EXPECT_EQ(s.params.IntOr("layout_out", 0), ActiveBlock());
          EXPECT_EQ(s.params.IntOr("layout_in", 0), 0);
        }
        if (s.name == "dw") {
          EXPECT_EQ(s.params.IntOr("layout_in", 0), ActiveBlock());
        }
      }
    }
    ExpectMatchesInterpreter(c, RandomTensor({2, 3, 15, 17}, 9));
  }
}

TEST(LowerLayout, ImageStemBeforeAnNchwStepStaysNchw) {
  // A blocked output would need a reorder back for the MaxPool: kGroupedDirect writes NCHW.
  Compiled c = Compile(Stem(32, true));
  ASSERT_TRUE(c.module);
  EXPECT_EQ(CountStems(*c.module), 0u);
  EXPECT_EQ(CountKernel(*c.module, "layout_reorder"), 0u);
  ExpectMatchesInterpreter(c, RandomTensor({2, 3, 15, 17}, 10));
}

TEST(LowerLayout, ImageStemRefusesABlockedInput) {
  Compiled c = Compile(Stem(32, false));
  ASSERT_TRUE(c.module);
  if (ActiveBlock() == 0) return;
  for (const runtime::Step& s : c.module->steps) {
    if (s.name != "stem") continue;
    ASSERT_TRUE(runtime::CreateKernel(s, *c.module).ok());
    runtime::Step bad = s;
    bad.params.ints["layout_in"] = ActiveBlock();  // kStemNchwc reads NCHW only
    EXPECT_FALSE(runtime::CreateKernel(bad, *c.module).ok());
  }
}

}  // namespace
}  // namespace kiln
