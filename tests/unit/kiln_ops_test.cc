// The kiln op family (src/ops/kiln_ops.cc): each fused op, run by the reference interpreter,
// equals the ONNX ops it stands for on seeded random data; bad attributes are clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ops/op_registry.h"

namespace kiln {
namespace {

std::unique_ptr<ir::Graph> Parse(const std::string& text) {
  auto g = ir::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << text;
  return g.ok() ? std::move(g).value() : nullptr;
}

// Floats in [-4, 4] so the activations' bends (Clip bounds, HardSwish's +-3) are all crossed.
interp::NamedTensors RandomInputs(const ir::Graph& g, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> real(-4.f, 4.f);
  interp::NamedTensors inputs;
  for (const ir::Value* v : g.inputs) {
    Tensor t(DType::kFloat32, v->type.static_dims());
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = real(rng);
    inputs[v->name] = t;
  }
  return inputs;
}

// Runs both graphs (same inputs by name) and compares every output element.
void ExpectSameOutputs(const std::string& fused_text, const std::string& unfused_text,
                       double tol = 1e-6) {
  auto fused = Parse(fused_text);
  auto unfused = Parse(unfused_text);
  ASSERT_TRUE(fused && unfused);
  for (uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(StrCat("seed ", seed, "\n", fused_text));
    const interp::NamedTensors inputs = RandomInputs(*unfused, seed);
    std::vector<Tensor> want, got;
    Status st = interp::Run(*unfused, inputs, &want);
    ASSERT_TRUE(st.ok()) << "unfused: " << st.message();
    st = interp::Run(*fused, inputs, &got);
    ASSERT_TRUE(st.ok()) << "fused: " << st.message();
    ASSERT_EQ(want.size(), got.size());
    for (size_t k = 0; k < want.size(); ++k) {
      ASSERT_EQ(want[k].dims(), got[k].dims());
      for (int64_t i = 0; i < want[k].numel(); ++i) {
        const double a = want[k].AsDouble(i), b = got[k].AsDouble(i);
        ASSERT_LE(std::fabs(a - b), tol * std::max(1.0, std::fabs(a)))
            << "output " << k << " element " << i << ": " << a << " vs " << b;
      }
    }
  }
}

// The error a graph gives when run, or "" when it runs.
std::string RunError(const std::string& text) {
  auto g = Parse(text);
  if (!g) return "parse error";
  const interp::NamedTensors inputs = RandomInputs(*g, 1);
  std::vector<Tensor> out;
  Status st = interp::Run(*g, inputs, &out);
  return st.ok() ? "" : st.message();
}

// Shape inference's error on the first node of the graph, or "".
std::string InferError(const std::string& text) {
  auto g = Parse(text);
  if (!g || g->nodes().empty()) return "parse error";
  ir::Node& n = *g->mutable_nodes()[0];
  const ops::OpDef* def = ops::FindOp(n.domain, n.op_type);
  if (def == nullptr) return "no op";
  Status st = def->infer(n);
  return st.ok() ? "" : st.message();
}

const char* kConvHeader = R"(graph main (opsets ai.onnx=20 kiln=1)
  input  %x: float32[1,3,6,5]
  const  %w: float32[4,3,3,3] = random(seed=7)
  const  %b: float32[4] = [0.5,-1,0.25,2]
)";

// Conv with strides, pads, dilations and a bias, then each activation, against FusedConv.
TEST(KilnOps, FusedConvEqualsConvThenActivation) {
  const std::string conv_attrs =
      "dilations=[1,2], kernel_shape=[3,3], pads=[1,2,1,0], strides=[2,1]";
  struct Case {
    std::string activation, params, unfused;
  } cases[] = {
      {"Relu", "", "%y = Relu(%c) : float32[1,4,3,3]"},
      {"Clip", ", activation_params=[-0.5,1.5]", "%y = Clip(%c, %lo, %hi) : float32[1,4,3,3]"},
      {"Silu", "", "%s = Sigmoid(%c) : float32[1,4,3,3]\n  %y = Mul(%c, %s) : float32[1,4,3,3]"},
      {"HardSwish", "", "%y = HardSwish(%c) : float32[1,4,3,3]"},
      {"Gelu", "", "%y = Gelu(%c) : float32[1,4,3,3]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.activation);
    const std::string fused = StrCat(kConvHeader, "  %y = FusedConv@kiln(%x, %w, %b) {", conv_attrs,
                                     ", activation=\"", c.activation, "\"", c.params,
                                     "} : float32[1,4,3,3]\n  output %y: float32[1,4,3,3]\n");
    const std::string unfused =
        StrCat(kConvHeader, "  const  %lo: float32[] = [-0.5]\n  const  %hi: float32[] = [1.5]\n",
               "  %c = Conv(%x, %w, %b) {", conv_attrs, "} : float32[1,4,3,3]\n  ", c.unfused,
               "\n  output %y: float32[1,4,3,3]\n");
    ExpectSameOutputs(fused, unfused);
  }
}

TEST(KilnOps, FusedConvGroupedWithoutBias) {
  ExpectSameOutputs(R"(graph main (opsets ai.onnx=13 kiln=1)
  input  %x: float32[2,4,5,5]
  const  %w: float32[4,2,1,1] = [1,-2,0.5,3,-1,1,2,-0.25]
  %y = FusedConv@kiln(%x, %w) {activation="Relu", group=2} : float32[2,4,5,5]
  output %y: float32[2,4,5,5]
)",
                    R"(graph main (opsets ai.onnx=13)
  input  %x: float32[2,4,5,5]
  const  %w: float32[4,2,1,1] = [1,-2,0.5,3,-1,1,2,-0.25]
  %c = Conv(%x, %w) {group=2} : float32[2,4,5,5]
  %y = Relu(%c) : float32[2,4,5,5]
  output %y: float32[2,4,5,5]
)");
}

TEST(KilnOps, FusedGemmEqualsGemmThenActivation) {
  const char* header = R"(graph main (opsets ai.onnx=20 kiln=1)
  input  %a: float32[5,3]
  input  %b: float32[4,5]
  const  %c: float32[4] = [0.5,-1,0.25,2]
  const  %lo: float32[] = [0]
  const  %hi: float32[] = [6]
)";
  const std::string attrs = "alpha=0.5, beta=2.0, transA=1, transB=1";
  for (const char* act : {"Relu", "Clip", "Silu", "HardSwish", "Gelu"}) {
    SCOPED_TRACE(act);
    const std::string name = act;
    const std::string params = name == "Clip" ? ", activation_params=[0.0,6.0]" : "";
    std::string tail = StrCat("%y = ", act, "(%g) : float32[3,4]");
    if (name == "Clip") tail = "%y = Clip(%g, %lo, %hi) : float32[3,4]";
    if (name == "Silu") tail = "%s = Sigmoid(%g) : float32[3,4]\n  %y = Mul(%s, %g) : float32[3,4]";
    ExpectSameOutputs(
        StrCat(header, "  %y = FusedGemm@kiln(%a, %b, %c) {activation=\"", act, "\"", params, ", ",
               attrs, "} : float32[3,4]\n", "  output %y: float32[3,4]\n"),
        StrCat(header, "  %g = Gemm(%a, %b, %c) {", attrs, "} : float32[3,4]\n  ", tail,
               "\n  output %y: float32[3,4]\n"));
  }
}

TEST(KilnOps, ActivationsEqualTheirDefinitions) {
  const char* header = R"(graph main (opsets ai.onnx=20 kiln=1)
  input  %x: float32[3,7]
)";
  const std::string out = "  output %y: float32[3,7]\n";
  ExpectSameOutputs(StrCat(header, "  %y = Silu@kiln(%x) : float32[3,7]\n", out),
                    StrCat(header, "  %s = Sigmoid(%x) : float32[3,7]\n",
                           "  %y = Mul(%x, %s) : float32[3,7]\n", out));
  ExpectSameOutputs(StrCat(header, "  %y = HardSwish@kiln(%x) : float32[3,7]\n", out),
                    StrCat(header, "  %h = HardSigmoid(%x) {alpha=0.16666667, beta=0.5} : ",
                           "float32[3,7]\n  %y = Mul(%x, %h) : float32[3,7]\n", out));
  // Gelu: default (erf), explicit "none", and "tanh", against ONNX Gelu-20 and against the erf
  // formula as torch exports it.
  for (const char* approx : {"", " {approximate=\"none\"}", " {approximate=\"tanh\"}"}) {
    SCOPED_TRACE(approx);
    ExpectSameOutputs(StrCat(header, "  %y = Gelu@kiln(%x)", approx, " : float32[3,7]\n", out),
                      StrCat(header, "  %y = Gelu(%x)", approx, " : float32[3,7]\n", out));
  }
  ExpectSameOutputs(StrCat(header, "  %y = Gelu@kiln(%x) : float32[3,7]\n", out),
                    StrCat(header, R"(  const  %r2: float32[] = [1.4142135]
  const  %one: float32[] = [1]
  const  %half: float32[] = [0.5]
  %d = Div(%x, %r2) : float32[3,7]
  %e = Erf(%d) : float32[3,7]
  %a = Add(%e, %one) : float32[3,7]
  %m = Mul(%x, %a) : float32[3,7]
  %y = Mul(%m, %half) : float32[3,7]
)",
                           out),
                    1e-6);
}

// Every step name once, in one FusedElementwise, against the ONNX ops one by one.
TEST(KilnOps, FusedElementwiseEqualsTheChainForEveryStep) {
  ExpectSameOutputs(R"(graph main (opsets ai.onnx=20 kiln=1)
  input  %x: float32[4,9]
  %y = FusedElementwise@kiln(%x) {ops=["MulScalar","AddScalar","LeakyRelu","Clip","HardSigmoid","Relu","Sigmoid","Tanh","Exp","Neg","Abs","Sqrt","Erf","Silu","HardSwish","Gelu","MulScalar","Neg","Sqrt"], params=[1.5,-0.25,0.1,-2.0,3.5,0.3,0.4,-3.0]} : float32[4,9]
  output %y: float32[4,9]
)",
                    R"(graph main (opsets ai.onnx=20)
  input  %x: float32[4,9]
  const  %c15: float32[] = [1.5]
  const  %cm025: float32[] = [-0.25]
  const  %lo: float32[] = [-2]
  const  %hi: float32[] = [3.5]
  const  %cm3: float32[] = [-3]
  %a1 = Mul(%x, %c15) : float32[4,9]
  %a2 = Add(%a1, %cm025) : float32[4,9]
  %a3 = LeakyRelu(%a2) {alpha=0.1} : float32[4,9]
  %a4 = Clip(%a3, %lo, %hi) : float32[4,9]
  %a5 = HardSigmoid(%a4) {alpha=0.3, beta=0.4} : float32[4,9]
  %a6 = Relu(%a5) : float32[4,9]
  %a7 = Sigmoid(%a6) : float32[4,9]
  %a8 = Tanh(%a7) : float32[4,9]
  %a9 = Exp(%a8) : float32[4,9]
  %a10 = Neg(%a9) : float32[4,9]
  %a11 = Abs(%a10) : float32[4,9]
  %a12 = Sqrt(%a11) : float32[4,9]
  %a13 = Erf(%a12) : float32[4,9]
  %s14 = Sigmoid(%a13) : float32[4,9]
  %a14 = Mul(%a13, %s14) : float32[4,9]
  %a15 = HardSwish(%a14) : float32[4,9]
  %a16 = Gelu(%a15) : float32[4,9]
  %a17 = Mul(%a16, %cm3) : float32[4,9]
  %a18 = Neg(%a17) : float32[4,9]
  %y = Sqrt(%a18) : float32[4,9]
  output %y: float32[4,9]
)");
  // Values that cross zero go through Sqrt/Exp without the chain above's squashing.
  ExpectSameOutputs(R"(graph main (opsets ai.onnx=20 kiln=1)
  input  %x: float32[2,3,5]
  %y = FusedElementwise@kiln(%x) {ops=["Exp","Sqrt"]} : float32[2,3,5]
  output %y: float32[2,3,5]
)",
                    R"(graph main (opsets ai.onnx=20)
  input  %x: float32[2,3,5]
  %e = Exp(%x) : float32[2,3,5]
  %y = Sqrt(%e) : float32[2,3,5]
  output %y: float32[2,3,5]
)");
}

TEST(KilnOps, InfersTheShapesOfTheBaseOps) {
  auto g = Parse(
      StrCat(kConvHeader,
             R"(  %y = FusedConv@kiln(%x, %w, %b) {activation="Relu", pads=[1,1,1,1]} : float32[*]
  output %y: float32[*]
)"));
  ASSERT_TRUE(g);
  ir::Node& n = *g->mutable_nodes()[0];
  ASSERT_TRUE(ops::FindOp("kiln", "FusedConv")->infer(n).ok());
  EXPECT_EQ(n.outputs[0]->type.ToString(), "float32[1,4,6,5]");
}

TEST(KilnOps, BadAttributesAreClearErrors) {
  const std::string conv = StrCat(kConvHeader, "  %y = FusedConv@kiln(%x, %w, %b) {");
  const std::string end = "} : float32[1,4,4,3]\n  output %y: float32[1,4,4,3]\n";
  struct Case {
    std::string attrs, error;
  } cases[] = {
      {"activation=\"Tanh\"", "unknown activation \"Tanh\" (expected one of Relu, Clip, Silu"},
      {"kernel_shape=[3,3]", "attribute 'activation' is required"},
      {"activation=\"Clip\"", "activation Clip takes 2 activation_params ([min, max]), got 0"},
      {"activation=\"Clip\", activation_params=[1.0]", "takes 2 activation_params"},
      {"activation=\"Relu\", activation_params=[1.0]", "activation Relu takes 0"},
      {"activation=3", "activation"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.attrs);
    const std::string text = StrCat(conv, c.attrs, end);
    EXPECT_NE(RunError(text).find(c.error), std::string::npos) << RunError(text);
    EXPECT_NE(InferError(text).find(c.error), std::string::npos) << InferError(text);
    EXPECT_NE(RunError(text).find("FusedConv@kiln"), std::string::npos) << "names the node";
  }

  const std::string chain = R"(graph main (opsets ai.onnx=20 kiln=1)
  input  %x: float32[2,3]
  %y = FusedElementwise@kiln(%x) {)";
  const std::string chain_end = "} : float32[2,3]\n  output %y: float32[2,3]\n";
  const Case chain_cases[] = {
      {"ops=[\"Relu\",\"Softplus\"]", "unknown op \"Softplus\" in 'ops' (expected one of Relu"},
      {"ops=[\"Clip\"], params=[0.0]", "'params' has 1 values, too few for 'ops' (Clip takes 2)"},
      {"ops=[\"Relu\",\"Tanh\"], params=[1.0]", "'params' has 1 values but 'ops' take 0"},
      {"params=[1.0]", "attribute 'ops' must list at least one op"},
  };
  for (const Case& c : chain_cases) {
    SCOPED_TRACE(c.attrs);
    const std::string text = StrCat(chain, c.attrs, chain_end);
    EXPECT_NE(RunError(text).find(c.error), std::string::npos) << RunError(text);
    EXPECT_NE(InferError(text).find(c.error), std::string::npos) << InferError(text);
  }

  // 1-D and 3-D convs and non-float inputs are refused, naming what is wrong.
  EXPECT_NE(InferError(R"(graph main (opsets kiln=1)
  input  %x: float32[1,3,6]
  const  %w: float32[4,3,3] = random(seed=1)
  %y = FusedConv@kiln(%x, %w) {activation="Relu"} : float32[*]
  output %y: float32[*]
)")
                .find("2-D only"),
            std::string::npos);
  EXPECT_NE(InferError(R"(graph main (opsets kiln=1)
  input  %x: int32[2,3]
  %y = Silu@kiln(%x) : int32[2,3]
  output %y: int32[2,3]
)")
                .find("takes float tensors"),
            std::string::npos);
  EXPECT_NE(InferError(R"(graph main (opsets kiln=1)
  input  %x: float32[2,3]
  %y = Gelu@kiln(%x) {approximate="fast"} : float32[2,3]
  output %y: float32[2,3]
)")
                .find("approximate must be"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
