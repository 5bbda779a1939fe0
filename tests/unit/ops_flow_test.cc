// Reference kernels of the "flow" families: Resize, GridSample, RoiAlign, RNN/GRU/LSTM.
// Expected values are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/ref/resize.h"
#include "kernels/ref/rnn.h"

namespace kiln::ref {
namespace {

std::vector<float> Values(const Tensor& t) { return t.ToFloatVector(); }

std::vector<ResizeAxis> Plan(const std::vector<std::pair<int64_t, double>>& axes) {
  std::vector<ResizeAxis> p;
  for (auto [size, scale] : axes) p.push_back(ResizeAxis{size, scale, 0.0, 1.0});
  return p;
}

TEST(FlowResize, NearestAsymmetricRepeats) {
  Tensor x = Tensor::FromVector<float>({1, 2}, {2});
  ResizeOptions o;
  o.coord = ResizeCoord::kAsymmetric;
  o.nearest = NearestRound::kFloor;
  Tensor y;
  ASSERT_TRUE(Resize(x, Plan({{4, 2.0}}), o, &y).ok());
  EXPECT_EQ(Values(y), (std::vector<float>{1, 1, 2, 2}));
}

TEST(FlowResize, SimpleNearestCeilsWhenShrinking) {
  // Upsample/Resize-10 rule: source x = j / 0.6 = 0, 1.67 -> ceil -> 0, 2.
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4}, {4});
  ResizeOptions o;
  o.coord = ResizeCoord::kAsymmetric;
  o.nearest = NearestRound::kSimple;
  Tensor y;
  ASSERT_TRUE(Resize(x, Plan({{2, 0.6}}), o, &y).ok());
  EXPECT_EQ(Values(y), (std::vector<float>{1, 3}));
}

TEST(FlowResize, LinearHalfPixelClampsAtEdges) {
  // x_ori = (j + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25 over [0, 10].
  Tensor x = Tensor::FromVector<float>({0, 10}, {2});
  ResizeOptions o;
  o.mode = ResizeMode::kLinear;
  Tensor y;
  ASSERT_TRUE(Resize(x, Plan({{4, 2.0}}), o, &y).ok());
  EXPECT_EQ(Values(y), (std::vector<float>{0, 2.5f, 7.5f, 10}));
}

TEST(FlowResize, CubicKeepsConstantsForEveryCoordinateMode) {
  Tensor x = Tensor::FromVector<float>(std::vector<float>(12, 3.0f), {3, 4});
  for (ResizeCoord c : {ResizeCoord::kHalfPixel, ResizeCoord::kAlignCorners,
                        ResizeCoord::kAsymmetric, ResizeCoord::kPytorchHalfPixel}) {
    for (bool exclude : {false, true}) {
      ResizeOptions o;
      o.mode = ResizeMode::kCubic;
      o.coord = c;
      o.exclude_outside = exclude;
      Tensor y;
      ASSERT_TRUE(Resize(x, Plan({{5, 5.0 / 3}, {7, 7.0 / 4}}), o, &y).ok());
      ASSERT_EQ(y.dims(), (std::vector<int64_t>{5, 7}));
      for (float v : Values(y)) EXPECT_NEAR(v, 3.0f, 1e-5) << static_cast<int>(c);
    }
  }
}

TEST(FlowResize, AntialiasLinearWidensTheFilter) {
  // Scale 0.5: 4 taps with weights 1/8, 3/8, 3/8, 1/8 around x = 0.5 and 2.5 (edge-clamped).
  Tensor x = Tensor::FromVector<float>({0, 0, 4, 4}, {4});
  ResizeOptions o;
  o.mode = ResizeMode::kLinear;
  o.antialias = true;
  Tensor y;
  ASSERT_TRUE(Resize(x, Plan({{2, 0.5}}), o, &y).ok());
  EXPECT_EQ(Values(y), (std::vector<float>{0.5f, 3.5f}));
}

TEST(FlowResize, TfCropAndResizeExtrapolates) {
  // roi [0.5, 1.5] of 3 pixels: x_ori = 1 and 3; 3 is outside [0, 2].
  Tensor x = Tensor::FromVector<float>({1, 2, 3}, {3});
  ResizeOptions o;
  o.mode = ResizeMode::kLinear;
  o.coord = ResizeCoord::kTfCropAndResize;
  o.extrapolation_value = -7;
  Tensor y;
  ASSERT_TRUE(Resize(x, {ResizeAxis{2, 2.0 / 3, 0.5, 1.5}}, o, &y).ok());
  EXPECT_EQ(Values(y), (std::vector<float>{2, -7}));
}

TEST(FlowResize, IntegersRoundHalfToEven) {
  // Linear [0, 3] to 4: 0, 0.75, 2.25, 3 -> 0, 1, 2, 3; and [0, 1] to 4: 0, .25, .75, 1.
  Tensor x = Tensor::FromVector<int32_t>({0, 3}, {2});
  ResizeOptions o;
  o.mode = ResizeMode::kLinear;
  Tensor y;
  ASSERT_TRUE(Resize(x, Plan({{4, 2.0}}), o, &y).ok());
  ASSERT_EQ(y.dtype(), DType::kInt32);
  EXPECT_EQ(Values(y), (std::vector<float>{0, 1, 2, 3}));
}

TEST(FlowResize, ShrinkThenGrowIsExact) {
  // [1, 6] -> [3, 2]: the shrinking axis runs first; nearest keeps values exact.
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {1, 6});
  ResizeOptions o;
  o.coord = ResizeCoord::kAsymmetric;
  o.nearest = NearestRound::kFloor;
  Tensor y;
  ASSERT_TRUE(Resize(x, Plan({{3, 3.0}, {2, 1.0 / 3}}), o, &y).ok());
  EXPECT_EQ(Values(y), (std::vector<float>{1, 4, 1, 4, 1, 4}));
}

TEST(FlowResize, Errors) {
  Tensor x = Tensor::FromVector<float>({1, 2}, {2});
  Tensor y;
  EXPECT_FALSE(Resize(x, Plan({{2, 1.0}, {2, 1.0}}), {}, &y).ok());  // rank mismatch
  EXPECT_FALSE(Resize(x, Plan({{2, 0.0}}), {}, &y).ok());             // zero scale
  EXPECT_FALSE(Resize(x, Plan({{2, std::nan("")}}), {}, &y).ok());    // NaN scale
  Tensor empty(DType::kFloat32, {0});
  EXPECT_FALSE(Resize(empty, Plan({{3, 1.0}}), {}, &y).ok());  // grow an empty axis
  Status big = Resize(x, Plan({{int64_t{1} << 40, 1.0}}), {}, &y);
  EXPECT_FALSE(big.ok());
  EXPECT_FALSE(Resize(Tensor(DType::kBool, {2}), Plan({{2, 1.0}}), {}, &y).ok());
}

TEST(FlowGridSample, BilinearNearestAndZeroPadding) {
  // 2x2 image; grid points: centre (0, 0), corner (-1, -1), far outside (-3, -3).
  Tensor x = Tensor::FromVector<float>({0, 1, 2, 3}, {1, 1, 2, 2});
  Tensor grid = Tensor::FromVector<float>({0, 0, -1, -1, -3, -3}, {1, 1, 3, 2});
  Tensor y;
  ASSERT_TRUE(GridSample(x, grid, GridSampleMode::kBilinear, GridSamplePadding::kZeros, true, &y)
                  .ok());
  EXPECT_EQ(Values(y), (std::vector<float>{1.5f, 0, 0}));
  ASSERT_TRUE(GridSample(x, grid, GridSampleMode::kNearest, GridSamplePadding::kBorder, true, &y)
                  .ok());
  // Centre (0.5, 0.5) rounds half to even: (0, 0) -> 0.
  EXPECT_EQ(Values(y), (std::vector<float>{0, 0, 0}));
  Tensor bad = Tensor::FromVector<float>({0, 0}, {1, 1, 1, 1, 2});
  EXPECT_FALSE(
      GridSample(x, bad, GridSampleMode::kBilinear, GridSamplePadding::kZeros, true, &y).ok());
}

TEST(FlowRoiAlign, ConstantImageAveragesToTheConstant) {
  Tensor x = Tensor::FromVector<float>(std::vector<float>(16, 5.0f), {1, 1, 4, 4});
  Tensor rois = Tensor::FromVector<float>({0, 0, 3, 3}, {1, 4});
  RoiAlignOptions o;
  o.output_height = o.output_width = 2;
  Tensor y;
  ASSERT_TRUE(RoiAlign(x, rois, {0}, o, &y).ok());
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{1, 1, 2, 2}));
  for (float v : Values(y)) EXPECT_FLOAT_EQ(v, 5.0f);
  EXPECT_FALSE(RoiAlign(x, rois, {1}, o, &y).ok());  // batch index out of range
  Tensor huge = Tensor::FromVector<float>({0, 0, 1e30f, 1e30f}, {1, 4});
  o.sampling_ratio = 0;
  EXPECT_FALSE(RoiAlign(x, huge, {0}, o, &y).ok());  // adaptive sampling would never end
}

// RNN / GRU / LSTM with one hidden unit, so every step is worked out by hand.
struct Cell {
  RnnOptions o;
  Tensor x, w, r;
  RnnInputs in;
};

Cell OneUnit(RnnCell cell, std::vector<float> xs, int64_t batch, float w, float r) {
  Cell c;
  c.o.cell = cell;
  c.o.hidden = 1;
  const int gates = RnnGates(cell);
  using K = RnnActivation::Kind;
  if (cell == RnnCell::kRnn) c.o.activations = {{K::kTanh}};
  if (cell == RnnCell::kGru) c.o.activations = {{K::kSigmoid}, {K::kTanh}};
  if (cell == RnnCell::kLstm) c.o.activations = {{K::kSigmoid}, {K::kTanh}, {K::kTanh}};
  const int64_t seq = static_cast<int64_t>(xs.size()) / batch;
  c.x = Tensor::FromVector<float>(xs, {seq, batch, 1});
  c.w = Tensor::FromVector<float>(std::vector<float>(gates, w), {1, gates, 1});
  c.r = Tensor::FromVector<float>(std::vector<float>(gates, r), {1, gates, 1});
  c.in.x = &c.x;
  c.in.w = &c.w;
  c.in.r = &c.r;
  return c;
}

TEST(FlowRnn, ForwardReverseAndSequenceLengths) {
  Cell c = OneUnit(RnnCell::kRnn, {1, 2}, 1, 1, 1);
  RnnOutputs out;
  ASSERT_TRUE(RunRnn(c.o, c.in, &out).ok());
  const double h1 = std::tanh(1.0), h2 = std::tanh(2 + h1);
  EXPECT_NEAR(Values(out.y)[0], h1, 1e-6);
  EXPECT_NEAR(Values(out.y)[1], h2, 1e-6);
  EXPECT_NEAR(Values(out.y_h)[0], h2, 1e-6);

  c.o.reverse = true;
  ASSERT_TRUE(RunRnn(c.o, c.in, &out).ok());
  const double r1 = std::tanh(2.0), r0 = std::tanh(1 + r1);
  EXPECT_NEAR(Values(out.y)[0], r0, 1e-6);
  EXPECT_NEAR(Values(out.y)[1], r1, 1e-6);
  EXPECT_NEAR(Values(out.y_h)[0], r0, 1e-6);

  // Batch of two, X [seq=2, batch=2]; entry 1 has length 1: its Y at t=1 stays zero.
  Cell b = OneUnit(RnnCell::kRnn, {1, 3, 2, 4}, 2, 1, 1);
  b.in.seq_lens = {2, 1};
  ASSERT_TRUE(RunRnn(b.o, b.in, &out).ok());
  EXPECT_EQ(out.y.dims(), (std::vector<int64_t>{2, 1, 2, 1}));
  EXPECT_NEAR(Values(out.y)[1], std::tanh(3.0), 1e-6);
  EXPECT_EQ(Values(out.y)[3], 0.0f);
  EXPECT_NEAR(Values(out.y_h)[1], std::tanh(3.0), 1e-6);
  b.in.seq_lens = {2, 3};
  EXPECT_FALSE(RunRnn(b.o, b.in, &out).ok());
}

TEST(FlowRnn, GruAndLstmWithZeroWeightsDecayTheState) {
  // GRU: z = r = 0.5, candidate tanh(0) = 0, so H = 0.5 * H0.
  Cell g = OneUnit(RnnCell::kGru, {7}, 1, 0, 0);
  Tensor h0 = Tensor::FromVector<float>({2}, {1, 1, 1});
  g.in.initial_h = &h0;
  RnnOutputs out;
  ASSERT_TRUE(RunRnn(g.o, g.in, &out).ok());
  EXPECT_FLOAT_EQ(Values(out.y_h)[0], 1.0f);

  // LSTM: i = o = f = 0.5, candidate 0: C = 0.5 * C0, H = 0.5 * tanh(C).
  Cell l = OneUnit(RnnCell::kLstm, {7}, 1, 0, 0);
  Tensor c0 = Tensor::FromVector<float>({1}, {1, 1, 1});
  l.in.initial_c = &c0;
  ASSERT_TRUE(RunRnn(l.o, l.in, &out).ok());
  EXPECT_FLOAT_EQ(Values(out.y_c)[0], 0.5f);
  EXPECT_NEAR(Values(out.y_h)[0], 0.5 * std::tanh(0.5), 1e-6);
  // input_forget: f = 1 - i = 0.5 as well here; peepholes of zero change nothing.
  Tensor p = Tensor::FromVector<float>({0, 0, 0}, {1, 3});
  l.in.p = &p;
  l.o.input_forget = true;
  ASSERT_TRUE(RunRnn(l.o, l.in, &out).ok());
  EXPECT_FLOAT_EQ(Values(out.y_c)[0], 0.5f);
}

TEST(FlowRnn, ShapeErrors) {
  Cell c = OneUnit(RnnCell::kLstm, {1}, 1, 1, 1);
  RnnOutputs out;
  c.o.hidden = 2;  // W is [1, 4, 1], not [1, 8, 1]
  EXPECT_FALSE(RunRnn(c.o, c.in, &out).ok());
  c.o.hidden = 1;
  c.o.activations.pop_back();
  EXPECT_FALSE(RunRnn(c.o, c.in, &out).ok());
  Cell d = OneUnit(RnnCell::kRnn, {1}, 1, 1, 1);
  Tensor wrong_h = Tensor::FromVector<float>({0, 0}, {1, 1, 2});
  d.in.initial_h = &wrong_h;
  EXPECT_FALSE(RunRnn(d.o, d.in, &out).ok());
}

TEST(FlowRnn, Activations) {
  using K = RnnActivation::Kind;
  EXPECT_DOUBLE_EQ(ApplyRnnActivation({K::kHardSigmoid, 0.2, 0.5}, 10), 1.0);
  EXPECT_DOUBLE_EQ(ApplyRnnActivation({K::kLeakyRelu, 0.1, 0}, -2), -0.2);
  EXPECT_DOUBLE_EQ(ApplyRnnActivation({K::kAffine, 2, 1}, 3), 7);
  EXPECT_NEAR(ApplyRnnActivation({K::kSoftplus}, 1000), 1000, 1e-9);  // no overflow
}

}  // namespace
}  // namespace kiln::ref
