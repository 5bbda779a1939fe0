// Reference elementwise kernels on small hand-computed cases and their error paths; then the op
// definitions (attributes, inference, legacy opsets) driven through the op table.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "kernels/ref/elementwise.h"
#include "ops/op_registry.h"

namespace kiln::ref {
namespace {

template <class T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

template <class T>
Tensor Vec(std::vector<T> v, std::vector<int64_t> dims = {}) {
  if (dims.empty()) dims = {static_cast<int64_t>(v.size())};
  return Tensor::FromVector(v, dims);
}

TEST(ElementwiseUnary, RoundHalvesToEven) {
  auto y = Unary(UnaryKind::kRound, {}, Vec<float>({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.3f, -2.7f}));
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(Values<float>(*y), (std::vector<float>{0, 2, 2, -0.0f, -2, 2, -3}));
}

TEST(ElementwiseUnary, ActivationsMatchHandValues) {
  UnaryParams leaky{0.1, 0, 0};
  auto y = Unary(UnaryKind::kLeakyRelu, leaky, Vec<double>({-2, 0, 3}));
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(Values<double>(*y), (std::vector<double>{-0.2, 0, 3}));

  auto s = Unary(UnaryKind::kSigmoid, {}, Vec<double>({0, -1000, 1000}));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(Values<double>(*s), (std::vector<double>{0.5, 0, 1}));  // no inf/inf NaN

  UnaryParams shrink{1.5, 0.5, 0};  // lambd, bias
  auto k = Unary(UnaryKind::kShrink, shrink, Vec<float>({-2, -1, 0, 1, 2}));
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(Values<float>(*k), (std::vector<float>{-1.5f, 0, 0, 0, 1.5f}));

  auto hs = Unary(UnaryKind::kHardSwish, {}, Vec<float>({-4, 0, 3, 4}));
  ASSERT_TRUE(hs.ok());
  EXPECT_EQ(Values<float>(*hs), (std::vector<float>{0, 0, 3, 4}));

  auto g = Unary(UnaryKind::kGelu, {}, Vec<double>({1.0}));
  ASSERT_TRUE(g.ok());
  EXPECT_NEAR(Values<double>(*g)[0], 0.8413447460685429, 1e-12);
  auto gt = Unary(UnaryKind::kGeluTanh, {}, Vec<double>({1.0}));
  ASSERT_TRUE(gt.ok());
  EXPECT_NEAR(Values<double>(*gt)[0], 0.8411919906082768, 1e-12);

  auto sp = Unary(UnaryKind::kSoftplus, {}, Vec<float>({100.0f, 0.0f}));
  ASSERT_TRUE(sp.ok());
  EXPECT_FLOAT_EQ(Values<float>(*sp)[0], 100.0f);  // no overflow through exp(100)
  EXPECT_FLOAT_EQ(Values<float>(*sp)[1], std::log(2.0f));
}

TEST(ElementwiseUnary, IntegersWrapAndFloatOnlyOpsRefuseThem) {
  auto a = Unary(UnaryKind::kAbs, {}, Vec<int8_t>({-128, -3, 4}));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(Values<int8_t>(*a), (std::vector<int8_t>{-128, 3, 4}));
  auto n = Unary(UnaryKind::kNeg, {}, Vec<int32_t>({std::numeric_limits<int32_t>::min(), 5}));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(Values<int32_t>(*n), (std::vector<int32_t>{std::numeric_limits<int32_t>::min(), -5}));
  auto s = Unary(UnaryKind::kSign, {}, Vec<int64_t>({-7, 0, 9}));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(Values<int64_t>(*s), (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_FALSE(Unary(UnaryKind::kExp, {}, Vec<int32_t>({1})).ok());
  EXPECT_FALSE(Unary(UnaryKind::kAbs, {}, Vec<bool>({true})).ok());
}

TEST(ElementwiseUnary, PredicatesAndNot) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = Vec<float>({1, std::nanf(""), inf, -inf});
  auto nan = IsNaN(x);
  ASSERT_TRUE(nan.ok());
  EXPECT_EQ(Values<bool>(*nan), (std::vector<bool>{false, true, false, false}));
  auto neg = IsInf(x, false, true);
  ASSERT_TRUE(neg.ok());
  EXPECT_EQ(Values<bool>(*neg), (std::vector<bool>{false, false, false, true}));
  auto n = Not(Vec<bool>({true, false}));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(Values<bool>(*n), (std::vector<bool>{false, true}));
  EXPECT_FALSE(Not(Vec<int32_t>({1})).ok());
  auto b = BitwiseNot(Vec<uint8_t>({0, 0xf0}));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(Values<uint8_t>(*b), (std::vector<uint8_t>{0xff, 0x0f}));
  EXPECT_FALSE(BitwiseNot(Vec<float>({1})).ok());
}

TEST(ElementwiseCast, NumbersSaturateAndNaNBecomesZero) {
  auto y = Cast(Vec<float>({1.9f, -1.9f, 1e10f, -1e10f, std::nanf("")}), DType::kInt32);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(Values<int32_t>(*y), (std::vector<int32_t>{1, -1, std::numeric_limits<int32_t>::max(),
                                                       std::numeric_limits<int32_t>::min(), 0}));
  auto u = Cast(Vec<int32_t>({300, -1}), DType::kUInt8);  // integers wrap
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(Values<uint8_t>(*u), (std::vector<uint8_t>{44, 255}));
  auto b = Cast(Vec<float>({0.0f, 0.5f, std::nanf("")}), DType::kBool);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(Values<bool>(*b), (std::vector<bool>{false, true, true}));
  auto f = Cast(Vec<double>({1e300}), DType::kFloat32);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(std::isinf(Values<float>(*f)[0]));
}

TEST(ElementwiseCast, HalfTypesRoundTrip) {
  auto h = Cast(Vec<float>({1.0f, -2.5f, 0.1f}), DType::kFloat16);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->data<uint16_t>()[0], 0x3c00);
  auto back = Cast(*h, DType::kFloat64);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(Values<double>(*back)[1], -2.5);
  EXPECT_NEAR(Values<double>(*back)[2], 0.1, 1e-4);
  auto bf = Cast(*h, DType::kBFloat16);
  ASSERT_TRUE(bf.ok());
  EXPECT_EQ(bf->data<uint16_t>()[0], 0x3f80);
}

TEST(ElementwiseCast, FloatToBFloat16TruncatesAndKeepsNaN) {
  Tensor x(DType::kFloat32, {2});
  const uint32_t bits[2] = {0x3f80ffffu, 0x7f800001u};  // just below 1 + 2^-7; a NaN in low bits
  std::memcpy(x.raw(), bits, sizeof(bits));
  auto bf = Cast(x, DType::kBFloat16);
  ASSERT_TRUE(bf.ok());
  EXPECT_EQ(bf->data<uint16_t>()[0], 0x3f80);
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(bf->data<uint16_t>()[1])));
}

TEST(ElementwiseCast, Strings) {
  auto s = Cast(Vec<float>({0.1f, -3.0f, std::numeric_limits<float>::infinity()}), DType::kString);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->strings(), (std::vector<std::string>{"0.1", "-3", "inf"}));
  Tensor in(DType::kString, {4});
  in.strings() = {"1.5", " -2 ", "INF", "nan"};
  auto f = Cast(in, DType::kFloat32);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(Values<float>(*f)[0], 1.5f);
  EXPECT_EQ(Values<float>(*f)[1], -2.0f);
  EXPECT_TRUE(std::isinf(Values<float>(*f)[2]));
  EXPECT_TRUE(std::isnan(Values<float>(*f)[3]));
  Tensor big(DType::kString, {1});
  big.strings() = {"9007199254740993"};  // 2^53 + 1: exact only if parsed as an integer
  auto i = Cast(big, DType::kInt64);
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(Values<int64_t>(*i)[0], 9007199254740993);
  Tensor bad(DType::kString, {2});
  bad.strings() = {"1", "abc"};
  auto e = Cast(bad, DType::kFloat32);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("element 1"), std::string::npos);
}

TEST(ElementwiseUnary, ClipBoundsAreOptionalAndTyped) {
  Tensor x = Vec<int8_t>({-100, 0, 100});
  Tensor lo = Tensor::Scalar<int8_t>(-5);
  Tensor hi = Tensor::Scalar<int8_t>(5);
  auto y = Clip(x, &lo, &hi);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(Values<int8_t>(*y), (std::vector<int8_t>{-5, 0, 5}));
  auto only_max = Clip(x, nullptr, &hi);
  ASSERT_TRUE(only_max.ok());
  EXPECT_EQ(Values<int8_t>(*only_max), (std::vector<int8_t>{-100, 0, 5}));
  auto inverted = Clip(x, &hi, &lo);  // min > max: everything becomes max
  ASSERT_TRUE(inverted.ok());
  EXPECT_EQ(Values<int8_t>(*inverted), (std::vector<int8_t>{-5, -5, -5}));
  Tensor wrong = Tensor::Scalar<float>(1.0f);
  EXPECT_FALSE(Clip(x, &wrong, nullptr).ok());
  Tensor two = Vec<int8_t>({1, 2});
  EXPECT_FALSE(Clip(x, &two, nullptr).ok());
}

TEST(ElementwiseBinary, BroadcastsBothWays) {
  auto y = Binary(BinaryKind::kAdd, Vec<float>({1, 2, 3}, {3, 1}), Vec<float>({10, 20}, {1, 2}));
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(Values<float>(*y), (std::vector<float>{11, 21, 12, 22, 13, 23}));
  auto scalar = Binary(BinaryKind::kMul, Tensor::Scalar<double>(2), Tensor::Scalar<double>(4));
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar->rank(), 0);
  EXPECT_EQ(Values<double>(*scalar)[0], 8);
  auto empty = Binary(BinaryKind::kSub, Vec<float>({}, {0, 3}), Vec<float>({1, 2, 3}));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->dims(), (std::vector<int64_t>{0, 3}));
  EXPECT_FALSE(Binary(BinaryKind::kAdd, Vec<float>({1, 2}), Vec<float>({1, 2, 3})).ok());
  EXPECT_FALSE(Binary(BinaryKind::kAdd, Vec<float>({1}), Vec<double>({1})).ok());
}

TEST(ElementwiseBinary, HugeBroadcastIsAnErrorNotAnAllocation) {
  Tensor a(DType::kFloat32, {1 << 20, 1});
  Tensor b(DType::kFloat32, {1, 1 << 20});
  EXPECT_FALSE(Binary(BinaryKind::kAdd, a, b).ok());
}

TEST(ElementwiseBinary, IntegerDivTruncatesAndRefusesZero) {
  auto q = Binary(BinaryKind::kDiv, Vec<int32_t>({7, -7, 7, std::numeric_limits<int32_t>::min()}),
                  Vec<int32_t>({2, 2, -2, -1}));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(Values<int32_t>(*q),
            (std::vector<int32_t>{3, -3, -3, std::numeric_limits<int32_t>::min()}));
  auto z = Binary(BinaryKind::kDiv, Vec<int64_t>({1, 2}), Vec<int64_t>({1, 0}));
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().message().find("division by zero"), std::string::npos);
  EXPECT_FALSE(Binary(BinaryKind::kMod, Vec<uint8_t>({1}), Vec<uint8_t>({0})).ok());
}

TEST(ElementwiseBinary, ModSignRules) {
  Tensor a = Vec<int32_t>({-4, 7, 5, 4, -7, 8});
  Tensor b = Vec<int32_t>({2, -3, 8, -2, 3, 5});
  auto py = Binary(BinaryKind::kMod, a, b);
  ASSERT_TRUE(py.ok());
  EXPECT_EQ(Values<int32_t>(*py), (std::vector<int32_t>{0, -2, 5, 0, 2, 3}));
  auto c = Binary(BinaryKind::kFmod, a, b);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Values<int32_t>(*c), (std::vector<int32_t>{0, 1, 5, 0, -1, 3}));
  auto f = Binary(BinaryKind::kMod, Vec<double>({-1.5, 1.5}), Vec<double>({1.0, -1.0}));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(Values<double>(*f), (std::vector<double>{0.5, -0.5}));
}

TEST(ElementwiseBinary, WrappingAndShifts) {
  auto m = Binary(BinaryKind::kMul, Vec<uint16_t>({65535}), Vec<uint16_t>({65535}));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(Values<uint16_t>(*m)[0], 1);
  auto add = Binary(BinaryKind::kAdd, Vec<int64_t>({std::numeric_limits<int64_t>::max()}),
                    Vec<int64_t>({1}));
  ASSERT_TRUE(add.ok());
  EXPECT_EQ(Values<int64_t>(*add)[0], std::numeric_limits<int64_t>::min());
  auto l = Binary(BinaryKind::kBitShiftLeft, Vec<uint8_t>({1, 1, 255}), Vec<uint8_t>({3, 8, 1}));
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(Values<uint8_t>(*l), (std::vector<uint8_t>{8, 0, 254}));
  auto r = Binary(BinaryKind::kBitShiftRight, Vec<uint64_t>({16, 16}), Vec<uint64_t>({2, 64}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<uint64_t>(*r), (std::vector<uint64_t>{4, 0}));
  auto sr = Binary(BinaryKind::kBitShiftRight, Vec<int8_t>({-8, -8, 4, -1}),
                   Vec<int8_t>({1, 8, -1, 127}));
  ASSERT_TRUE(sr.ok());
  EXPECT_EQ(Values<int8_t>(*sr), (std::vector<int8_t>{-4, -1, 0, -1}));
  auto sl = Binary(BinaryKind::kBitShiftLeft, Vec<int8_t>({64, -64, 1}), Vec<int8_t>({1, 1, -1}));
  ASSERT_TRUE(sl.ok());
  EXPECT_EQ(Values<int8_t>(*sl), (std::vector<int8_t>{-128, -128, 0}));
  EXPECT_FALSE(Binary(BinaryKind::kBitwiseAnd, Vec<float>({1}), Vec<float>({1})).ok());
}

TEST(ElementwiseBinary, MaxMinPropagateNaN) {
  auto y = Binary(BinaryKind::kMax, Vec<float>({1, std::nanf(""), 3}),
                  Vec<float>({2, 0, std::nanf("")}));
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(Values<float>(*y)[0], 2);
  EXPECT_TRUE(std::isnan(Values<float>(*y)[1]));
  EXPECT_TRUE(std::isnan(Values<float>(*y)[2]));
}

TEST(ElementwiseBinary, ComparisonsAndLogic) {
  auto lt = Compare(CompareKind::kLess, Vec<int32_t>({1, 5}), Vec<int32_t>({3}));
  ASSERT_TRUE(lt.ok());
  EXPECT_EQ(Values<bool>(*lt), (std::vector<bool>{true, false}));
  Tensor s1(DType::kString, {2}), s2(DType::kString, {});
  s1.strings() = {"a", "b"};
  s2.strings() = {"b"};
  auto eq = Compare(CompareKind::kEqual, s1, s2);
  ASSERT_TRUE(eq.ok());
  EXPECT_EQ(Values<bool>(*eq), (std::vector<bool>{false, true}));
  EXPECT_FALSE(Compare(CompareKind::kLess, s1, s1).ok());
  auto x = Logic(LogicKind::kXor, Vec<bool>({true, true, false}), Vec<bool>({true, false, false}));
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(Values<bool>(*x), (std::vector<bool>{false, true, false}));
  EXPECT_FALSE(Logic(LogicKind::kAnd, Vec<int32_t>({1}), Vec<bool>({true})).ok());
}

TEST(ElementwiseBinary, PowMixedTypes) {
  auto fi = Pow(Vec<float>({2, 3}), Vec<int64_t>({3, -1}));
  ASSERT_TRUE(fi.ok());
  EXPECT_EQ(fi->dtype(), DType::kFloat32);
  EXPECT_EQ(Values<float>(*fi)[0], 8.0f);
  EXPECT_FLOAT_EQ(Values<float>(*fi)[1], 1.0f / 3);
  auto if_ = Pow(Vec<int32_t>({1, 2, 3}), Vec<float>({4, 5, 6}));
  ASSERT_TRUE(if_.ok());
  EXPECT_EQ(Values<int32_t>(*if_), (std::vector<int32_t>{1, 32, 729}));
  auto ii = Pow(Vec<int64_t>({3, 2, -1, -1, 5}), Vec<int64_t>({40, 63, 3, -3, -2}));
  ASSERT_TRUE(ii.ok());
  EXPECT_EQ(Values<int64_t>(*ii)[0], -6289078614652622815);                 // 3^40 - 2^64: wrapped
  EXPECT_EQ(Values<int64_t>(*ii)[1], std::numeric_limits<int64_t>::min());  // 2^63 wraps
  EXPECT_EQ(Values<int64_t>(*ii)[2], -1);
  EXPECT_EQ(Values<int64_t>(*ii)[3], -1);
  EXPECT_EQ(Values<int64_t>(*ii)[4], 0);
  EXPECT_FALSE(Pow(Vec<bool>({true}), Vec<float>({1})).ok());
}

TEST(ElementwiseBinary, WhereBroadcastsThreeWays) {
  auto y =
      Where(Vec<bool>({true, false}, {2, 1}), Vec<int64_t>({1, 2, 3}), Tensor::Scalar<int64_t>(0));
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values<int64_t>(*y), (std::vector<int64_t>{1, 2, 3, 0, 0, 0}));
  EXPECT_FALSE(Where(Vec<int32_t>({1}), Vec<float>({1}), Vec<float>({2})).ok());
  EXPECT_FALSE(Where(Vec<bool>({true}), Vec<float>({1}), Vec<double>({2})).ok());
}

TEST(ElementwiseVariadic, SumMeanMaxMin) {
  Tensor a = Vec<float>({1, 2, 3});
  Tensor b = Vec<float>({4});
  Tensor c = Vec<float>({1, 1, 1});
  auto mean = Variadic(VariadicKind::kMean, {&a, &b, &c});
  ASSERT_TRUE(mean.ok());
  EXPECT_EQ(Values<float>(*mean), (std::vector<float>{2, 7.0f / 3, 8.0f / 3}));
  auto one = Variadic(VariadicKind::kMax, {&a});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(Values<float>(*one), (std::vector<float>{1, 2, 3}));
  Tensor i1 = Vec<int16_t>({1, 9}), i2 = Vec<int16_t>({5, 5});
  auto mn = Variadic(VariadicKind::kMin, {&i1, &i2});
  ASSERT_TRUE(mn.ok());
  EXPECT_EQ(Values<int16_t>(*mn), (std::vector<int16_t>{1, 5}));
  EXPECT_FALSE(Variadic(VariadicKind::kSum, {&i1, &i2}).ok());
  EXPECT_FALSE(Variadic(VariadicKind::kSum, {}).ok());
  EXPECT_FALSE(Variadic(VariadicKind::kMax, {&a, &i1}).ok());
}

}  // namespace
}  // namespace kiln::ref

namespace kiln::ops {
namespace {

// One node of an elementwise op with runtime inputs of known type, run as the interpreter would.
class ElemNode {
 public:
  ElemNode(const std::string& op, int opset) {
    node_.op_type = op;
    node_.name = "n";
    node_.opset = opset;
    node_.outputs.push_back(NewValue("out"));
  }
  ElemNode& Input(const Tensor& t) {
    ir::Value* v = NewValue("in" + std::to_string(node_.inputs.size()));
    v->type = ir::ValueType::Of(t.dtype(), t.dims());
    node_.inputs.push_back(v);
    tensors_.push_back(t);
    return *this;
  }
  ElemNode& Attr(const std::string& name, int64_t i) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kInt;
    a.i = i;
    node_.attrs[name] = a;
    return *this;
  }
  ElemNode& Attr(const std::string& name, const std::string& str) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kString;
    a.s = str;
    node_.attrs[name] = a;
    return *this;
  }
  Status Infer() { return FindOp("", node_.op_type)->infer(node_); }
  std::string OutType() const { return node_.outputs[0]->type.ToString(); }
  Expected<Tensor> Run() {
    RunContext ctx{node_, {}, {}, {}};
    for (const Tensor& t : tensors_) ctx.inputs.push_back(&t);
    ctx.outputs.resize(1);
    KILN_RETURN_IF_ERROR(FindOp("", node_.op_type)->run(ctx));
    return ctx.outputs[0];
  }

 private:
  ir::Value* NewValue(const std::string& name) {
    values_.push_back(std::make_unique<ir::Value>());
    values_.back()->name = name;
    return values_.back().get();
  }
  ir::Node node_;
  std::vector<std::unique_ptr<ir::Value>> values_;
  std::vector<Tensor> tensors_;
};

TEST(ElementwiseOps, CastInfersTargetTypeAndRefusesUnknownTypes) {
  ElemNode cast("Cast", 13);
  cast.Input(Tensor(DType::kFloat32, {2, 3})).Attr("to", int64_t{7});
  ASSERT_TRUE(cast.Infer().ok());
  EXPECT_EQ(cast.OutType(), "int64[2,3]");
  ElemNode f8("Cast", 19);
  f8.Input(Tensor(DType::kFloat32, {2})).Attr("to", int64_t{17});  // float8e4m3fn
  Status st = f8.Infer();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node 'n' (Cast"), std::string::npos) << st.message();
  ElemNode missing("Cast", 13);
  missing.Input(Tensor(DType::kFloat32, {2}));
  EXPECT_FALSE(missing.Infer().ok());
}

TEST(ElementwiseOps, WhereAndCompareInferBroadcastShapes) {
  ElemNode where("Where", 16);
  where.Input(Tensor(DType::kBool, {2, 1}))
      .Input(Tensor(DType::kInt64, {3}))
      .Input(Tensor(DType::kInt64, {}));
  ASSERT_TRUE(where.Infer().ok());
  EXPECT_EQ(where.OutType(), "int64[2,3]");
  ElemNode bad("Where", 16);
  bad.Input(Tensor(DType::kInt32, {2}))
      .Input(Tensor(DType::kFloat32, {2}))
      .Input(Tensor(DType::kFloat32, {2}));
  EXPECT_FALSE(bad.Infer().ok());
  ElemNode less("Less", 13);
  less.Input(Tensor(DType::kFloat32, {4, 1})).Input(Tensor(DType::kFloat32, {5}));
  ASSERT_TRUE(less.Infer().ok());
  EXPECT_EQ(less.OutType(), "bool[4,5]");
  ElemNode mixed("Add", 14);
  mixed.Input(Tensor(DType::kFloat32, {2})).Input(Tensor(DType::kInt32, {2}));
  EXPECT_FALSE(mixed.Infer().ok());
}

TEST(ElementwiseOps, LegacyBroadcastAlignsAtAxis) {
  // Opset 6: B [3] broadcast into A [2,3,2] at axis 1, which numpy rules would refuse.
  ElemNode add("Add", 6);
  add.Input(Tensor::FromVector<float>({0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}, {2, 3, 2}))
      .Input(Tensor::FromVector<float>({10, 20, 30}, {3}))
      .Attr("broadcast", int64_t{1})
      .Attr("axis", int64_t{1});
  ASSERT_TRUE(add.Infer().ok());
  EXPECT_EQ(add.OutType(), "float32[2,3,2]");
  auto y = add.Run();
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(ref::Values<float>(*y),
            (std::vector<float>{10, 10, 20, 20, 30, 30, 11, 11, 21, 21, 31, 31}));
}

TEST(ElementwiseOps, PReluBeforeOpset7UsesChannelSlope) {
  ElemNode prelu("PRelu", 6);
  prelu.Input(Tensor::FromVector<float>({-1, -1, -1, -1}, {1, 2, 2}))
      .Input(Tensor::FromVector<float>({0.5f, 2.0f}, {2}));
  ASSERT_TRUE(prelu.Infer().ok());
  auto y = prelu.Run();
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(ref::Values<float>(*y), (std::vector<float>{-0.5f, -0.5f, -2, -2}));
}

TEST(ElementwiseOps, AttributeAndRuntimeErrorsNameTheNode) {
  ElemNode div("Div", 14);
  div.Input(Tensor::FromVector<int32_t>({1}, {1})).Input(Tensor::FromVector<int32_t>({0}, {1}));
  auto y = div.Run();
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("node 'n' (Div"), std::string::npos);
  ElemNode gelu("Gelu", 20);
  gelu.Input(Tensor(DType::kFloat32, {1})).Attr("approximate", std::string("fast"));
  EXPECT_FALSE(gelu.Infer().ok());
  ElemNode mod("Mod", 13);
  mod.Input(Tensor(DType::kInt32, {1})).Input(Tensor(DType::kInt32, {1})).Attr("fmod", int64_t{2});
  EXPECT_FALSE(mod.Infer().ok());
  ElemNode clip("Clip", 13);
  clip.Input(Tensor(DType::kFloat32, {1})).Input(Tensor(DType::kFloat64, {}));
  EXPECT_FALSE(clip.Infer().ok());
  ElemNode shift("BitShift", 11);
  shift.Input(Tensor(DType::kUInt8, {1}))
      .Input(Tensor(DType::kUInt8, {1}))
      .Attr("direction", std::string("UP"));
  EXPECT_FALSE(shift.Infer().ok());
}

}  // namespace
}  // namespace kiln::ops
