// Op definitions of the string, training, linear-algebra and random families: hand-computed
// small cases and the error paths, driven through the op table as the interpreter does.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "kernels/ref/random.h"
#include "ops/op_registry.h"

namespace kiln::ops {
namespace {

class OneNode {
 public:
  OneNode(const std::string& op, int opset, size_t num_outputs = 1,
          const std::string& domain = "") {
    node_.op_type = op;
    node_.domain = domain;
    node_.name = "n";
    node_.opset = opset;
    for (size_t i = 0; i < num_outputs; ++i) node_.outputs.push_back(NewValue("out"));
  }
  OneNode& Input(const Tensor& t) {
    ir::Value* v = NewValue("in");
    v->type = ir::ValueType::Of(t.dtype(), t.dims());
    node_.inputs.push_back(v);
    tensors_.push_back(t);
    return *this;
  }
  OneNode& Attr(const std::string& name, int64_t i) {
    return Set(name, ir::Attribute::Kind::kInt, [&](ir::Attribute& a) { a.i = i; });
  }
  OneNode& Attr(const std::string& name, float f) {
    return Set(name, ir::Attribute::Kind::kFloat, [&](ir::Attribute& a) { a.f = f; });
  }
  OneNode& Attr(const std::string& name, const char* s) {
    return Set(name, ir::Attribute::Kind::kString, [&](ir::Attribute& a) { a.s = s; });
  }
  OneNode& Attr(const std::string& name, std::vector<int64_t> v) {
    return Set(name, ir::Attribute::Kind::kInts, [&](ir::Attribute& a) { a.ints = v; });
  }
  OneNode& Attr(const std::string& name, std::vector<float> v) {
    return Set(name, ir::Attribute::Kind::kFloats, [&](ir::Attribute& a) { a.floats = v; });
  }
  OneNode& Attr(const std::string& name, std::vector<std::string> v) {
    return Set(name, ir::Attribute::Kind::kStrings, [&](ir::Attribute& a) { a.strings = v; });
  }

  Status Infer() { return Def()->infer(node_); }
  std::string OutType(size_t i = 0) const { return node_.outputs[i]->type.ToString(); }
  Expected<std::vector<Tensor>> Run() {
    RunContext ctx{node_, {}, {}, {}};
    for (const Tensor& t : tensors_) ctx.inputs.push_back(&t);
    ctx.outputs.resize(node_.outputs.size());
    KILN_RETURN_IF_ERROR(Def()->run(ctx));
    return ctx.outputs;
  }

 private:
  template <class F>
  OneNode& Set(const std::string& name, ir::Attribute::Kind kind, F fill) {
    ir::Attribute a;
    a.kind = kind;
    fill(a);
    node_.attrs[name] = a;
    return *this;
  }
  const OpDef* Def() const {
    const OpDef* def = FindOp(node_.domain, node_.op_type);
    EXPECT_NE(def, nullptr) << node_.op_type;
    return def;
  }
  ir::Value* NewValue(const std::string& prefix) {
    values_.push_back(std::make_unique<ir::Value>());
    values_.back()->name = prefix + std::to_string(values_.size());
    return values_.back().get();
  }
  ir::Node node_;
  std::vector<std::unique_ptr<ir::Value>> values_;
  std::vector<Tensor> tensors_;
};

Tensor Strings(std::vector<std::string> v, std::vector<int64_t> dims) {
  Tensor t(DType::kString, std::move(dims));
  t.strings() = std::move(v);
  return t;
}
Tensor Floats(std::vector<float> v, std::vector<int64_t> dims) {
  return Tensor::FromVector(v, std::move(dims));
}

void ExpectNear(const Tensor& t, std::vector<float> want, float tol = 1e-5f) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size())) << DescribeTensor(t);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.AsDouble(i), want[i], tol) << i;
}

// ---- StringNormalizer ------------------------------------------------------------------------

TEST(StringNormalizer, CaseInsensitiveStopwordsThenUpper) {
  OneNode n("StringNormalizer", 10);
  n.Input(Strings({"Monday", "tuesday", "MONDAY", "wed"}, {1, 4}))
      .Attr("case_change_action", "UPPER")
      .Attr("stopwords", std::vector<std::string>{"monday"});
  ASSERT_TRUE(n.Infer().ok());
  EXPECT_EQ(n.OutType(), "string[1,?]");
  auto out = n.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ((*out)[0].strings(), (std::vector<std::string>{"TUESDAY", "WED"}));
}

TEST(StringNormalizer, CaseSensitiveKeepsOtherCasesAndEmptyBecomesOneString) {
  OneNode keep("StringNormalizer", 10);
  keep.Input(Strings({"Monday", "monday"}, {2}))
      .Attr("is_case_sensitive", int64_t{1})
      .Attr("case_change_action", "LOWER")
      .Attr("stopwords", std::vector<std::string>{"monday"});
  auto out = keep.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].strings(), (std::vector<std::string>{"monday"}));

  OneNode empty("StringNormalizer", 10);
  empty.Input(Strings({"a", "A"}, {2})).Attr("stopwords", std::vector<std::string>{"a"});
  out = empty.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{1}));
  EXPECT_EQ((*out)[0].strings(), (std::vector<std::string>{""}));
}

TEST(StringNormalizer, Errors) {
  OneNode locale("StringNormalizer", 10);
  locale.Input(Strings({"a"}, {1})).Attr("locale", "tr_TR");
  Status st = locale.Infer();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("unsupported locale"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("'n'"), std::string::npos) << st.message();

  OneNode en("StringNormalizer", 10);
  en.Input(Strings({"a"}, {1})).Attr("locale", "en_US.UTF-8");
  EXPECT_TRUE(en.Infer().ok());

  OneNode action("StringNormalizer", 10);
  action.Input(Strings({"a"}, {1})).Attr("case_change_action", "TITLE");
  EXPECT_FALSE(action.Run().ok());

  OneNode rows("StringNormalizer", 10);
  rows.Input(Strings({"a", "b"}, {2, 1}));
  EXPECT_FALSE(rows.Infer().ok());
  EXPECT_FALSE(rows.Run().ok());

  OneNode numbers("StringNormalizer", 10);
  numbers.Input(Floats({1}, {1}));
  EXPECT_FALSE(numbers.Infer().ok());
  EXPECT_FALSE(numbers.Run().ok());
}

// ---- TfIdfVectorizer -------------------------------------------------------------------------

// Pool: unigrams {2, 3, 5, 4} then bigrams {(5, 6), (7, 8), (6, 7)}, columns 0..6.
OneNode& IntPool(OneNode& n, int64_t min_gram, int64_t max_gram, int64_t skip) {
  return n.Attr("mode", "TF")
      .Attr("min_gram_length", min_gram)
      .Attr("max_gram_length", max_gram)
      .Attr("max_skip_count", skip)
      .Attr("ngram_counts", std::vector<int64_t>{0, 4})
      .Attr("ngram_indexes", std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6})
      .Attr("pool_int64s", std::vector<int64_t>{2, 3, 5, 4, 5, 6, 7, 8, 6, 7});
}

TEST(TfIdfVectorizer, UnigramsAndBigramsWithSkips) {
  // Items: 1 1 3 3 3 7 8 6 7 5 6 8.
  const Tensor x = Tensor::FromVector<int32_t>({1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8}, {12});
  OneNode adjacent("TfIdfVectorizer", 9);
  IntPool(adjacent.Input(x), 1, 2, 0);
  ASSERT_TRUE(adjacent.Infer().ok());
  EXPECT_EQ(adjacent.OutType(), "float32[7]");
  auto out = adjacent.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  // 3 three times, 5 once; bigrams (7,8) at 5, (6,7) at 7, (5,6) at 9.
  ExpectNear((*out)[0], {0, 3, 1, 0, 1, 1, 1});

  // Bigrams only, items up to 6 apart: (5,6) 9-10; (7,8) 5-6, 5-11, 8-11; (6,7) 7-8.
  OneNode skipping("TfIdfVectorizer", 9);
  IntPool(skipping.Input(x), 2, 2, 5);
  out = skipping.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  ExpectNear((*out)[0], {0, 0, 0, 0, 1, 3, 1});
}

TEST(TfIdfVectorizer, StringPoolWeightedModes) {
  const Tensor x = Strings({"a", "c", "a", "b", "a", "x"}, {2, 3});
  for (auto [mode, want] : {std::pair<const char*, std::vector<float>>{"TF", {2, 0, 1, 1}},
                            {"IDF", {2, 0, 2, 5}},
                            {"TFIDF", {4, 0, 2, 5}}}) {
    OneNode n("TfIdfVectorizer", 9);
    n.Input(x)
        .Attr("mode", mode)
        .Attr("min_gram_length", int64_t{1})
        .Attr("max_gram_length", int64_t{1})
        .Attr("ngram_counts", std::vector<int64_t>{0})
        .Attr("ngram_indexes", std::vector<int64_t>{0, 1})
        .Attr("pool_strings", std::vector<std::string>{"a", "b"});
    if (std::string(mode) != "TF") n.Attr("weights", std::vector<float>{2, 5});
    ASSERT_TRUE(n.Infer().ok());
    EXPECT_EQ(n.OutType(), "float32[2,2]");
    auto out = n.Run();
    ASSERT_TRUE(out.ok()) << out.status().message();
    ExpectNear((*out)[0], want);
  }
}

TEST(TfIdfVectorizer, Errors) {
  const Tensor x = Tensor::FromVector<int64_t>({1, 2}, {2});
  OneNode indexes("TfIdfVectorizer", 9);
  IntPool(indexes.Input(x), 1, 2, 0).Attr("ngram_indexes", std::vector<int64_t>{0, 1});
  EXPECT_FALSE(indexes.Infer().ok());
  EXPECT_FALSE(indexes.Run().ok());

  OneNode counts("TfIdfVectorizer", 9);
  IntPool(counts.Input(x), 1, 2, 0).Attr("ngram_counts", std::vector<int64_t>{0, 5});
  EXPECT_FALSE(counts.Run().ok());

  OneNode lengths("TfIdfVectorizer", 9);
  IntPool(lengths.Input(x), 3, 2, 0);
  EXPECT_FALSE(lengths.Run().ok());

  OneNode kind("TfIdfVectorizer", 9);
  IntPool(kind.Input(Strings({"a"}, {1})), 1, 2, 0);
  EXPECT_FALSE(kind.Infer().ok());
  EXPECT_FALSE(kind.Run().ok());

  OneNode mode("TfIdfVectorizer", 9);
  IntPool(mode.Input(x), 1, 2, 0).Attr("mode", "BM25");
  EXPECT_FALSE(mode.Run().ok());
}

// ---- Det -------------------------------------------------------------------------------------

TEST(Det, BatchedWithPivotingAndSingular) {
  OneNode n("Det", 11);
  // [[1,2],[3,4]] = -2; [[0,1],[1,0]] needs a row swap = -1; [[1,2],[2,4]] is singular.
  n.Input(Floats({1, 2, 3, 4, 0, 1, 1, 0, 1, 2, 2, 4}, {3, 2, 2}));
  ASSERT_TRUE(n.Infer().ok());
  EXPECT_EQ(n.OutType(), "float32[3]");
  auto out = n.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  ExpectNear((*out)[0], {-2, -1, 0});

  OneNode three("Det", 11);
  three.Input(Tensor::FromVector<double>({0, 1, 2, 1, 0, 3, 4, -3, 8}, {3, 3}));
  out = three.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].dtype(), DType::kFloat64);
  EXPECT_EQ((*out)[0].rank(), 0);
  EXPECT_NEAR((*out)[0].AsDouble(0), -2.0, 1e-12);
}

TEST(Det, Errors) {
  OneNode square("Det", 11);
  square.Input(Floats({1, 2, 3, 4, 5, 6}, {2, 3}));
  EXPECT_FALSE(square.Infer().ok());
  EXPECT_FALSE(square.Run().ok());
  OneNode vec("Det", 11);
  vec.Input(Floats({1, 2}, {2}));
  EXPECT_FALSE(vec.Infer().ok());
  EXPECT_FALSE(vec.Run().ok());
  OneNode ints("Det", 11);
  ints.Input(Tensor::FromVector<int64_t>({1, 2, 3, 4}, {2, 2}));
  EXPECT_FALSE(ints.Infer().ok());
  EXPECT_FALSE(ints.Run().ok());
}

// ---- Adagrad, Momentum, Adam -----------------------------------------------------------------

constexpr char kTraining[] = "ai.onnx.preview.training";

OneNode& Step(OneNode& n, float rate, int64_t t) {
  return n.Input(Tensor::Scalar<float>(rate)).Input(Tensor::Scalar<int64_t>(t));
}

TEST(Training, AdagradTwoTensors) {
  OneNode n("Adagrad", 1, 4, kTraining);
  Step(n, 0.1f, 0)
      .Input(Floats({1}, {1}))
      .Input(Floats({1, 2}, {2}))
      .Input(Floats({-1}, {1}))
      .Input(Floats({-1, -3}, {2}))
      .Input(Floats({2}, {1}))
      .Input(Floats({4, 1}, {2}))
      .Attr("decay_factor", 0.1f)
      .Attr("epsilon", 1e-5f)
      .Attr("norm_coefficient", 0.001f);
  ASSERT_TRUE(n.Infer().ok());
  EXPECT_EQ(n.OutType(1), "float32[2]");
  EXPECT_EQ(n.OutType(2), "float32[1]");
  auto out = n.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  // g' = 0.001 * 1 - 1 = -0.999; h = 2 + 0.998001; x = 1 + 0.1 * 0.999 / (sqrt(h) + 1e-5).
  ExpectNear((*out)[2], {2.998001f});
  ExpectNear((*out)[0], {1.0576962f});
  ExpectNear((*out)[3], {4.998001f, 9.988004f});
}

TEST(Training, MomentumStandardAndNesterov) {
  for (const char* mode : {"standard", "nesterov"}) {
    OneNode n("Momentum", 1, 2, kTraining);
    Step(n, 0.1f, 0)
        .Input(Floats({1.2f}, {1}))
        .Input(Floats({-0.94f}, {1}))
        .Input(Floats({1.7f}, {1}))
        .Attr("alpha", 0.95f)
        .Attr("beta", 0.1f)
        .Attr("norm_coefficient", 0.01f)
        .Attr("mode", mode);
    auto out = n.Run();
    ASSERT_TRUE(out.ok()) << out.status().message();
    // Step 0 takes the whole gradient: v = 0.95 * 1.7 + (0.012 - 0.94) = 0.687.
    ExpectNear((*out)[1], {0.687f});
    const bool nesterov = std::string(mode) == "nesterov";
    ExpectNear((*out)[0], {nesterov ? 1.227535f : 1.2f - 0.0687f});
  }
}

TEST(Training, AdamStepZeroAndLater) {
  auto make = [](int64_t t) {
    auto n = std::make_unique<OneNode>("Adam", 1, 3, kTraining);
    Step(*n, 0.1f, t)
        .Input(Floats({1.2f}, {1}))
        .Input(Floats({-0.94f}, {1}))
        .Input(Floats({1.7f}, {1}))
        .Input(Floats({0.1f}, {1}))
        .Attr("alpha", 0.95f)
        .Attr("beta", 0.1f)
        .Attr("epsilon", 1e-7f)
        .Attr("norm_coefficient", 0.001f);
    return n;
  };
  auto out = make(0)->Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  ExpectNear((*out)[0], {1.0250363f});
  ExpectNear((*out)[1], {1.56806f});
  ExpectNear((*out)[2], {0.8032108f});
  // At step 1 the rate is scaled by sqrt(1 - 0.1) / (1 - 0.95).
  out = make(1)->Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  const double r = 0.1 * std::sqrt(0.9) / 0.05;
  ExpectNear((*out)[0], {static_cast<float>(1.2 - r * 1.56806 / std::sqrt(0.8032108))}, 1e-4f);
}

TEST(Training, Errors) {
  OneNode count("Adagrad", 1, 2, kTraining);
  Step(count, 0.1f, 0).Input(Floats({1}, {1})).Input(Floats({1}, {1}));
  EXPECT_FALSE(count.Infer().ok());
  EXPECT_FALSE(count.Run().ok());

  OneNode shapes("Adagrad", 1, 2, kTraining);
  Step(shapes, 0.1f, 0).Input(Floats({1}, {1})).Input(Floats({1, 2}, {2})).Input(Floats({1}, {1}));
  EXPECT_FALSE(shapes.Run().ok());

  OneNode mode("Momentum", 1, 2, kTraining);
  Step(mode, 0.1f, 0)
      .Input(Floats({1}, {1}))
      .Input(Floats({1}, {1}))
      .Input(Floats({1}, {1}))
      .Attr("alpha", 0.9f)
      .Attr("beta", 0.1f)
      .Attr("norm_coefficient", 0.0f)
      .Attr("mode", "heavy");
  EXPECT_FALSE(mode.Run().ok());

  OneNode missing("Momentum", 1, 2, kTraining);
  Step(missing, 0.1f, 0).Input(Floats({1}, {1})).Input(Floats({1}, {1})).Input(Floats({1}, {1}));
  EXPECT_FALSE(missing.Run().ok());

  OneNode rate("Adagrad", 1, 2, kTraining);
  rate.Input(Floats({0.1f, 0.2f}, {2}))
      .Input(Tensor::Scalar<int64_t>(0))
      .Input(Floats({1}, {1}))
      .Input(Floats({1}, {1}))
      .Input(Floats({1}, {1}));
  EXPECT_FALSE(rate.Run().ok());
}

// ---- Random ----------------------------------------------------------------------------------

TEST(Random, NumpyLegacyStreams) {
  ref::NumpyRandom u(0);
  EXPECT_NEAR(u.NextDouble(), 0.5488135039273248, 1e-15);
  EXPECT_NEAR(u.NextDouble(), 0.7151893663724195, 1e-15);
  ref::NumpyRandom g(0);
  EXPECT_NEAR(g.Gauss(), 1.764052345967664, 1e-12);
  EXPECT_NEAR(g.Gauss(), 0.4001572083672233, 1e-12);
  EXPECT_NEAR(g.Gauss(), 0.9787379841057392, 1e-12);
  // numpy: RandomState(5).binomial(1, p) -> 0 1 0 0 1 0 0 1; p == 0 draws too.
  ref::NumpyRandom b(5);
  const Tensor p = Tensor::FromVector<double>({0.5, 0.9, 0.1, 0.0, 1.0, 0.3, 0.7, 0.5}, {8});
  Tensor y;
  ASSERT_TRUE(ref::Bernoulli(b, p, DType::kInt64, &y).ok());
  EXPECT_EQ(std::vector<int64_t>(y.data<int64_t>(), y.data<int64_t>() + 8),
            (std::vector<int64_t>{0, 1, 0, 0, 1, 0, 0, 1}));
  EXPECT_NEAR(b.NextDouble(), 0.29680050157622195, 1e-15);
  EXPECT_FALSE(ref::Bernoulli(b, Floats({1.5f}, {1}), DType::kFloat32, &y).ok());
}

TEST(Random, SeededOps) {
  OneNode n("RandomNormal", 1);
  n.Attr("shape", std::vector<int64_t>{2, 2})
      .Attr("mean", 2.0f)
      .Attr("scale", 0.5f)
      .Attr("seed", 3.0f)
      .Attr("dtype", int64_t{11});
  ASSERT_TRUE(n.Infer().ok());
  EXPECT_EQ(n.OutType(), "float64[2,2]");
  auto out = n.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  ExpectNear((*out)[0], {2.89431424f, 2.21825493f, 2.04824873f, 1.06825365f});

  OneNode uni("RandomUniform", 1);
  uni.Attr("shape", std::vector<int64_t>{3}).Attr("seed", 0.0f).Attr("low", 1.0f).Attr("high", 3.0f);
  out = uni.Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  ExpectNear((*out)[0], {2.0976270f, 2.4303787f, 2.2055268f});  // 1 + 2 * numpy's draws

  OneNode no_shape("RandomUniform", 1);
  EXPECT_FALSE(no_shape.Infer().ok());
  OneNode bad_seed("RandomUniform", 1);
  bad_seed.Attr("shape", std::vector<int64_t>{1}).Attr("seed", -1.0f);
  EXPECT_FALSE(bad_seed.Run().ok());
  OneNode huge("RandomUniform", 1);
  huge.Attr("shape", std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 40});
  EXPECT_FALSE(huge.Infer().ok());
  EXPECT_FALSE(huge.Run().ok());
}

}  // namespace
}  // namespace kiln::ops
