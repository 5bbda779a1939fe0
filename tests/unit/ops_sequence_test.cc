// Sequence and optional values: the Tensor kinds that hold them, and each op of the sequence
// family (src/ops/sequence.cc, sequence_map.cc) against expected values, run through the
// reference interpreter from IR text.
#include <gtest/gtest.h>

#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ops/shape_inference.h"

namespace kiln {
namespace {

Tensor F(std::vector<float> v, std::vector<int64_t> dims) { return Tensor::FromVector(v, dims); }

std::vector<float> Floats(const Tensor& t) { return t.ToFloatVector(); }

// Parses `text`, runs it on `inputs`, returns its outputs (or the error).
Expected<std::vector<Tensor>> RunText(const std::string& text, interp::NamedTensors inputs) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
  KILN_RETURN_IF_ERROR(ops::InferShapes(*g));
  std::vector<Tensor> out;
  KILN_RETURN_IF_ERROR(interp::Run(*g, inputs, &out));
  return out;
}

Tensor Seq3() {  // [1,2], [3], [4,5,6]
  return Tensor::Sequence({F({1, 2}, {2}), F({3}, {1}), F({4, 5, 6}, {3})}, DType::kFloat32);
}

TEST(SequenceTensor, HoldsItemsAndNoElements) {
  Tensor s = Seq3();
  EXPECT_TRUE(s.is_sequence());
  EXPECT_TRUE(s.defined());
  EXPECT_EQ(s.numel(), 0);
  EXPECT_EQ(s.nbytes(), 0u);
  EXPECT_EQ(s.raw(), nullptr);
  ASSERT_EQ(s.items().size(), 3u);
  EXPECT_EQ(Floats(s.items()[2]), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(s.elem_dtype(), DType::kFloat32);
  EXPECT_EQ(DescribeTensor(s), "seq(3 x float32[2])");
  Tensor c = s.Clone();  // shares the immutable items
  EXPECT_EQ(c.items().size(), 3u);
  EXPECT_FALSE(s.ToInt64Vector("x").ok());
  EXPECT_TRUE(s.ToFloatVector().empty());
  EXPECT_FALSE(Tensor::Make(DType::kSequence, {2}).ok());
  EXPECT_TRUE(Tensor(DType::kSequence, {5}).items().empty());
}

TEST(SequenceTensor, OptionalIsEmptyOrOne) {
  Tensor e = Tensor::Optional(nullptr, DType::kInt64);
  EXPECT_TRUE(e.is_optional());
  EXPECT_TRUE(e.items().empty());
  EXPECT_EQ(DescribeTensor(e), "optional(empty)");
  Tensor v = F({7}, {1});
  Tensor o = Tensor::Optional(&v);
  ASSERT_EQ(o.items().size(), 1u);
  EXPECT_EQ(Floats(o.items()[0]), (std::vector<float>{7}));
  EXPECT_TRUE(Tensor().items().empty());  // a plain tensor has no items
}

TEST(SequenceTensor, ValueDTypes) {
  EXPECT_FALSE(IsKnownDType(static_cast<int32_t>(DType::kSequence)));
  EXPECT_TRUE(IsKnownValueDType(static_cast<int32_t>(DType::kSequence)));
  EXPECT_TRUE(IsKnownValueDType(static_cast<int32_t>(DType::kOptional)));
  EXPECT_FALSE(IsKnownValueDType(1002));
  EXPECT_EQ(DTypeSize(DType::kOptional), 0u);
}

TEST(SequenceOps, IdentityAndLength) {
  auto out = RunText(
      "graph g (opsets ai.onnx=16)\n  input  %s: seq(float32[*])\n"
      "  %i = Identity(%s) : seq(float32[*])\n  %n = SequenceLength(%i) : int64[]\n"
      "  output %i: seq(float32[*])\n  output %n: int64[]\n",
      {{"s", Seq3()}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].items().size(), 3u);
  EXPECT_EQ((*out)[1].AsInt64(0), 3);
}

TEST(SequenceOps, EmptyInsertAtErase) {
  auto out = RunText(
      "graph g (opsets ai.onnx=12)\n  input  %a: float32[2]\n  input  %b: float32[1]\n"
      "  const  %front: int64[] = [0]\n  const  %neg: int64[] = [-1]\n"
      "  %e = SequenceEmpty() : seq(float32[*])\n"
      "  %s1 = SequenceInsert(%e, %a) : seq(float32[*])\n"
      "  %s2 = SequenceInsert(%s1, %b, %front) : seq(float32[*])\n"
      "  %x = SequenceAt(%s2, %neg) : float32[*]\n"
      "  %s3 = SequenceErase(%s2, %front) : seq(float32[*])\n"
      "  %n = SequenceLength(%s3) : int64[]\n"
      "  output %x: float32[*]\n  output %s2: seq(float32[*])\n  output %n: int64[]\n",
      {{"a", F({1, 2}, {2})}, {"b", F({9}, {1})}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(Floats((*out)[0]), (std::vector<float>{1, 2}));
  ASSERT_EQ((*out)[1].items().size(), 2u);
  EXPECT_EQ(Floats((*out)[1].items()[0]), (std::vector<float>{9}));
  EXPECT_EQ((*out)[2].AsInt64(0), 1);
}

TEST(SequenceOps, PositionsOutOfRangeAndWrongKindsAreErrors) {
  const std::string at =
      "graph g (opsets ai.onnx=12)\n  input  %s: seq(float32[*])\n  input  %p: int64[]\n"
      "  %x = SequenceAt(%s, %p) : float32[*]\n  output %x: float32[*]\n";
  auto bad = RunText(at, {{"s", Seq3()}, {"p", Tensor::Scalar<int64_t>(3)}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("out of range"), std::string::npos)
      << bad.status().message();
  EXPECT_TRUE(RunText(at, {{"s", Seq3()}, {"p", Tensor::Scalar<int64_t>(-3)}}).ok());
  // A tensor op handed a sequence fails on its type instead of reading elements.
  auto relu = RunText(
      "graph g (opsets ai.onnx=13)\n  input  %s: seq(float32[*])\n"
      "  %y = Relu(%s) : float32[*]\n  output %y: float32[*]\n",
      {{"s", Seq3()}});
  EXPECT_FALSE(relu.ok());
  // A sequence op handed a tensor says so.
  auto len = RunText(
      "graph g (opsets ai.onnx=13)\n  input  %s: float32[2]\n"
      "  %n = SequenceLength(%s) : int64[]\n  output %n: int64[]\n",
      {{"s", F({1, 2}, {2})}});
  ASSERT_FALSE(len.ok());
  EXPECT_NE(len.status().message().find("must be a sequence"), std::string::npos);
  // Items of another element type are refused.
  auto ins = RunText(
      "graph g (opsets ai.onnx=13)\n  input  %s: seq(float32[*])\n  input  %t: int64[1]\n"
      "  %o = SequenceInsert(%s, %t) : seq(float32[*])\n  output %o: seq(float32[*])\n",
      {{"s", Seq3()}, {"t", Tensor::FromVector<int64_t>({1}, {1})}});
  EXPECT_FALSE(ins.ok());
}

TEST(SequenceOps, ConstructAndConcat) {
  const std::string text =
      "graph g (opsets ai.onnx=12)\n  input  %a: float32[1,2]\n  input  %b: float32[1,2]\n"
      "  %s = SequenceConstruct(%a, %b) : seq(float32[1,2])\n"
      "  %c = ConcatFromSequence(%s) {axis=0} : float32[*]\n"
      "  %k = ConcatFromSequence(%s) {axis=-1, new_axis=1} : float32[*]\n"
      "  output %c: float32[*]\n  output %k: float32[*]\n";
  auto out = RunText(text, {{"a", F({1, 2}, {1, 2})}, {"b", F({3, 4}, {1, 2})}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Floats((*out)[0]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ((*out)[1].dims(), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(Floats((*out)[1]), (std::vector<float>{1, 3, 2, 4}));
}

TEST(SequenceOps, SplitToSequence) {
  const Tensor x = F({1, 2, 3, 4, 5, 6}, {3, 2});
  auto ones = RunText(
      "graph g (opsets ai.onnx=12)\n  input  %x: float32[3,2]\n"
      "  %s = SplitToSequence(%x) {axis=0, keepdims=0} : seq(float32[*])\n"
      "  output %s: seq(float32[*])\n",
      {{"x", x}});
  ASSERT_TRUE(ones.ok()) << ones.status().message();
  ASSERT_EQ((*ones)[0].items().size(), 3u);
  EXPECT_EQ((*ones)[0].items()[1].dims(), (std::vector<int64_t>{2}));
  EXPECT_EQ(Floats((*ones)[0].items()[1]), (std::vector<float>{3, 4}));
  auto chunks = RunText(
      "graph g (opsets ai.onnx=12)\n  input  %x: float32[3,2]\n  const  %n: int64[] = [2]\n"
      "  %s = SplitToSequence(%x, %n) : seq(float32[*])\n  output %s: seq(float32[*])\n",
      {{"x", x}});
  ASSERT_TRUE(chunks.ok()) << chunks.status().message();
  ASSERT_EQ((*chunks)[0].items().size(), 2u);
  EXPECT_EQ((*chunks)[0].items()[1].dims(), (std::vector<int64_t>{1, 2}));
  auto lens = RunText(
      "graph g (opsets ai.onnx=12)\n  input  %x: float32[3,2]\n  const  %n: int64[2] = [1,1]\n"
      "  %s = SplitToSequence(%x, %n) {axis=1} : seq(float32[*])\n  output %s: seq(float32[*])\n",
      {{"x", x}});
  ASSERT_TRUE(lens.ok()) << lens.status().message();
  EXPECT_EQ(Floats((*lens)[0].items()[1]), (std::vector<float>{2, 4, 6}));
  auto wrong = RunText(
      "graph g (opsets ai.onnx=12)\n  input  %x: float32[3,2]\n  const  %n: int64[2] = [1,5]\n"
      "  %s = SplitToSequence(%x, %n) : seq(float32[*])\n  output %s: seq(float32[*])\n",
      {{"x", x}});
  EXPECT_FALSE(wrong.ok());
}

TEST(SequenceOps, Optionals) {
  const std::string text =
      "graph g (opsets ai.onnx=15)\n  input  %o: optional(float32[*])\n"
      "  %h = OptionalHasElement(%o) : bool[]\n  %v = OptionalGetElement(%o) : float32[*]\n"
      "  %w = Optional(%v) : optional(float32[*])\n"
      "  output %h: bool[]\n  output %v: float32[*]\n  output %w: optional(float32[*])\n";
  Tensor v = F({5, 6}, {2});
  auto out = RunText(text, {{"o", Tensor::Optional(&v)}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_TRUE((*out)[0].AsInt64(0));
  EXPECT_EQ(Floats((*out)[1]), (std::vector<float>{5, 6}));
  EXPECT_EQ((*out)[2].items().size(), 1u);
  auto empty = RunText(text, {{"o", Tensor::Optional(nullptr, DType::kFloat32)}});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);
  auto has = RunText(
      "graph g (opsets ai.onnx=15)\n  input  %o: optional(float32[*])\n"
      "  %h = OptionalHasElement(%o) : bool[]\n  output %h: bool[]\n",
      {{"o", Tensor::Optional(nullptr, DType::kFloat32)}});
  ASSERT_TRUE(has.ok()) << has.status().message();
  EXPECT_FALSE((*has)[0].AsInt64(0));
}

TEST(SequenceOps, SequenceMap) {
  auto out = RunText(
      "graph g (opsets ai.onnx=17)\n  input  %s: seq(float32[*])\n  input  %t: float32[1]\n"
      "  %m = SequenceMap(%s, %t) {body=graph(b)} : seq(float32[*])\n"
      "    graph b\n"
      "      input  %x: float32[*]\n      input  %y: float32[1]\n"
      "      %z = Add(%x, %y) : float32[*]\n      output %z: float32[*]\n"
      "  output %m: seq(float32[*])\n",
      {{"s", Seq3()}, {"t", F({10}, {1})}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ((*out)[0].items().size(), 3u);
  EXPECT_EQ(Floats((*out)[0].items()[2]), (std::vector<float>{14, 15, 16}));
}

}  // namespace
}  // namespace kiln
