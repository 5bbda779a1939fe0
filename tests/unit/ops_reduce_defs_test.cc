// Op definitions of the reduce, softmax, sort and quant families: attributes, opset semantics,
// shape inference and run-time checks, driven through the op table as the interpreter does.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "ops/op_registry.h"

namespace kiln::ops {
namespace {

// Builds one node; each input is a tensor, optionally also the value's constant.
class NodeUnderTest {
 public:
  NodeUnderTest(const std::string& op, int opset, size_t num_outputs = 1) {
    node_.op_type = op;
    node_.name = "t";
    node_.opset = opset;
    for (size_t i = 0; i < num_outputs; ++i) node_.outputs.push_back(Value());
  }
  NodeUnderTest& In(const Tensor& t, bool constant = false) {
    ir::Value* v = Value();
    v->type = ir::ValueType::Of(t.dtype(), t.dims());
    if (constant) v->constant = t;
    node_.inputs.push_back(v);
    tensors_.push_back(t);
    return *this;
  }
  NodeUnderTest& Int(const std::string& name, int64_t i) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kInt;
    a.i = i;
    node_.attrs[name] = a;
    return *this;
  }
  NodeUnderTest& Str(const std::string& name, const std::string& s) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kString;
    a.s = s;
    node_.attrs[name] = a;
    return *this;
  }
  Status Infer() { return FindOp("", node_.op_type)->infer(node_); }
  std::string Type(size_t i = 0) const { return node_.outputs[i]->type.ToString(); }
  Expected<std::vector<Tensor>> Run() {
    RunContext ctx{node_, {}, {}, {}};
    for (const Tensor& t : tensors_) ctx.inputs.push_back(&t);
    ctx.outputs.resize(node_.outputs.size());
    KILN_RETURN_IF_ERROR(FindOp("", node_.op_type)->run(ctx));
    return ctx.outputs;
  }

 private:
  ir::Value* Value() {
    values_.push_back(std::make_unique<ir::Value>());
    values_.back()->name = "v" + std::to_string(values_.size());
    return values_.back().get();
  }
  ir::Node node_;
  std::vector<std::unique_ptr<ir::Value>> values_;
  std::vector<Tensor> tensors_;
};

Tensor I64(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::FromVector(v, {n});
}
Tensor Iota(std::vector<int64_t> dims) {
  Tensor t(DType::kFloat32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

TEST(ReduceDefs, InfersFromConstantAxes) {
  NodeUnderTest keep("ReduceSum", 13);
  keep.In(Iota({2, 3, 4})).In(I64({-1, 0}), true);
  ASSERT_TRUE(keep.Infer().ok());
  EXPECT_EQ(keep.Type(), "float32[1,3,1]");
  NodeUnderTest drop("ReduceMean", 18);
  drop.In(Iota({2, 3, 4})).In(I64({1}), true).Int("keepdims", 0);
  ASSERT_TRUE(drop.Infer().ok());
  EXPECT_EQ(drop.Type(), "float32[2,4]");
  NodeUnderTest all("ReduceMax", 18);
  all.In(Iota({2, 3})).Int("keepdims", 0);
  ASSERT_TRUE(all.Infer().ok());
  EXPECT_EQ(all.Type(), "float32[]");
}

TEST(ReduceDefs, RuntimeAxesAndNoop) {
  NodeUnderTest n("ReduceSum", 13);
  n.In(Iota({2, 3})).In(I64({}));
  n.Int("noop_with_empty_axes", 1);
  ASSERT_TRUE(n.Infer().ok());  // axes unknown: rank kept, dims unknown
  auto out = n.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{2, 3}));
  NodeUnderTest all("ReduceSum", 13);
  all.In(Iota({2, 3})).In(I64({}));
  out = all.Run();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ((*out)[0].data<float>()[0], 15);
}

TEST(ReduceDefs, BadAxesNameTheNode) {
  NodeUnderTest n("ReduceSum", 13);
  n.In(Iota({2, 3})).In(I64({2}), true);
  Status st = n.Infer();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node 't'"), std::string::npos) << st.message();
  NodeUnderTest dup("ReduceProd", 18);
  dup.In(Iota({2, 3})).In(I64({1, -1}));
  auto out = dup.Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("node 't'"), std::string::npos);
}

TEST(ReduceDefs, ArgMaxShapes) {
  NodeUnderTest n("ArgMax", 13);
  n.In(Iota({2, 3})).Int("axis", -1).Int("keepdims", 0);
  ASSERT_TRUE(n.Infer().ok());
  EXPECT_EQ(n.Type(), "int64[2]");
  auto out = n.Run();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].data<int64_t>()[1], 2);
  NodeUnderTest bad("ArgMin", 13);
  bad.In(Iota({2, 3})).Int("axis", 2);
  EXPECT_FALSE(bad.Infer().ok());
  EXPECT_FALSE(bad.Run().ok());
}

TEST(SoftmaxDefs, OldOpsetsNormalizeTheFlattenedTail) {
  // [1, 2, 2] with axis 1: before 13 all four values form one row; from 13 on, each column.
  NodeUnderTest old_op("Softmax", 11);
  old_op.In(Iota({1, 2, 2})).Int("axis", 1);
  auto old_out = old_op.Run();
  ASSERT_TRUE(old_out.ok());
  const float* o = (*old_out)[0].data<float>();
  EXPECT_NEAR(o[0] + o[1] + o[2] + o[3], 1.0f, 1e-6);
  NodeUnderTest new_op("Softmax", 13);
  new_op.In(Iota({1, 2, 2})).Int("axis", 1);
  auto new_out = new_op.Run();
  ASSERT_TRUE(new_out.ok());
  const float* y = (*new_out)[0].data<float>();
  EXPECT_NEAR(y[0] + y[2], 1.0f, 1e-6);
  EXPECT_NEAR(y[1] + y[3], 1.0f, 1e-6);
  NodeUnderTest bad("LogSoftmax", 13);
  bad.In(Iota({2})).Int("axis", 1);
  EXPECT_FALSE(bad.Infer().ok());
}

TEST(SoftmaxDefs, LossShapesAndReductionAttribute) {
  NodeUnderTest none("SoftmaxCrossEntropyLoss", 13, 2);
  none.In(Iota({2, 3, 4})).In(Tensor(DType::kInt64, {2, 4})).Str("reduction", "none");
  ASSERT_TRUE(none.Infer().ok());
  EXPECT_EQ(none.Type(0), "float32[2,4]");
  EXPECT_EQ(none.Type(1), "float32[2,3,4]");
  auto out = none.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[1].dims(), (std::vector<int64_t>{2, 3, 4}));
  NodeUnderTest bad("NegativeLogLikelihoodLoss", 13);
  bad.In(Iota({2, 3})).In(I64({0, 1})).Str("reduction", "average");
  EXPECT_FALSE(bad.Infer().ok());
  NodeUnderTest range("NegativeLogLikelihoodLoss", 13);
  range.In(Iota({2, 3})).In(I64({0, 7}));
  auto r = range.Run();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("target 7"), std::string::npos) << r.status().message();
}

TEST(SortDefs, TopKInfersKAndRejectsLargeK) {
  NodeUnderTest n("TopK", 11, 2);
  n.In(Iota({3, 4})).In(I64({2}), true);
  ASSERT_TRUE(n.Infer().ok());
  EXPECT_EQ(n.Type(0), "float32[3,2]");
  EXPECT_EQ(n.Type(1), "int64[3,2]");
  auto out = n.Run();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[1].data<int64_t>()[0], 3);
  NodeUnderTest big("TopK", 11, 2);
  big.In(Iota({3, 4})).In(I64({5}), true);
  EXPECT_FALSE(big.Infer().ok());
  EXPECT_FALSE(big.Run().ok());
  NodeUnderTest two("TopK", 11, 2);
  two.In(Iota({3, 4})).In(I64({1, 2}));
  EXPECT_FALSE(two.Run().ok());
}

TEST(SortDefs, CumSumAxisInputAndNmsShape) {
  NodeUnderTest n("CumSum", 14);
  n.In(Iota({2, 2})).In(Tensor::Scalar<int32_t>(-1)).Int("reverse", 1);
  auto out = n.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].data<float>()[0], 1);  // 0 + 1
  NodeUnderTest bad("CumSum", 14);
  bad.In(Iota({2, 2})).In(Tensor::Scalar<float>(0));
  EXPECT_FALSE(bad.Run().ok());
  NodeUnderTest nms("NonMaxSuppression", 11);
  nms.In(Iota({1, 2, 4})).In(Iota({1, 1, 2}));
  ASSERT_TRUE(nms.Infer().ok());
  EXPECT_EQ(nms.Type(), "int64[?,3]");
  out = nms.Run();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{0, 3}));  // max_output defaults to 0
}

TEST(QuantDefs, OutputTypeFollowsTheZeroPoint) {
  NodeUnderTest q("QuantizeLinear", 13);
  q.In(Iota({2})).In(Tensor::Scalar<float>(1)).In(Tensor::Scalar<int8_t>(-1));
  ASSERT_TRUE(q.Infer().ok());
  EXPECT_EQ(q.Type(), "int8[2]");
  auto out = q.Run();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].data<int8_t>()[1], 0);
  NodeUnderTest u("QuantizeLinear", 13);
  u.In(Iota({2})).In(Tensor::Scalar<float>(1));
  ASSERT_TRUE(u.Infer().ok());
  EXPECT_EQ(u.Type(), "uint8[2]");
  NodeUnderTest blocked("DequantizeLinear", 21);
  blocked.In(Tensor(DType::kUInt8, {2})).In(Tensor::Scalar<float>(1)).Int("block_size", 2);
  EXPECT_FALSE(blocked.Infer().ok());
  NodeUnderTest dq("DynamicQuantizeLinear", 11, 3);
  dq.In(Iota({3}));
  ASSERT_TRUE(dq.Infer().ok());
  EXPECT_EQ(dq.Type(1), "float32[]");
  EXPECT_EQ(dq.Type(2), "uint8[]");
}

}  // namespace
}  // namespace kiln::ops
