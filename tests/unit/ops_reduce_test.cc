// Reference reductions, ArgMax/ArgMin, softmax family and losses on small hand-computed cases,
// and their error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/ref/reduce.h"
#include "kernels/ref/softmax.h"

namespace kiln::ref {
namespace {

template <class T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

Tensor F32(std::vector<float> v, std::vector<int64_t> dims) {
  return Tensor::FromVector(v, std::move(dims));
}

// [[1, 2, 3], [4, 5, 6]]
Tensor Grid() { return F32({1, 2, 3, 4, 5, 6}, {2, 3}); }

TEST(RefReduce, SumOverEachAxisAndAll) {
  auto rows = Reduce(Grid(), ReduceKind::kSum, {1}, true);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_EQ(rows->dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Values<float>(*rows), (std::vector<float>{6, 15}));
  auto cols = Reduce(Grid(), ReduceKind::kSum, {0}, false);
  ASSERT_TRUE(cols.ok());
  EXPECT_EQ(cols->dims(), (std::vector<int64_t>{3}));
  EXPECT_EQ(Values<float>(*cols), (std::vector<float>{5, 7, 9}));
  auto all = Reduce(Grid(), ReduceKind::kSum, {0, 1}, false);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->rank(), 0);
  EXPECT_EQ(Values<float>(*all), (std::vector<float>{21}));
}

TEST(RefReduce, EveryKindOnRows) {
  struct Case {
    ReduceKind kind;
    std::vector<float> want;
  };
  const Case cases[] = {
      {ReduceKind::kMean, {2, 5}},
      {ReduceKind::kMax, {3, 6}},
      {ReduceKind::kMin, {1, 4}},
      {ReduceKind::kProd, {6, 120}},
      {ReduceKind::kL1, {6, 15}},
      {ReduceKind::kL2, {std::sqrt(14.0f), std::sqrt(77.0f)}},
      {ReduceKind::kLogSum, {std::log(6.0f), std::log(15.0f)}},
      {ReduceKind::kSumSquare, {14, 77}},
      {ReduceKind::kLogSumExp,
       {static_cast<float>(std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0))),
        static_cast<float>(std::log(std::exp(4.0) + std::exp(5.0) + std::exp(6.0)))}},
  };
  for (const Case& c : cases) {
    auto r = Reduce(Grid(), c.kind, {1}, false);
    ASSERT_TRUE(r.ok());
    auto got = Values<float>(*r);
    ASSERT_EQ(got.size(), 2u);
    for (size_t i = 0; i < 2; ++i)
      EXPECT_NEAR(got[i], c.want[i], 1e-5 * std::fabs(c.want[i])) << static_cast<int>(c.kind);
  }
}

TEST(RefReduce, LogSumExpDoesNotOverflow) {
  auto r = Reduce(F32({1000, 1000}, {2}), ReduceKind::kLogSumExp, {0}, false);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->data<float>()[0], 1000 + std::log(2.0f), 1e-3);
}

TEST(RefReduce, EmptySetGivesTheIdentity) {
  Tensor empty(DType::kFloat32, {2, 0});
  const float inf = std::numeric_limits<float>::infinity();
  auto sum = Reduce(empty, ReduceKind::kSum, {1}, true);
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(sum->dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Values<float>(*sum), (std::vector<float>{0, 0}));
  EXPECT_EQ(Values<float>(*Reduce(empty, ReduceKind::kProd, {1}, false)),
            (std::vector<float>{1, 1}));
  EXPECT_EQ(Values<float>(*Reduce(empty, ReduceKind::kMax, {1}, false)),
            (std::vector<float>{-inf, -inf}));
  EXPECT_EQ(Values<float>(*Reduce(empty, ReduceKind::kMin, {1}, false)),
            (std::vector<float>{inf, inf}));
  EXPECT_EQ(Values<float>(*Reduce(empty, ReduceKind::kLogSumExp, {1}, false)),
            (std::vector<float>{-inf, -inf}));
  EXPECT_TRUE(std::isnan(Reduce(empty, ReduceKind::kMean, {1}, false)->data<float>()[0]));
}

TEST(RefReduce, IntegersAreExact) {
  Tensor x = Tensor::FromVector<int64_t>({int64_t{1} << 60, 1, -3, 7}, {2, 2});
  auto sum = Reduce(x, ReduceKind::kSum, {1}, false);
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(Values<int64_t>(*sum), (std::vector<int64_t>{(int64_t{1} << 60) + 1, 4}));
  EXPECT_EQ(Values<int64_t>(*Reduce(x, ReduceKind::kMin, {0}, false)),
            (std::vector<int64_t>{-3, 1}));
  EXPECT_EQ(Values<int64_t>(*Reduce(x, ReduceKind::kL1, {1}, false))[1], 10);
  Tensor i32 = Tensor::FromVector<int32_t>({7, -8}, {2});
  EXPECT_EQ(Values<int32_t>(*Reduce(i32, ReduceKind::kMean, {0}, false))[0], 0);  // -1/2 -> 0
}

TEST(RefReduce, RejectsBadAxesAndTypes) {
  EXPECT_FALSE(Reduce(Grid(), ReduceKind::kSum, {2}, true).ok());
  EXPECT_FALSE(Reduce(Grid(), ReduceKind::kSum, {1, 1}, true).ok());
  Tensor b(DType::kBool, {2});
  EXPECT_FALSE(Reduce(b, ReduceKind::kSum, {0}, true).ok());
}

TEST(RefArgReduce, TiesFirstOrLast) {
  Tensor x = F32({1, 3, 3, 0, 0, 2}, {2, 3});
  auto first = ArgReduce(x, true, 1, false, false);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(Values<int64_t>(*first), (std::vector<int64_t>{1, 2}));
  auto last = ArgReduce(x, true, 1, true, true);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Values<int64_t>(*last), (std::vector<int64_t>{2, 2}));
  auto min0 = ArgReduce(x, false, 0, false, false);
  EXPECT_EQ(Values<int64_t>(*min0), (std::vector<int64_t>{1, 1, 1}));
  auto min_last = ArgReduce(x, false, 1, false, true);
  EXPECT_EQ(Values<int64_t>(*min_last), (std::vector<int64_t>{0, 1}));
}

TEST(RefArgReduce, RejectsEmptyAxisAndBadAxis) {
  EXPECT_FALSE(ArgReduce(Tensor(DType::kFloat32, {2, 0}), true, 1, true, false).ok());
  EXPECT_FALSE(ArgReduce(Grid(), true, 2, true, false).ok());
}

TEST(RefSoftmax, RowsSumToOneAndLargeInputsAreStable) {
  auto y = Softmax(F32({0, std::log(3.0f), 1000, 1000}, {2, 2}), SoftmaxKind::kSoftmax, 2, 2, 1);
  ASSERT_TRUE(y.ok());
  auto v = Values<float>(*y);
  EXPECT_NEAR(v[0], 0.25f, 1e-6);
  EXPECT_NEAR(v[1], 0.75f, 1e-6);
  EXPECT_NEAR(v[2], 0.5f, 1e-6);
  EXPECT_NEAR(v[3], 0.5f, 1e-6);
  auto log = Softmax(F32({1000, 1000}, {2}), SoftmaxKind::kLogSoftmax, 1, 2, 1);
  EXPECT_NEAR(log->data<float>()[0], -std::log(2.0f), 1e-6);
}

TEST(RefSoftmax, InnerAxisAndHardmax) {
  // [2, 2] normalized over dim 0: columns.
  auto y = Softmax(F32({0, 5, 0, 1}, {2, 2}), SoftmaxKind::kHardmax, 1, 2, 2);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(Values<float>(*y), (std::vector<float>{1, 1, 0, 0}));  // ties: first index
  EXPECT_FALSE(Softmax(Tensor(DType::kInt32, {2}), SoftmaxKind::kSoftmax, 1, 2, 1).ok());
}

TEST(RefLoss, NllWithWeightsIgnoreAndReductions) {
  // input [N=2, C=3] of log-probs; targets 2 and 0; weight per class.
  Tensor input = F32({-1, -2, -3, -4, -5, -6}, {2, 3});
  Tensor target = Tensor::FromVector<int64_t>({2, 0}, {2});
  Tensor weight = F32({0.5f, 1, 2}, {3});
  LossParams p;
  p.reduction = LossReduction::kNone;
  auto none = NllLoss(input, target, &weight, p);
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_EQ(Values<float>(*none), (std::vector<float>{6, 2}));
  p.reduction = LossReduction::kSum;
  EXPECT_EQ(NllLoss(input, target, &weight, p)->data<float>()[0], 8);
  p.reduction = LossReduction::kMean;
  EXPECT_NEAR(NllLoss(input, target, &weight, p)->data<float>()[0], 8 / 2.5f, 1e-6);
  p.ignore_index = 2;
  EXPECT_NEAR(NllLoss(input, target, &weight, p)->data<float>()[0], 2 / 0.5f, 1e-6);
  p.ignore_index.reset();
  EXPECT_NEAR(NllLoss(input, target, nullptr, p)->data<float>()[0], 3.5f, 1e-6);
}

TEST(RefLoss, NllRejectsOutOfRangeTargetsAndBadShapes) {
  Tensor input = F32({-1, -2, -3, -4, -5, -6}, {2, 3});
  LossParams p;
  auto bad = NllLoss(input, Tensor::FromVector<int64_t>({3, 0}, {2}), nullptr, p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("target 3"), std::string::npos);
  EXPECT_FALSE(NllLoss(input, Tensor::FromVector<int64_t>({-1, 0}, {2}), nullptr, p).ok());
  p.ignore_index = -1;
  EXPECT_TRUE(NllLoss(input, Tensor::FromVector<int64_t>({-1, 0}, {2}), nullptr, p).ok());
  EXPECT_FALSE(NllLoss(input, Tensor::FromVector<int64_t>({0, 0, 0}, {3}), nullptr, p).ok());
  Tensor short_weight = F32({1, 1}, {2});
  EXPECT_FALSE(NllLoss(input, Tensor::FromVector<int64_t>({0, 0}, {2}), &short_weight, p).ok());
}

TEST(RefLoss, CrossEntropyMatchesLogSoftmaxThenNll) {
  Tensor scores = F32({0, 0, std::log(2.0f), 0}, {2, 2});
  Tensor labels = Tensor::FromVector<int64_t>({1, 0}, {2});
  LossParams p;
  p.reduction = LossReduction::kNone;
  auto r = SoftmaxCrossEntropy(scores, labels, nullptr, p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto loss = Values<float>(r->loss);
  EXPECT_NEAR(loss[0], std::log(2.0f), 1e-6);
  EXPECT_NEAR(loss[1], -std::log(2.0f / 3.0f), 1e-6);
  EXPECT_EQ(r->log_prob.dims(), scores.dims());
}

}  // namespace
}  // namespace kiln::ref
