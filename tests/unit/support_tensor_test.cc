#include <gtest/gtest.h>

#include "support/tensor.h"

namespace kiln {
namespace {

TEST(Tensor, CheckedNumelRejectsNegativeAndOverflow) {
  EXPECT_FALSE(CheckedNumel({2, -1}, "x").ok());
  EXPECT_FALSE(CheckedNumel({int64_t{1} << 40, int64_t{1} << 40}, "x").ok());
  auto n = CheckedNumel({2, 3, 4}, "x");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 24);
}

TEST(Tensor, MakeRefusesHugeTensors) {
  auto t = Tensor::Make(DType::kFloat32, {int64_t{1} << 33}, "big");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("big"), std::string::npos);
}

TEST(DType, HalfRoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953125f})
    EXPECT_EQ(HalfToFloat(FloatToHalf(f)), f) << f;
  EXPECT_EQ(FloatToHalf(1e6f), 0x7c00);
  EXPECT_EQ(HalfToFloat(FloatToHalf(1.0f + 1.0f / 4096)), 1.0f);  // ties to even
}

}  // namespace
}  // namespace kiln
