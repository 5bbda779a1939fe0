// Reference signal kernels on cases small enough to work out by hand.
#include <gtest/gtest.h>

#include "kernels/ref/signal.h"

namespace kiln::ref {
namespace {

TEST(FlowSignal, DftOfAnImpulseIsFlatAndInverseRestoresIt) {
  // x = [1, 0, 0, 0] (real): every bin is 1 + 0i.
  Tensor x = Tensor::FromVector<float>({1, 0, 0, 0}, {1, 4, 1});
  Tensor y;
  ASSERT_TRUE(Dft(x, 1, 4, false, false, &y).ok());
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{1, 4, 2}));
  std::vector<float> v = y.ToFloatVector();
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(v[2 * k], 1, 1e-6);
    EXPECT_NEAR(v[2 * k + 1], 0, 1e-6);
  }
  Tensor back;
  ASSERT_TRUE(Dft(y, 1, 4, true, false, &back).ok());
  v = back.ToFloatVector();
  EXPECT_NEAR(v[0], 1, 1e-6);
  for (int i = 1; i < 8; ++i) EXPECT_NEAR(v[i], 0, 1e-6);
  // Onesided keeps length / 2 + 1 bins.
  ASSERT_TRUE(Dft(x, 1, 4, false, true, &y).ok());
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{1, 3, 2}));
}

TEST(FlowSignal, Errors) {
  Tensor x = Tensor::FromVector<float>({1, 0}, {1, 2, 1});
  Tensor y;
  EXPECT_FALSE(Dft(x, 2, 2, false, false, &y).ok());  // the complex dim is not a signal axis
  EXPECT_FALSE(Dft(x, 1, 0, false, false, &y).ok());  // zero length
  EXPECT_FALSE(Dft(x, 1, int64_t{1} << 40, false, false, &y).ok());  // beyond the work bound
  EXPECT_FALSE(Stft(x, 0, nullptr, 1, true, &y).ok());  // zero frame step
  EXPECT_FALSE(MelWeightMatrix(8, 16, 8192, 0, 1e9, DType::kFloat32, &y).ok());
}

TEST(FlowSignal, Windows) {
  Tensor w;
  ASSERT_TRUE(Window(WindowKind::kHann, 4, true, DType::kFloat32, &w).ok());
  std::vector<float> v = w.ToFloatVector();  // 0.5 - 0.5 cos(2 pi n / 4)
  EXPECT_NEAR(v[0], 0, 1e-7);
  EXPECT_NEAR(v[1], 0.5, 1e-7);
  EXPECT_NEAR(v[2], 1, 1e-7);
  ASSERT_TRUE(Window(WindowKind::kBlackman, 3, false, DType::kFloat64, &w).ok());
  EXPECT_EQ(w.dtype(), DType::kFloat64);
  EXPECT_NEAR(w.data<double>()[1], 1.0, 1e-12);  // the symmetric centre
}

}  // namespace
}  // namespace kiln::ref
