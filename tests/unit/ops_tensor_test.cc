// Reference kernels for data movement and indexing: small hand-computed cases and error paths.
#include <gtest/gtest.h>

#include <limits>

#include "kernels/ref/indexing.h"
#include "kernels/ref/movement.h"

namespace kiln::ref {
namespace {

Tensor F(std::vector<float> v, std::vector<int64_t> dims) { return Tensor::FromVector(v, dims); }
Tensor I(std::vector<int64_t> v, std::vector<int64_t> dims) { return Tensor::FromVector(v, dims); }

std::vector<float> Floats(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}
std::vector<int64_t> Ints(const Tensor& t) {
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}
bool Mentions(const Status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

TEST(RefMovement, TransposeSwapsAndPermutes) {
  auto t = Transpose(F({1, 2, 3, 4, 5, 6}, {2, 3}), {1, 0});
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(Floats(*t), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_FALSE(Transpose(F({1, 2}, {1, 2}), {0, 0}).ok());
}

TEST(RefMovement, ConcatAndSplitAreInverse) {
  Tensor a = F({1, 2, 3, 4}, {2, 2}), b = F({5, 6}, {2, 1});
  auto c = Concat({&a, &b}, 1);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(Floats(*c), (std::vector<float>{1, 2, 5, 3, 4, 6}));
  auto parts = Split(*c, 1, {2, 1});
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ(Floats((*parts)[0]), Floats(a));
  EXPECT_EQ(Floats((*parts)[1]), Floats(b));
  EXPECT_FALSE(Split(*c, 1, {2, 2}).ok());
  Tensor wrong = F({1, 2, 3}, {3, 1});
  EXPECT_FALSE(Concat({&a, &wrong}, 1).ok());
}

TEST(RefMovement, SliceWithNegativeStep) {
  // x[::-2] of [0..5] -> 5, 3, 1
  SliceParams p{{5}, {-2}, {3}};
  auto s = Slice(F({0, 1, 2, 3, 4, 5}, {6}), p);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(Floats(*s), (std::vector<float>{5, 3, 1}));
  SliceParams bad{{5}, {2}, {3}};  // would read 5, 7, 9
  EXPECT_FALSE(Slice(F({0, 1, 2, 3, 4, 5}, {6}), bad).ok());
}

TEST(RefMovement, PadModes) {
  Tensor x = F({1, 2, 3}, {3});
  Tensor value = Tensor::Scalar(9.0f);
  auto c = Pad(x, {2, 1}, PadMode::kConstant, value);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Floats(*c), (std::vector<float>{9, 9, 1, 2, 3, 9}));
  auto r = Pad(x, {2, 2}, PadMode::kReflect, Tensor());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Floats(*r), (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
  auto e = Pad(x, {1, 2}, PadMode::kEdge, Tensor());
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(Floats(*e), (std::vector<float>{1, 1, 2, 3, 3, 3}));
  auto w = Pad(x, {2, 1}, PadMode::kWrap, Tensor());
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(Floats(*w), (std::vector<float>{2, 3, 1, 2, 3, 1}));
  auto crop = Pad(x, {-1, 0}, PadMode::kConstant, Tensor());
  ASSERT_TRUE(crop.ok());
  EXPECT_EQ(Floats(*crop), (std::vector<float>{2, 3}));
  EXPECT_FALSE(Pad(x, {-4, 0}, PadMode::kConstant, Tensor()).ok());
}

TEST(RefMovement, TileAndExpand) {
  auto t = Tile(F({1, 2}, {1, 2}), {2, 2});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->dims(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(Floats(*t), (std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2}));
  auto e = Expand(F({1, 2, 3}, {3, 1}), {2, 3, 2});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(Floats(*e), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  EXPECT_FALSE(Expand(F({1, 2, 3}, {3}), {2}).ok());
  EXPECT_FALSE(Tile(F({1}, {1}), {int64_t{1} << 40}).ok());  // beyond the size limit
}

TEST(RefMovement, DepthToSpaceModes) {
  // 1x4x1x1 with b=2: DCR reads channels as (b1, b2, c), CRD as (c, b1, b2); with c = 1 both
  // give [[0, 1], [2, 3]].
  Tensor x = F({0, 1, 2, 3}, {1, 4, 1, 1});
  auto dcr = DepthToSpace(x, 2, false);
  ASSERT_TRUE(dcr.ok());
  EXPECT_EQ(dcr->dims(), (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(Floats(*dcr), (std::vector<float>{0, 1, 2, 3}));
  // 1x8x1x1, c = 2: DCR puts channels 0 and 4 together, CRD channels 0 and 1.
  Tensor y = F({0, 1, 2, 3, 4, 5, 6, 7}, {1, 8, 1, 1});
  auto d = DepthToSpace(y, 2, false);
  auto c = DepthToSpace(y, 2, true);
  ASSERT_TRUE(d.ok() && c.ok());
  EXPECT_EQ(Floats(*d), (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));
  EXPECT_EQ(Floats(*c), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  auto back = SpaceToDepth(*d, 2);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(Floats(*back), Floats(y));
  EXPECT_FALSE(DepthToSpace(F({0, 1, 2}, {1, 3, 1, 1}), 2, false).ok());
}

TEST(RefMovement, TriluAndReverseSequence) {
  Tensor x = F({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  auto u = Trilu(x, 1, true);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(Floats(*u), (std::vector<float>{0, 2, 3, 0, 0, 6, 0, 0, 0}));
  auto l = Trilu(x, -1, false);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(Floats(*l), (std::vector<float>{0, 0, 0, 4, 0, 0, 7, 8, 0}));
  // time_axis 0, batch_axis 1: column b reverses its first lens[b] rows.
  auto r = ReverseSequence(F({1, 2, 3, 4, 5, 6}, {3, 2}), {3, 2}, 1, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Floats(*r), (std::vector<float>{5, 4, 3, 2, 1, 6}));
  EXPECT_FALSE(ReverseSequence(F({1, 2, 3, 4, 5, 6}, {3, 2}), {4, 1}, 1, 0).ok());
}

TEST(RefMovement, CompressAndRange) {
  auto c = Compress(F({1, 2, 3, 4, 5, 6}, {3, 2}), {false, true, true}, 0);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Floats(*c), (std::vector<float>{3, 4, 5, 6}));
  auto flat = Compress(F({1, 2, 3, 4}, {2, 2}), {true, false, false, true}, -1);
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(Floats(*flat), (std::vector<float>{1, 4}));
  EXPECT_FALSE(Compress(F({1, 2}, {2}), {false, false, true}, 0).ok());
  auto r =
      Range(Tensor::Scalar<int32_t>(10), Tensor::Scalar<int32_t>(4), Tensor::Scalar<int32_t>(-3));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->numel(), 2);
  EXPECT_EQ(r->data<int32_t>()[1], 7);
  EXPECT_FALSE(Range(Tensor::Scalar(0.0f), Tensor::Scalar(1.0f), Tensor::Scalar(0.0f)).ok());
}

TEST(RefMovement, StringsMoveToo) {
  Tensor s(DType::kString, {3});
  s.strings() = {"a", "b", "c"};
  auto t = Transpose(s.Reshaped({1, 3}), {1, 0});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->strings(), (std::vector<std::string>{"a", "b", "c"}));
  auto g = Gather(s, I({2, 0}, {2}), 0);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->strings(), (std::vector<std::string>{"c", "a"}));
}

TEST(RefIndexing, GatherWrapsOnceAndNamesBadIndices) {
  Tensor data = F({1, 2, 3, 4, 5, 6}, {3, 2});
  auto g = Gather(data, I({-1, 0}, {2}), 0);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(Floats(*g), (std::vector<float>{5, 6, 1, 2}));
  auto bad = Gather(data, I({3}, {1}), 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Mentions(bad.status(), "index 3")) << bad.status().message();
  EXPECT_TRUE(Mentions(bad.status(), "axis 0 of size 3")) << bad.status().message();
  EXPECT_FALSE(Gather(data, I({-4}, {1}), 0).ok());
  EXPECT_FALSE(Gather(data, F({0}, {1}), 0).ok());  // float indices
}

TEST(RefIndexing, GatherElementsAndGatherND) {
  auto ge = GatherElements(F({1, 2, 3, 4}, {2, 2}), I({0, 0, 1, 0}, {2, 2}), 1);
  ASSERT_TRUE(ge.ok());
  EXPECT_EQ(Floats(*ge), (std::vector<float>{1, 1, 4, 3}));
  EXPECT_FALSE(GatherElements(F({1, 2, 3, 4}, {2, 2}), I({2}, {1, 1}), 1).ok());
  // batch_dims = 1: data [2,2,2], indices [2,1] picks row idx of each batch.
  auto nd = GatherND(F({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2}), I({1, 0}, {2, 1}), 1);
  ASSERT_TRUE(nd.ok()) << nd.status().message();
  EXPECT_EQ(nd->dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Floats(*nd), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_FALSE(GatherND(F({0, 1}, {2}), I({2}, {1, 1}), 0).ok());
}

TEST(RefIndexing, ScatterReductions) {
  Tensor data = F({1, 2, 3, 4, 5}, {1, 5});
  auto s = ScatterElements(data, I({1, 1}, {1, 2}), F({1.1f, 2.1f}, {1, 2}), 1, Reduction::kAdd);
  ASSERT_TRUE(s.ok());
  EXPECT_FLOAT_EQ(s->data<float>()[1], 2 + 1.1f + 2.1f);
  EXPECT_EQ(data.data<float>()[1], 2);  // the input is untouched
  auto none = ScatterElements(data, I({-1}, {1, 1}), F({9}, {1, 1}), 1, Reduction::kNone);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(Floats(*none), (std::vector<float>{1, 2, 3, 4, 9}));
  EXPECT_FALSE(ScatterElements(data, I({5}, {1, 1}), F({9}, {1, 1}), 1, Reduction::kNone).ok());
  auto nd =
      ScatterND(F({1, 2, 3, 4}, {4}), I({3, 1, 3}, {3, 1}), F({10, 20, 30}, {3}), Reduction::kMul);
  ASSERT_TRUE(nd.ok());
  EXPECT_EQ(Floats(*nd), (std::vector<float>{1, 40, 3, 1200}));
  auto maxed = ScatterND(I({1, 2}, {2}), I({0}, {1, 1}), I({7}, {1}), Reduction::kMax);
  ASSERT_TRUE(maxed.ok());
  EXPECT_EQ(Ints(*maxed), (std::vector<int64_t>{7, 2}));
  EXPECT_FALSE(ParseReduction("avg").ok());
}

TEST(RefIndexing, OneHotNonZeroUnique) {
  auto oh = OneHot(I({0, -1, 7}, {3}), 3, F({0, 5}, {2}), 1);
  ASSERT_TRUE(oh.ok());
  EXPECT_EQ(Floats(*oh), (std::vector<float>{5, 0, 0, 0, 0, 5, 0, 0, 0}));
  auto nz = NonZero(F({0, 1, 2, 0}, {2, 2}));
  ASSERT_TRUE(nz.ok());
  EXPECT_EQ(nz->dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Ints(*nz), (std::vector<int64_t>{0, 1, 1, 0}));
  auto u = Unique(F({2, 1, 1, 3, 4, 3}, {6}), -1, false);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(Floats(u->y), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(Ints(u->indices), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(Ints(u->inverse_indices), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(Ints(u->counts), (std::vector<int64_t>{1, 2, 2, 1}));
  auto s = Unique(F({1, 1, 0, 1, 2, 1, 0, 1}, {4, 2}), 0, true);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(Floats(s->y), (std::vector<float>{0, 1, 1, 1, 2, 1}));
  EXPECT_EQ(Ints(s->indices), (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(Ints(s->inverse_indices), (std::vector<int64_t>{1, 0, 2, 0}));
  EXPECT_EQ(Ints(s->counts), (std::vector<int64_t>{2, 1, 1}));
}

TEST(RefMovement, HostileSizesAreErrors) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  Tensor x = F({1, 2}, {2});
  EXPECT_FALSE(Pad(x, {kMin, 0}, PadMode::kConstant, Tensor()).ok());
  EXPECT_FALSE(Pad(x, {0, kMax}, PadMode::kEdge, Tensor()).ok());
  EXPECT_FALSE(Split(x, 0, {kMax, kMax}).ok());
  EXPECT_FALSE(Split(x, 0, {3, -1}).ok());
  // Zero elements, but dims whose sum overflows.
  Tensor huge(DType::kFloat32, {0, int64_t{1} << 62});
  EXPECT_FALSE(Concat({&huge, &huge, &huge}, 1).ok());
  EXPECT_FALSE(Tile(x, {kMax}).ok());
  EXPECT_FALSE(Range(Tensor::Scalar<int64_t>(kMin), Tensor::Scalar<int64_t>(kMax),
                     Tensor::Scalar<int64_t>(1))
                   .ok());
  EXPECT_FALSE(OneHot(I({0}, {1}), int64_t{1} << 40, F({0, 1}, {2}), 1).ok());
}

}  // namespace
}  // namespace kiln::ref
