// Reference TopK, CumSum, NonMaxSuppression and linear quantization on hand-computed cases, and
// their error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/ref/quant.h"
#include "kernels/ref/sort.h"

namespace kiln::ref {
namespace {

template <class T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

Tensor F32(std::vector<float> v, std::vector<int64_t> dims) {
  return Tensor::FromVector(v, std::move(dims));
}

TEST(RefTopK, LargestAndSmallestWithTies) {
  Tensor x = F32({3, 1, 3, 2, 0, 5, 5, 1}, {2, 4});
  TopKParams p;
  p.axis = 1;
  p.k = 3;
  Tensor v, ix;
  ASSERT_TRUE(TopK(x, p, &v, &ix).ok());
  EXPECT_EQ(v.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values<float>(v), (std::vector<float>{3, 3, 2, 5, 5, 1}));
  EXPECT_EQ(Values<int64_t>(ix), (std::vector<int64_t>{0, 2, 3, 1, 2, 3}));
  p.largest = false;
  p.k = 2;
  ASSERT_TRUE(TopK(x, p, &v, &ix).ok());
  EXPECT_EQ(Values<float>(v), (std::vector<float>{1, 2, 0, 1}));
  EXPECT_EQ(Values<int64_t>(ix), (std::vector<int64_t>{1, 3, 0, 3}));
}

TEST(RefTopK, AlongTheFirstAxisAndWithNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = F32({1, nan, 4, 2}, {2, 2});
  TopKParams p;
  p.axis = 0;
  p.k = 1;
  Tensor v, ix;
  ASSERT_TRUE(TopK(x, p, &v, &ix).ok());
  EXPECT_EQ(Values<int64_t>(ix), (std::vector<int64_t>{1, 0}));  // NaN ranks highest
  EXPECT_EQ(v.data<float>()[0], 4);
  EXPECT_TRUE(std::isnan(v.data<float>()[1]));
}

TEST(RefTopK, RejectsKOutOfRange) {
  TopKParams p;
  p.axis = 0;
  p.k = 3;
  Tensor v, ix;
  Status st = TopK(F32({1, 2}, {2}), p, &v, &ix);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("k = 3"), std::string::npos);
  p.k = -1;
  EXPECT_FALSE(TopK(F32({1, 2}, {2}), p, &v, &ix).ok());
  p.k = 0;
  ASSERT_TRUE(TopK(F32({1, 2}, {2}), p, &v, &ix).ok());
  EXPECT_EQ(v.numel(), 0);
}

TEST(RefCumSum, ExclusiveReverseAndAxis) {
  Tensor x = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(Values<float>(*CumSum(x, 1, false, false)), (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(Values<float>(*CumSum(x, 1, true, false)), (std::vector<float>{0, 1, 3, 0, 4, 9}));
  EXPECT_EQ(Values<float>(*CumSum(x, 1, false, true)), (std::vector<float>{6, 5, 3, 15, 11, 6}));
  EXPECT_EQ(Values<float>(*CumSum(x, 1, true, true)), (std::vector<float>{5, 3, 0, 11, 6, 0}));
  EXPECT_EQ(Values<float>(*CumSum(x, 0, false, false)), (std::vector<float>{1, 2, 3, 5, 7, 9}));
  Tensor i = Tensor::FromVector<int32_t>({1, 2, 3}, {3});
  EXPECT_EQ(Values<int32_t>(*CumSum(i, 0, false, false)), (std::vector<int32_t>{1, 3, 6}));
  EXPECT_FALSE(CumSum(x, 2, false, false).ok());
}

TEST(RefNms, SuppressesOverlapsPerClass) {
  // Box 1 overlaps box 0 heavily (IoU 0.81); box 2 is far away.
  Tensor boxes = F32({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 10, 1, 11}, {1, 3, 4});
  Tensor scores = F32({0.9f, 0.95f, 0.5f, 0.1f, 0.2f, 0.3f}, {1, 2, 3});
  NmsParams p;
  p.max_output_boxes_per_class = 3;
  p.iou_threshold = 0.5f;
  auto r = NonMaxSuppression(boxes, scores, p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Values<int64_t>(*r), (std::vector<int64_t>{0, 0, 1, 0, 0, 2, 0, 1, 2, 0, 1, 1}));
  p.score_threshold = 0.25f;
  p.max_output_boxes_per_class = 1;
  r = NonMaxSuppression(boxes, scores, p);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<int64_t>(*r), (std::vector<int64_t>{0, 0, 1, 0, 1, 2}));
}

TEST(RefNms, RejectsBadShapesAndThresholds) {
  NmsParams p;
  p.max_output_boxes_per_class = 1;
  Tensor boxes = F32({0, 0, 1, 1}, {1, 1, 4});
  EXPECT_FALSE(NonMaxSuppression(boxes, F32({1, 1}, {1, 1, 2}), p).ok());
  EXPECT_FALSE(NonMaxSuppression(F32({0, 0, 1}, {1, 1, 3}), F32({1}, {1, 1, 1}), p).ok());
  p.iou_threshold = 2;
  EXPECT_FALSE(NonMaxSuppression(boxes, F32({1}, {1, 1, 1}), p).ok());
}

TEST(RefQuant, RoundHalfToEven) {
  EXPECT_EQ(RoundHalfToEven(0.5), 0);
  EXPECT_EQ(RoundHalfToEven(1.5), 2);
  EXPECT_EQ(RoundHalfToEven(2.5), 2);
  EXPECT_EQ(RoundHalfToEven(-2.5), -2);
  EXPECT_EQ(RoundHalfToEven(-3.5), -4);
  EXPECT_EQ(RoundHalfToEven(2.4), 2);
}

TEST(RefQuant, QuantizePerTensorSaturates) {
  Tensor x = F32({0, 2, 3, 1000, -254, -1000, std::nanf("")}, {7});
  Tensor scale = Tensor::Scalar<float>(2);
  Tensor zp = Tensor::Scalar<uint8_t>(128);
  auto y = QuantizeLinear(x, scale, &zp, DType::kUInt8, 1);
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(Values<uint8_t>(*y), (std::vector<uint8_t>{128, 129, 130, 255, 1, 0, 128}));
  auto s8 = QuantizeLinear(F32({-300, 3}, {2}), scale, nullptr, DType::kInt8, 1);
  ASSERT_TRUE(s8.ok());
  EXPECT_EQ(Values<int8_t>(*s8), (std::vector<int8_t>{-128, 2}));
}

TEST(RefQuant, PerAxisRoundTrip) {
  Tensor x = F32({-4, 4, 10, 20}, {2, 2});
  Tensor scale = F32({2, 5}, {2});
  Tensor zp = Tensor::FromVector<int8_t>({1, -1}, {2});
  auto q = QuantizeLinear(x, scale, &zp, DType::kInt8, 0);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(Values<int8_t>(*q), (std::vector<int8_t>{-1, 3, 1, 3}));
  auto d = DequantizeLinear(*q, scale, &zp, 0);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(Values<float>(*d), (std::vector<float>{-4, 4, 10, 20}));
  // Along the last axis instead.
  auto q1 = QuantizeLinear(x, scale, &zp, DType::kInt8, -1);
  ASSERT_TRUE(q1.ok());
  EXPECT_EQ(Values<int8_t>(*q1), (std::vector<int8_t>{-1, 0, 6, 3}));
}

TEST(RefQuant, RejectsMismatchedParameters) {
  Tensor x = F32({1, 2, 3, 4}, {2, 2});
  Tensor scale3 = F32({1, 1, 1}, {3});
  EXPECT_FALSE(QuantizeLinear(x, scale3, nullptr, DType::kUInt8, 1).ok());
  EXPECT_FALSE(QuantizeLinear(x, F32({1, 1}, {2}), nullptr, DType::kUInt8, 2).ok());
  Tensor zp = Tensor::FromVector<uint8_t>({0, 0, 0}, {3});
  EXPECT_FALSE(QuantizeLinear(x, F32({1, 1}, {2}), &zp, DType::kUInt8, 1).ok());
  EXPECT_FALSE(QuantizeLinear(x, Tensor::Scalar<float>(1), nullptr, DType::kInt32, 1).ok());
  Tensor q = Tensor::FromVector<uint8_t>({1, 2}, {2});
  Tensor zp8 = Tensor::Scalar<int8_t>(0);
  EXPECT_FALSE(DequantizeLinear(q, Tensor::Scalar<float>(1), &zp8, 1).ok());
  EXPECT_FALSE(DequantizeLinear(x, Tensor::Scalar<float>(1), nullptr, 1).ok());
}

TEST(RefQuant, DynamicQuantize) {
  auto r = DynamicQuantizeLinear(F32({0, 2, -3, -2.5f, 1.34f, 0.5f}, {6}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<uint8_t>(r->y), (std::vector<uint8_t>{153, 255, 0, 26, 221, 179}));
  EXPECT_NEAR(r->scale.data<float>()[0], 5.0f / 255, 1e-7);
  EXPECT_EQ(r->zero_point.data<uint8_t>()[0], 153);
  auto zeros = DynamicQuantizeLinear(F32({0, 0}, {2}));
  ASSERT_TRUE(zeros.ok());
  EXPECT_EQ(Values<uint8_t>(zeros->y), (std::vector<uint8_t>{0, 0}));
}

}  // namespace
}  // namespace kiln::ref
