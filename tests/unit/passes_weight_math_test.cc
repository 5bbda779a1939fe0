#include <gtest/gtest.h>

#include <cmath>

#include "passes/weight_math.h"

namespace kiln::passes {
namespace {

TEST(WeightMath, BatchNormAffine) {
  // gamma 2, var 3 + eps 1 -> scale 1; shift = beta - mean * scale.
  ChannelAffine a = BatchNormAffine({2, 1}, {0.5f, -1}, {1, 2}, {3, 0}, 1.0f);
  ASSERT_EQ(a.scale.size(), 2u);
  EXPECT_FLOAT_EQ(a.scale[0], 1.0f);
  EXPECT_FLOAT_EQ(a.shift[0], -0.5f);
  EXPECT_FLOAT_EQ(a.scale[1], 1.0f);
  EXPECT_FLOAT_EQ(a.shift[1], -3.0f);
  ChannelAffine b = BatchNormAffine({1}, {0}, {0}, {0.25f}, 0.0f);
  EXPECT_FLOAT_EQ(b.scale[0], 2.0f);
}

TEST(WeightMath, ScaleSlicesAlongAxis0And1) {
  Tensor w = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor rows = ScaleSlices(w, 0, {10, -1});
  EXPECT_EQ(rows.ToFloatVector(), (std::vector<float>{10, 20, 30, -4, -5, -6}));
  Tensor cols = ScaleSlices(w, 1, {1, 0, 2});
  EXPECT_EQ(cols.ToFloatVector(), (std::vector<float>{1, 0, 6, 4, 0, 12}));
  EXPECT_EQ(w.ToFloatVector(), (std::vector<float>{1, 2, 3, 4, 5, 6})) << "input left alone";
  Tensor conv = Tensor::FromVector<float>({1, 1, 1, 1, 1, 1, 1, 1}, {2, 1, 2, 2});
  EXPECT_EQ(ScaleSlices(conv, 0, {2, 3}).ToFloatVector(),
            (std::vector<float>{2, 2, 2, 2, 3, 3, 3, 3}));
}

TEST(WeightMath, AffineBias) {
  ChannelAffine a{{2, 0.5f}, {1, -1}};
  EXPECT_EQ(AffineBias({3, 4}, a), (std::vector<float>{7, 1}));
  EXPECT_EQ(AffineBias({}, a), (std::vector<float>{1, -1})) << "no bias reads as zeros";
}

TEST(WeightMath, PerChannelValues) {
  auto v = PerChannelValues(Tensor::FromVector<float>({1, 2, 3}, {3, 1, 1}), 4, 3);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (std::vector<float>{1, 2, 3}));
  v = PerChannelValues(Tensor::FromVector<float>({1, 2, 3}, {1, 3, 1, 1}), 4, 3);
  ASSERT_TRUE(v);
  v = PerChannelValues(Tensor::FromVector<float>({5}, {}), 4, 3);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (std::vector<float>{5, 5, 5})) << "a scalar broadcasts to every channel";
  v = PerChannelValues(Tensor::FromVector<float>({1, 2}, {2}), 2, 2);
  ASSERT_TRUE(v) << "rank 2 (Gemm): the last axis is the channel";
  EXPECT_FALSE(PerChannelValues(Tensor::FromVector<float>({1, 2, 3}, {3}), 4, 3))
      << "[3] lines up with the width, not the channel";
  EXPECT_FALSE(PerChannelValues(Tensor::FromVector<float>({1, 2, 3}, {1, 3, 1, 1, 1}), 4, 3))
      << "a higher rank would change the output shape";
  EXPECT_FALSE(PerChannelValues(Tensor::FromVector<float>({1, 2}, {2, 1, 1}), 4, 3));
  EXPECT_FALSE(PerChannelValues(Tensor::FromVector<int64_t>({1, 2, 3}, {3, 1, 1}), 4, 3));
}

}  // namespace
}  // namespace kiln::passes
