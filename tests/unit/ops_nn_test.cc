// Tests of the neural-network ops (conv, pool, norm, matmul families) through their OpDefs:
// shape inference and the reference kernels on small hand-computed cases, and the error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <optional>

#include "ops/op_registry.h"

namespace kiln {
namespace {

using Attrs = std::map<std::string, ir::Attribute>;

ir::Attribute Ints(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}
ir::Attribute Int(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = v;
  return a;
}
ir::Attribute Float(float v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kFloat;
  a.f = v;
  return a;
}
ir::Attribute Str(std::string s) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kString;
  a.s = std::move(s);
  return a;
}

Tensor F(std::vector<float> v, std::vector<int64_t> dims) { return Tensor::FromVector(v, dims); }

// One node with its values: infer, then run with the given tensors (nullopt = omitted input).
struct OpCall {
  std::vector<std::unique_ptr<ir::Value>> values;
  ir::Node node;
  Status infer_status;
  std::vector<Tensor> outputs;

  Status Run(const std::string& op, const std::vector<std::optional<Tensor>>& inputs,
             Attrs attrs = {}, size_t num_outputs = 1, int opset = 17) {
    const ops::OpDef* def = ops::FindOp("", op);
    if (def == nullptr) return Status::Error("no op ", op);
    node.op_type = op;
    node.name = "n";
    node.opset = opset;
    node.attrs = std::move(attrs);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i]) {
        node.inputs.push_back(nullptr);
        continue;
      }
      values.push_back(std::make_unique<ir::Value>());
      values.back()->name = "in" + std::to_string(i);
      values.back()->type = ir::ValueType::Of(inputs[i]->dtype(), inputs[i]->dims());
      node.inputs.push_back(values.back().get());
    }
    for (size_t i = 0; i < num_outputs; ++i) {
      values.push_back(std::make_unique<ir::Value>());
      values.back()->name = "out" + std::to_string(i);
      node.outputs.push_back(values.back().get());
    }
    infer_status = def->infer(node);
    ops::RunContext ctx{node, {}, {}, {}};
    for (const auto& t : inputs) ctx.inputs.push_back(t ? &*t : nullptr);
    ctx.outputs.resize(num_outputs);
    Status st = def->run(ctx);
    outputs = std::move(ctx.outputs);
    return st;
  }
  std::string InferredType(size_t i) const { return node.outputs[i]->type.ToString(); }
};

void ExpectValues(const Tensor& t, const std::vector<float>& want, double tol = 1e-5) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size())) << DescribeTensor(t);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.AsDouble(i), want[i], tol) << "at " << i;
}

void ExpectErrorContains(const Status& st, const std::string& text) {
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(text), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("node 'n'"), std::string::npos) << st.message();
}

Tensor Iota(std::vector<int64_t> dims) {
  Tensor t(DType::kFloat32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

// ---- Conv family ----

TEST(OpsNnConv, Conv2DSumsWindows) {
  OpCall c;
  ASSERT_TRUE(c.Run("Conv", {Iota({1, 1, 3, 3}), F({1, 1, 1, 1}, {1, 1, 2, 2})}).ok());
  EXPECT_EQ(c.InferredType(0), "float32[1,1,2,2]");
  ExpectValues(c.outputs[0], {8, 12, 20, 24});
}

TEST(OpsNnConv, Conv2DPadsStridesBiasAndGroups) {
  // Two groups of one channel each; the second filter doubles, the bias adds 1 and 10.
  OpCall c;
  Tensor x = Iota({1, 2, 2, 2});  // channel 0: 0 1 2 3, channel 1: 4 5 6 7
  ASSERT_TRUE(c.Run("Conv", {x, F({1, 2}, {2, 1, 1, 1}), F({1, 10}, {2})},
                    {{"group", Int(2)}, {"pads", Ints({1, 1, 1, 1})}, {"strides", Ints({2, 2})}})
                  .ok());
  EXPECT_EQ(c.InferredType(0), "float32[1,2,2,2]");
  // Outputs sample padded positions (0,0), (0,2), (2,0), (2,2): only (2,2) hits x[1][1].
  ExpectValues(c.outputs[0], {1, 1, 1, 1 + 3, 10, 10, 10, 10 + 14});
}

TEST(OpsNnConv, Conv1DDilationAndSameUpper) {
  OpCall c;
  ASSERT_TRUE(c.Run("Conv", {F({1, 2, 3, 4, 5}, {1, 1, 5}), F({1, 1}, {1, 1, 2})},
                    {{"dilations", Ints({2})}, {"auto_pad", Str("SAME_UPPER")}})
                  .ok());
  // Dilated kernel spans 3: total pad 2 split 1/1; y[i] = x[i-1] + x[i+1].
  ExpectValues(c.outputs[0], {2, 4, 6, 8, 4});
}

TEST(OpsNnConv, ConvRejectsMismatchedChannels) {
  OpCall c;
  ExpectErrorContains(c.Run("Conv", {Iota({1, 3, 4, 4}), Iota({2, 2, 1, 1})}), "input channels");
  OpCall g;
  ExpectErrorContains(g.Run("Conv", {Iota({1, 4, 4, 4}), Iota({3, 2, 1, 1})}, {{"group", Int(2)}}),
                      "not a multiple of group");
}

TEST(OpsNnConv, ConvRejectsBadWindows) {
  OpCall big;
  ExpectErrorContains(big.Run("Conv", {Iota({1, 1, 2, 2}), Iota({1, 1, 3, 3})}), "larger than");
  OpCall stride;
  ExpectErrorContains(
      stride.Run("Conv", {Iota({1, 1, 4, 4}), Iota({1, 1, 1, 1})}, {{"strides", Ints({0, 1})}}),
      "strides");
  OpCall pads;
  ExpectErrorContains(pads.Run("Conv", {Iota({1, 1, 4, 4}), Iota({1, 1, 1, 1})},
                               {{"pads", Ints({int64_t{1} << 40, 0, 0, 0})}}),
                      "pads");
  OpCall rank;
  ExpectErrorContains(rank.Run("Conv", {Iota({4, 4}), Iota({1, 1})}), "rank");
  OpCall bias;
  ExpectErrorContains(bias.Run("Conv", {Iota({1, 1, 2, 2}), Iota({2, 1, 1, 1}), Iota({3})}),
                      "bias");
  OpCall group;  // a huge group must not overflow W's dim 1 * group
  ExpectErrorContains(group.Run("Conv", {Iota({1, 0, 2, 2}), Iota({1, 5, 1, 1})},
                                {{"group", Int(int64_t{1} << 62)}}),
                      "group");
  OpCall kind;
  ExpectErrorContains(
      kind.Run("Conv", {Iota({1, 1, 2, 2}), Iota({1, 1, 1, 1})}, {{"strides", Int(1)}}), "strides");
}

TEST(OpsNnConv, ConvTransposeScattersWithStride) {
  OpCall c;
  ASSERT_TRUE(c.Run("ConvTranspose", {F({1, 2}, {1, 1, 2}), F({1, 1}, {1, 1, 2})}).ok());
  ExpectValues(c.outputs[0], {1, 3, 2});
  OpCall s;
  ASSERT_TRUE(s.Run("ConvTranspose", {F({1, 2}, {1, 1, 2}), F({1, 1}, {1, 1, 2})},
                    {{"strides", Ints({2})}, {"output_padding", Ints({1})}})
                  .ok());
  EXPECT_EQ(s.InferredType(0), "float32[1,1,5]");
  ExpectValues(s.outputs[0], {1, 1, 2, 2, 0});
  OpCall shaped;
  ASSERT_TRUE(shaped
                  .Run("ConvTranspose", {F({1, 2}, {1, 1, 2}), F({1, 1}, {1, 1, 2})},
                       {{"strides", Ints({2})}, {"output_shape", Ints({4})}})
                  .ok());
  ExpectValues(shaped.outputs[0], {1, 1, 2, 2});
}

TEST(OpsNnConv, ConvIntegerSubtractsZeroPoints) {
  OpCall c;
  Tensor x = Tensor::FromVector<uint8_t>({10, 11, 12, 13}, {1, 1, 2, 2});
  Tensor w = Tensor::FromVector<uint8_t>({1, 2}, {1, 1, 1, 2});
  ASSERT_TRUE(c.Run("ConvInteger", {x, w, Tensor::Scalar<uint8_t>(10)}).ok());
  EXPECT_EQ(c.outputs[0].dtype(), DType::kInt32);
  ExpectValues(c.outputs[0], {0 * 1 + 1 * 2, 2 * 1 + 3 * 2});
  OpCall bad;
  ExpectErrorContains(bad.Run("ConvInteger", {Iota({1, 1, 2, 2}), w}), "int8 or uint8");
}

// ---- Pooling ----

TEST(OpsNnPool, MaxPoolWithIndicesAndStorageOrder) {
  Tensor x = F({1, 5, 3, 2, 7, 0, 4, 8, 6}, {1, 1, 3, 3});
  OpCall c;
  ASSERT_TRUE(c.Run("MaxPool", {x}, {{"kernel_shape", Ints({2, 2})}}, 2).ok());
  EXPECT_EQ(c.InferredType(1), "int64[1,1,2,2]");
  ExpectValues(c.outputs[0], {7, 7, 8, 8});
  ExpectValues(c.outputs[1], {4, 4, 7, 7});
  OpCall col;
  ASSERT_TRUE(
      col.Run("MaxPool", {x}, {{"kernel_shape", Ints({2, 2})}, {"storage_order", Int(1)}}, 2).ok());
  ExpectValues(col.outputs[1], {4, 4, 5, 5});  // (h=1, w=1) -> 1 + 3*1; (h=2, w=1) -> 2 + 3*1
}

TEST(OpsNnPool, MaxPoolCeilModeDropsWindowsStartingInPadding) {
  OpCall c;
  ASSERT_TRUE(c.Run("MaxPool", {Iota({1, 1, 5})},
                    {{"kernel_shape", Ints({2})}, {"strides", Ints({2})}, {"ceil_mode", Int(1)}})
                  .ok());
  ExpectValues(c.outputs[0], {1, 3, 4});
}

TEST(OpsNnPool, AveragePoolCountIncludePad) {
  Tensor x = F({1, 2, 3}, {1, 1, 3});
  Attrs a = {{"kernel_shape", Ints({2})}, {"pads", Ints({1, 1})}};
  OpCall ex;
  ASSERT_TRUE(ex.Run("AveragePool", {x}, a).ok());
  ExpectValues(ex.outputs[0], {1, 1.5, 2.5, 3});
  a["count_include_pad"] = Int(1);
  OpCall in;
  ASSERT_TRUE(in.Run("AveragePool", {x}, a).ok());
  ExpectValues(in.outputs[0], {0.5, 1.5, 2.5, 1.5});
}

TEST(OpsNnPool, GlobalPoolsAndLp) {
  Tensor x = F({1, -2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2});
  OpCall avg, mx, lp;
  ASSERT_TRUE(avg.Run("GlobalAveragePool", {x}).ok());
  EXPECT_EQ(avg.InferredType(0), "float32[1,2,1,1]");
  ExpectValues(avg.outputs[0], {1.5, 6.5});
  ASSERT_TRUE(mx.Run("GlobalMaxPool", {x}).ok());
  ExpectValues(mx.outputs[0], {4, 8});
  ASSERT_TRUE(lp.Run("GlobalLpPool", {x}, {{"p", Int(1)}}).ok());
  ExpectValues(lp.outputs[0], {10, 26});
}

TEST(OpsNnPool, RejectsMissingKernelAndBadIndices) {
  OpCall c;
  ExpectErrorContains(c.Run("MaxPool", {Iota({1, 1, 4, 4})}), "kernel_shape");
  OpCall huge;  // a window from attributes alone must not become an endless loop
  ExpectErrorContains(huge.Run("MaxPool", {Iota({1, 1, 1})},
                               {{"kernel_shape", Ints({int64_t{1} << 30})},
                                {"pads", Ints({int64_t{1} << 30, int64_t{1} << 30})}}),
                      "steps");
  OpCall u;
  Tensor idx = Tensor::FromVector<int64_t>({0, 99}, {1, 1, 1, 2});
  ExpectErrorContains(u.Run("MaxUnpool", {F({1, 2}, {1, 1, 1, 2}), idx},
                            {{"kernel_shape", Ints({2, 2})}, {"strides", Ints({2, 2})}}),
                      "outside");
}

// ---- Normalization ----

TEST(OpsNnNorm, BatchNormInference) {
  OpCall c;
  Tensor x = F({1, 2, 3, 4}, {1, 2, 2});
  ASSERT_TRUE(c.Run("BatchNormalization",
                    {x, F({1, 2}, {2}), F({0, 1}, {2}), F({1, 3}, {2}), F({4, 1}, {2})},
                    {{"epsilon", Float(0)}})
                  .ok());
  ExpectValues(c.outputs[0], {0, 0.5, 1, 3});
  OpCall bad;
  ExpectErrorContains(bad.Run("BatchNormalization",
                              {x, F({1}, {1}), F({0, 1}, {2}), F({1, 3}, {2}), F({4, 1}, {2})}),
                      "scale");
}

TEST(OpsNnNorm, BatchNormTrainingUpdatesRunningStats) {
  OpCall c;
  Tensor x = F({1, 3}, {2, 1});  // one channel, batch mean 2, variance 1
  ASSERT_TRUE(c.Run("BatchNormalization", {x, F({1}, {1}), F({0}, {1}), F({0}, {1}), F({1}, {1})},
                    {{"epsilon", Float(0)}, {"training_mode", Int(1)}, {"momentum", Float(0.5)}}, 3)
                  .ok());
  ExpectValues(c.outputs[0], {-1, 1});
  ExpectValues(c.outputs[1], {1});
  ExpectValues(c.outputs[2], {1});
}

TEST(OpsNnNorm, LayerNormWithStatistics) {
  OpCall c;
  ASSERT_TRUE(c.Run("LayerNormalization", {F({1, 2, 3, 4}, {1, 4}), F({2}, {1}), F({1}, {1})},
                    {{"epsilon", Float(0)}}, 3)
                  .ok());
  EXPECT_EQ(c.InferredType(1), "float32[1,1]");
  const double inv = 1 / std::sqrt(1.25);
  ExpectValues(c.outputs[0], {static_cast<float>(1 - 3 * inv), static_cast<float>(1 - inv),
                              static_cast<float>(1 + inv), static_cast<float>(1 + 3 * inv)});
  ExpectValues(c.outputs[1], {2.5});
  ExpectValues(c.outputs[2], {static_cast<float>(inv)});
}

TEST(OpsNnNorm, InstanceNormLrnAndMvn) {
  OpCall in;
  ASSERT_TRUE(
      in.Run("InstanceNormalization", {F({1, 3, 5, 5}, {1, 2, 2}), F({1, 1}, {2}), F({0, 0}, {2})})
          .ok());
  ExpectValues(in.outputs[0], {-1, 1, 0, 0});
  OpCall lrn;
  ASSERT_TRUE(lrn.Run("LRN", {F({1, 2}, {1, 2, 1, 1})},
                      {{"size", Int(2)}, {"alpha", Float(2)}, {"beta", Float(1)}})
                  .ok());
  // Window for c=0 is {0, 1}: 1 / (1 + 2/2 * 5); for c=1 it is {1}: 2 / (1 + 4).
  ExpectValues(lrn.outputs[0], {1.0f / 6, 2.0f / 5});
  OpCall mvn;
  ASSERT_TRUE(
      mvn.Run("MeanVarianceNormalization", {F({1, 3, 10, 30}, {2, 2})}, {{"axes", Ints({1})}})
          .ok());
  ExpectValues(mvn.outputs[0], {-1, 1, -1, 1});
}

// ---- MatMul family ----

TEST(OpsNnMatMul, GemmTransposesAndBroadcastsC) {
  OpCall c;
  Tensor a = F({1, 2, 3, 4, 5, 6}, {3, 2});  // transA: A^T is [2, 3]
  Tensor b = F({1, 0, 1, 0, 1, 1}, {2, 3});  // transB: B^T is [3, 2]
  ASSERT_TRUE(
      c.Run("Gemm", {a, b, F({10, 20}, {2})},
            {{"transA", Int(1)}, {"transB", Int(1)}, {"alpha", Float(2)}, {"beta", Float(0.5)}})
          .ok());
  EXPECT_EQ(c.InferredType(0), "float32[2,2]");
  // A^T = [[1,3,5],[2,4,6]]; B^T = [[1,0],[0,1],[1,1]]; A^T B^T = [[6,8],[8,10]].
  ExpectValues(c.outputs[0], {17, 26, 21, 30});
  OpCall bad;
  ExpectErrorContains(bad.Run("Gemm", {a, F({1, 2, 3}, {3, 1}), F({1, 2, 3}, {3})}), "inner dims");
}

TEST(OpsNnMatMul, MatMulPromotesAndBroadcasts) {
  OpCall v;
  ASSERT_TRUE(v.Run("MatMul", {F({1, 2, 3}, {3}), Iota({3, 2})}).ok());
  EXPECT_EQ(v.InferredType(0), "float32[2]");
  ExpectValues(v.outputs[0], {16, 22});
  OpCall b;
  ASSERT_TRUE(b.Run("MatMul", {Iota({2, 1, 1, 2}), F({1, 1, 1, -1, 0, 2}, {3, 2, 1})}).ok());
  EXPECT_EQ(b.InferredType(0), "float32[2,3,1,1]");
  ExpectValues(b.outputs[0], {1, -1, 2, 5, -1, 6});
  OpCall i;
  ASSERT_TRUE(i.Run("MatMul", {Tensor::FromVector<int32_t>({1, 2}, {1, 2}),
                               Tensor::FromVector<int32_t>({3, 4}, {2, 1})})
                  .ok());
  EXPECT_EQ(i.outputs[0].data<int32_t>()[0], 11);
  OpCall bad;
  ExpectErrorContains(bad.Run("MatMul", {Iota({2, 3}), Iota({2, 3})}), "inner dims");
}

TEST(OpsNnMatMul, MatMulIntegerAndQLinear) {
  Tensor a = Tensor::FromVector<uint8_t>({3, 4}, {1, 2});
  Tensor b = Tensor::FromVector<int8_t>({-1, 2}, {2, 1});
  OpCall c;
  ASSERT_TRUE(c.Run("MatMulInteger", {a, b, Tensor::Scalar<uint8_t>(2)}).ok());
  EXPECT_EQ(c.outputs[0].data<int32_t>()[0], 1 * -1 + 2 * 2);
  OpCall q;
  ASSERT_TRUE(q.Run("QLinearMatMul", {a, Tensor::Scalar<float>(0.5f), Tensor::Scalar<uint8_t>(2), b,
                                      Tensor::Scalar<float>(1.0f), Tensor::Scalar<int8_t>(0),
                                      Tensor::Scalar<float>(0.25f), Tensor::Scalar<uint8_t>(100)})
                  .ok());
  EXPECT_EQ(q.outputs[0].dtype(), DType::kUInt8);
  EXPECT_EQ(q.outputs[0].data<uint8_t>()[0], 100 + 3 * 2);  // 3 * 0.5 / 0.25
}

TEST(OpsNnMatMul, EinsumForms) {
  auto eq = [](const char* e) { return Attrs{{"equation", Str(e)}}; };
  OpCall t;
  ASSERT_TRUE(t.Run("Einsum", {Iota({2, 3})}, eq("ij->ji")).ok());
  EXPECT_EQ(t.InferredType(0), "float32[3,2]");
  ExpectValues(t.outputs[0], {0, 3, 1, 4, 2, 5});
  OpCall trace;
  ASSERT_TRUE(trace.Run("Einsum", {Iota({3, 3})}, eq("ii")).ok());
  ExpectValues(trace.outputs[0], {12});
  OpCall diag;
  ASSERT_TRUE(diag.Run("Einsum", {Iota({2, 2, 2})}, eq("...ii->...i")).ok());
  ExpectValues(diag.outputs[0], {0, 3, 4, 7});
  OpCall mm;  // implicit output: j is summed, i and k remain in order
  ASSERT_TRUE(mm.Run("Einsum", {Iota({2, 3}), Iota({3, 1})}, eq("ij, jk")).ok());
  ExpectValues(mm.outputs[0], {5, 14});
  OpCall outer;  // broadcasting ellipsis
  ASSERT_TRUE(
      outer.Run("Einsum", {F({1, 2}, {2, 1}), F({10, 20}, {1, 2})}, eq("...,...->...")).ok());
  ExpectValues(outer.outputs[0], {10, 20, 20, 40});
  OpCall bad_char;
  ExpectErrorContains(bad_char.Run("Einsum", {Iota({2})}, eq("i1")), "unexpected");
  OpCall bad_size;
  ExpectErrorContains(bad_size.Run("Einsum", {Iota({2}), Iota({3})}, eq("i,i")), "disagree");
  OpCall bad_count;
  ExpectErrorContains(bad_count.Run("Einsum", {Iota({2})}, eq("i,i")), "operand terms");
}

}  // namespace
}  // namespace kiln
