#include <gtest/gtest.h>

#include "frontend/onnx/importer.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace kiln::ir {
namespace {

void ExpectRoundTrip(const std::string& text) {
  auto g = ParseGraph(text);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(Verify(**g).ok()) << Verify(**g).message();
  EXPECT_EQ(PrintGraph(**g), text);
}

void ExpectParseError(const std::string& text, const std::string& fragment) {
  auto g = ParseGraph(text);
  ASSERT_FALSE(g.ok()) << text;
  EXPECT_NE(g.status().message().find(fragment), std::string::npos) << g.status().message();
}

TEST(IrParser, RoundTripsEveryConstruct) {
  ExpectRoundTrip(
      "graph \"my net\" (opsets ai.onnx=13 com.example=2)\n"
      "  input  %x: float32[N,3,?,\"2d\"]\n"
      "  input  %\"odd name\": int64[*]\n"
      "  input  %onnx::Conv_1: float16[2]\n"
      "  input  %c: bool[]\n"
      "  const  %w: float32[2,2] = [1,-2.5,1e-07,inf]\n"
      "  const  %big: float32[10,10] = random(seed=7)\n"
      "  const  %ints: int8[3] = [-128,0,127]\n"
      "  const  %h: float16[2] = [0.5,-1]\n"
      "  const  %s: string[2] = [\"a\\\"b\",\"\\n\"]\n"
      "  const  %scalar: int64[] = [3]\n"
      "  %a, _ = Foo@com.example(%x, _, %w) {ef=floats[], ei=[], es=strings[], f=1.0, "
      "fs=[0.5,2.0], "
      "i=-3, is=[1,2], s=\"q\", ss=[\"x\",\"y\"], t=float32[2] [1,2], "
      "ts=tensors[int64[1] [4],uint8[80] random(seed=3)]} : float32[N,3,?,\"2d\"], _  # node with "
      "spaces\n"
      "  %b = Relu(%\"odd name\") : int64[*]\n"
      "  %y = If(%c) {else_branch=graph(e), then_branch=graph(t)} : float32[2]  # \" padded \"\n"
      "    graph e\n"
      "      %e1 = Neg(%onnx::Conv_1) : float16[2]\n"
      "      output %e1: float16[2]\n"
      "    graph t\n"
      "      output %h: float16[2]\n"
      "  output %a: float32[N,3,?,\"2d\"]\n"
      "  output %y: float32[2]\n");
}

TEST(IrParser, SkipsCommentsAndBlankLines) {
  auto g =
      ParseGraph("# a comment\n\ngraph g\n  input  %x: float32[1]\n\n  output %x: float32[1]\n");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(PrintGraph(**g), "graph g\n  input  %x: float32[1]\n  output %x: float32[1]\n");
}

TEST(IrParser, NodesGetTheirGraphsOpset) {
  auto g = ParseGraph(
      "graph g (opsets ai.onnx=17)\n  input  %x: float32[1]\n  %y = Relu(%x) : float32[1]\n"
      "  output %y: float32[1]\n");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)->nodes()[0]->opset, 17);
  EXPECT_EQ((*g)->nodes()[0]->inputs[0], (*g)->inputs[0]);
  EXPECT_EQ((*g)->outputs[0]->producer, (*g)->nodes()[0].get());
}

TEST(IrParser, Errors) {
  ExpectParseError("graph g\n  %y = Relu(%x) : float32[1]\n  output %y: float32[1]\n",
                   "'x' is used but never defined");
  ExpectParseError("graph g\n  input  %x: float33[1]\n", "unknown element type 'float33'");
  ExpectParseError("graph g\n  const  %w: float32[3] = [1,2]\n", "expected 3 elements, got 2");
  ExpectParseError("graph g\n  const  %w: int8[1] = [300]\n", "in range");
  ExpectParseError("graph g\n  input  %x: float32[1]\n  input  %x: float32[1]\n", "defined twice");
  ExpectParseError("graph g\n  input  %x: float32[1]\n  %y = Relu(%x : float32[1]\n", "line 3");
  ExpectParseError("graph g\n  const  %w: float32[N] = [1]\n", "static shape");
  ExpectParseError(
      "graph g\n  input  %c: bool[]\n  %y = If(%c) {then_branch=graph(t)} : "
      "float32[1]\n  output %y: float32[1]\n",
      "missing subgraph");
  ExpectParseError("", "expected 'graph'");
}

TEST(IrParser, RandomFillRecoversItsSeed) {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt8,
                  DType::kInt64, DType::kUInt8, DType::kUInt64, DType::kBool, DType::kString}) {
    for (uint32_t seed : {0u, 7u, 0xffffffffu}) {
      Tensor f = RandomFill(t, {5, 13}, seed);
      EXPECT_EQ(FillSeedFor(f), seed) << DTypeName(t);
    }
  }
  Tensor f = RandomFill(DType::kFloat32, {100}, 5);
  for (float x : f.ToFloatVector()) {
    EXPECT_LE(std::abs(x), 1.0f);
    EXPECT_NE(x, 0.0f);
  }
  // Data that is not a fill prints a hash of its bytes; the same bytes the same seed.
  Tensor ones = Tensor::FromVector<float>(std::vector<float>(100, 1.0f), {100});
  Tensor ones2 = Tensor::FromVector<float>(std::vector<float>(100, 1.0f), {100});
  EXPECT_EQ(FillSeedFor(ones), FillSeedFor(ones2));
}

TEST(IrParser, RoundTripsAnImportedModel) {
  auto model = onnx::LoadModel(std::string(KILN_SOURCE_DIR) + "/models/digits_cnn.onnx");
  ASSERT_TRUE(model.ok()) << model.status().message();
  const std::string text = PrintGraph(*model->graph);
  auto g = ParseGraph(text);
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::string again = PrintGraph(**g);
  EXPECT_EQ(again, text);
  // Small constants keep their exact values through the text.
  const Value* mean = (*g)->FindValue("features.1.running_mean");
  ASSERT_TRUE(mean && mean->constant);
  EXPECT_EQ(mean->constant->ToFloatVector(),
            model->graph->FindValue("features.1.running_mean")->constant->ToFloatVector());
}

TEST(IrParser, RoundTripsSequenceAndOptionalTypes) {
  ExpectRoundTrip(
      "graph g (opsets ai.onnx=17)\n"
      "  input  %s: seq(float32[?,3])\n"
      "  input  %o: optional(seq(int64[*]))\n"
      "  input  %u: seq(undefined[*])\n"
      "  %e = OptionalGetElement(%o) : seq(int64[*])\n"
      "  %h = OptionalHasElement(%o) : bool[]\n"
      "  %p = Optional(%s) : optional(seq(float32[?,3]))\n"
      "  output %e: seq(int64[*])\n"
      "  output %h: bool[]\n"
      "  output %p: optional(seq(float32[?,3]))\n");
  auto g = ParseGraph("graph g\n  input  %s: seq(float32[2])\n  output %s: seq(float32[2])\n");
  ASSERT_TRUE(g.ok()) << g.status().message();
  const ValueType& t = (*g)->inputs[0]->type;
  EXPECT_EQ(t.dtype, DType::kSequence);
  EXPECT_EQ(t.item().dtype, DType::kFloat32);
  EXPECT_EQ(t.item().static_dims(), std::vector<int64_t>{2});
  EXPECT_EQ(t.ToString(), "seq(float32[2])");
  ExpectParseError("graph g\n  input  %s: seq(float32[2]\n", "expected ')'");
  ExpectParseError("graph g\n  const  %s: seq(float32[1]) = [1]\n", "static shape");
  std::string deep = "float32[1]";
  for (int i = 0; i < 20; ++i) deep = "seq(" + deep + ")";
  ExpectParseError("graph g\n  input  %s: " + deep + "\n", "nest deeper");
}

}  // namespace
}  // namespace kiln::ir
