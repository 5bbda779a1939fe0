// Op definitions of the shape, movement and indexing families: attribute handling, run-time
// checks and shape inference, driven through the op table as the interpreter does.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "ops/op_registry.h"

namespace kiln::ops {
namespace {

// One node with its own values; inputs given as tensors (constant ones also set Value::constant).
class OneNode {
 public:
  OneNode(const std::string& op, int opset, size_t num_outputs = 1) {
    node_.op_type = op;
    node_.name = "n";
    node_.opset = opset;
    for (size_t i = 0; i < num_outputs; ++i) node_.outputs.push_back(NewValue("out"));
  }
  // A runtime input of known type (not constant).
  OneNode& Input(const Tensor& t) {
    ir::Value* v = NewValue("in");
    v->type = ir::ValueType::Of(t.dtype(), t.dims());
    node_.inputs.push_back(v);
    tensors_.push_back(t);
    return *this;
  }
  OneNode& ConstInput(const Tensor& t) {
    Input(t);
    node_.inputs.back()->constant = t;
    return *this;
  }
  OneNode& Attr(const std::string& name, int64_t i) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kInt;
    a.i = i;
    node_.attrs[name] = a;
    return *this;
  }
  OneNode& Attr(const std::string& name, std::vector<int64_t> ints) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kInts;
    a.ints = std::move(ints);
    node_.attrs[name] = a;
    return *this;
  }

  Status Infer() { return Def()->infer(node_); }
  std::string OutType(size_t i = 0) const { return node_.outputs[i]->type.ToString(); }
  Expected<std::vector<Tensor>> Run() {
    RunContext ctx{node_, {}, {}, {}};
    for (const Tensor& t : tensors_) ctx.inputs.push_back(&t);
    ctx.outputs.resize(node_.outputs.size());
    KILN_RETURN_IF_ERROR(Def()->run(ctx));
    return ctx.outputs;
  }

 private:
  const OpDef* Def() const {
    const OpDef* def = FindOp("", node_.op_type);
    EXPECT_NE(def, nullptr) << node_.op_type;
    return def;
  }
  ir::Value* NewValue(const std::string& prefix) {
    values_.push_back(std::make_unique<ir::Value>());
    values_.back()->name = prefix + std::to_string(values_.size());
    return values_.back().get();
  }
  ir::Node node_;
  std::vector<std::unique_ptr<ir::Value>> values_;
  std::vector<Tensor> tensors_;
};

Tensor Ints(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::FromVector(v, {n});
}
Tensor Zeros(std::vector<int64_t> dims) { return Tensor(DType::kFloat32, std::move(dims)); }

TEST(TensorOpDefs, ReshapeResolvesZeroAndMinusOne) {
  OneNode n("Reshape", 14);
  n.Input(Zeros({2, 3, 4})).ConstInput(Ints({0, -1}));
  ASSERT_TRUE(n.Infer().ok());
  EXPECT_EQ(n.OutType(), "float32[2,12]");
  auto out = n.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{2, 12}));
}

TEST(TensorOpDefs, ReshapeRefusesWrongElementCount) {
  OneNode n("Reshape", 14);
  n.Input(Zeros({2, 3})).Input(Ints({4, 2}));
  ASSERT_TRUE(n.Infer().ok());  // shape not constant: rank 2, dims unknown
  EXPECT_EQ(n.OutType(), "float32[?,?]");
  auto out = n.Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("node 'n' (Reshape"), std::string::npos);
  EXPECT_NE(out.status().message().find("cannot reshape 6 elements"), std::string::npos)
      << out.status().message();
  OneNode twice("Reshape", 14);
  twice.Input(Zeros({2, 3})).Input(Ints({-1, -1}));
  EXPECT_FALSE(twice.Run().ok());
}

TEST(TensorOpDefs, ShapeHonoursStartAndEnd) {
  OneNode n("Shape", 15);
  n.Input(Zeros({2, 3, 4})).Attr("start", -2);
  ASSERT_TRUE(n.Infer().ok());
  EXPECT_EQ(n.OutType(), "int64[2]");
  auto out = n.Run();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].data<int64_t>()[0], 3);
  EXPECT_EQ((*out)[0].data<int64_t>()[1], 4);
}

TEST(TensorOpDefs, SqueezeUnsqueezeInferStaticShapes) {
  OneNode sq("Squeeze", 13);
  sq.Input(Zeros({1, 3, 1})).ConstInput(Ints({-1}));
  ASSERT_TRUE(sq.Infer().ok());
  EXPECT_EQ(sq.OutType(), "float32[1,3]");
  OneNode bad("Squeeze", 13);
  bad.Input(Zeros({1, 3, 1})).Input(Ints({1}));
  EXPECT_FALSE(bad.Run().ok());  // dim 1 is 3, not 1
  OneNode un("Unsqueeze", 13);
  un.Input(Zeros({3, 4})).ConstInput(Ints({0, 3}));
  ASSERT_TRUE(un.Infer().ok());
  EXPECT_EQ(un.OutType(), "float32[1,3,4,1]");
}

TEST(TensorOpDefs, SliceAndConcatInfer) {
  OneNode s("Slice", 13);
  s.Input(Zeros({10, 5})).ConstInput(Ints({-3, 1})).ConstInput(Ints({1000, -1}));
  ASSERT_TRUE(s.Infer().ok());
  EXPECT_EQ(s.OutType(), "float32[3,3]");
  auto out = s.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{3, 3}));
  OneNode c("Concat", 13);
  c.Input(Zeros({2, 3})).Input(Zeros({2, 5})).Attr("axis", -1);
  ASSERT_TRUE(c.Infer().ok());
  EXPECT_EQ(c.OutType(), "float32[2,8]");
}

TEST(TensorOpDefs, SplitEqualAndNumOutputs) {
  OneNode s("Split", 18, 3);
  s.Input(Zeros({7})).Attr("num_outputs", 3);
  ASSERT_TRUE(s.Infer().ok());
  EXPECT_EQ(s.OutType(2), "float32[1]");
  auto out = s.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].numel(), 3);
  EXPECT_EQ((*out)[2].numel(), 1);
  OneNode uneven("Split", 13, 2);
  uneven.Input(Zeros({7}));
  EXPECT_FALSE(uneven.Run().ok());
}

TEST(TensorOpDefs, GatherOutOfRangeNamesNode) {
  OneNode g("Gather", 13);
  g.Input(Zeros({3, 2})).Input(Ints({0, 3})).Attr("axis", 0);
  ASSERT_TRUE(g.Infer().ok());
  EXPECT_EQ(g.OutType(), "float32[2,2]");
  auto out = g.Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("node 'n' (Gather"), std::string::npos);
  EXPECT_NE(out.status().message().find("index 3"), std::string::npos);
}

TEST(TensorOpDefs, DropoutTrainingIsSeededAndScaled) {
  // Seeded training-mode Dropout is reproducible: kept values are scaled by 1 / (1 - ratio).
  Tensor ones(DType::kFloat32, {64});
  std::fill_n(ones.data<float>(), 64, 1.0f);
  OneNode d("Dropout", 13, 2);
  d.Input(ones).Input(Tensor::Scalar(0.25f)).Input(Tensor::Scalar(true)).Attr("seed", 7);
  auto out = d.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  int kept = 0;
  for (int i = 0; i < 64; ++i) {
    const bool keep = (*out)[1].data<bool>()[i];
    kept += keep;
    EXPECT_FLOAT_EQ((*out)[0].data<float>()[i], keep ? 1.0f / 0.75f : 0.0f);
  }
  EXPECT_GT(kept, 32);  // about 48 of 64 expected
  EXPECT_LT(kept, 64);
  OneNode again("Dropout", 13, 2);
  again.Input(ones).Input(Tensor::Scalar(0.25f)).Input(Tensor::Scalar(true)).Attr("seed", 7);
  auto out2 = again.Run();
  ASSERT_TRUE(out2.ok());
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ((*out2)[1].data<bool>()[i], (*out)[1].data<bool>()[i]) << i;

  OneNode bad("Dropout", 13, 1);
  bad.Input(ones).Input(Tensor::Scalar(1.0f)).Input(Tensor::Scalar(true));
  EXPECT_FALSE(bad.Run().ok());  // ratio 1 would divide by zero

  OneNode inference("Dropout", 13, 2);
  inference.Input(Zeros({2}));
  auto ok = inference.Run();
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE((*ok)[1].data<bool>()[0]);
}

TEST(TensorOpDefs, ExpandAndTileFromConstants) {
  OneNode e("Expand", 13);
  e.Input(Zeros({3, 1})).ConstInput(Ints({2, 1, 6}));
  ASSERT_TRUE(e.Infer().ok());
  EXPECT_EQ(e.OutType(), "float32[2,3,6]");
  OneNode t("Tile", 13);
  t.Input(Zeros({3, 1})).ConstInput(Ints({2, 5}));
  ASSERT_TRUE(t.Infer().ok());
  EXPECT_EQ(t.OutType(), "float32[6,5]");
}

}  // namespace
}  // namespace kiln::ops
