// The native elementwise, pooling and tensor-movement steps (lower/native_{eltwise,pool,tensor}
// and runtime/kernels/{eltwise,pool,tensor}) against the reference interpreter, through the
// harness of native_test_util.h.
#include "ir/printer.h"
#include "native_test_util.h"
#include "passes/fuse_conv_activation.h"

namespace kiln {
namespace {

using namespace native_test;  // NOLINT: the harness is this file's vocabulary

TEST(NativeEltwise, UnaryOps) {
  const char* kOps[] = {
      "Relu(%x)",
      "Sigmoid(%x)",
      "Tanh(%x)",
      "Exp(%x)",
      "Neg(%x)",
      "Abs(%x)",
      "Erf(%x)",
      "LeakyRelu(%x) {alpha=0.2}",
      "LeakyRelu(%x)",
      "HardSigmoid(%x) {alpha=0.3, beta=0.4}",
      "HardSwish(%x)",
      "Gelu(%x)",
      "Gelu(%x) {approximate=\"tanh\"}",
      "Silu@kiln(%x)",
      "HardSwish@kiln(%x)",
      "Gelu@kiln(%x)",
      "Gelu@kiln(%x) {approximate=\"tanh\"}",
      "FusedElementwise@kiln(%x) "
      "{ops=[\"Relu\",\"Sigmoid\",\"Tanh\",\"Exp\",\"Neg\",\"Abs\",\"Sqrt\",\"Erf\"]}",
      "FusedElementwise@kiln(%x) "
      "{ops=[\"LeakyRelu\",\"HardSigmoid\",\"Clip\",\"MulScalar\",\"AddScalar\","
      "\"HardSwish\",\"Silu\",\"Gelu\"], params=[0.1,0.3,0.4,0.1,0.6,2.0,-0.25]}",
  };
  for (const char* op : kOps)
    for (const char* dims : {"[2,3,5,7]", "[1,16,64,40]", "[0,3]", "[]"}) Check(OneNode(op, dims));
  for (const char* op : {"Log(%x)", "Sqrt(%x)"}) Check(OneNode(op, "[3,33]"), -1, true);
}

TEST(NativeEltwise, Clip) {
  const std::string bounds =
      "  const  %lo: float32[] = [-0.5]\n  const  %hi: float32[1] = [1.25]\n";
  Check(OneNode("Clip(%x, %lo, %hi)", "[4,9]", bounds));
  Check(OneNode("Clip(%x, %lo)", "[4,9]", bounds));
  Check(OneNode("Clip(%x, _, %hi)", "[4,9]", bounds));
  Check(OneNode("Clip(%x)", "[4,9]"));
  Check(OneNode("Clip(%x) {min=-0.5, max=0.5}", "[4,9]", "", "ai.onnx=6"));
  // A bound that is not a constant stays with the reference.
  Check(
      "graph main (opsets ai.onnx=13)\n  input  %x: float32[4]\n  input  %lo: float32[]\n"
      "  %y = Clip(%x, %lo) : float32[*]  # n\n  output %y: float32[*]\n",
      0);
}

TEST(NativeEltwise, BinaryBroadcast) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> kShapes = {
      {{2, 3, 4, 5}, {2, 3, 4, 5}},     {{2, 3, 4, 5}, {}},           {{1}, {2, 3, 4, 5}},
      {{2, 8, 5, 5}, {8, 1, 1}},        {{1, 8, 1, 1}, {2, 8, 5, 5}}, {{2, 3, 4, 5}, {5}},
      {{3, 1, 5}, {1, 4, 1}},           {{2, 1, 4, 1}, {3, 1, 6}},    {{4, 1}, {1, 4}},
      {{2, 16, 48, 48}, {1, 16, 1, 1}}, {{2, 0, 3}, {1, 3}},          {{7}, {7}},
  };
  for (const char* op : {"Add", "Sub", "Mul", "Div"})
    for (const auto& [a, b] : kShapes) {
      // Both inputs, and b as a constant (a module value read from a blob).
      Check("graph main (opsets ai.onnx=13)\n  input  %a: float32" + Dims(a) +
            "\n  input  %b: float32" + Dims(b) + "\n  %y = " + op +
            "(%a, %b) : float32[*]  # n\n  output %y: float32[*]\n");
      Check("graph main (opsets ai.onnx=13)\n  input  %a: float32" + Dims(a) +
            "\n  const  %b: float32" + Dims(b) + " = random(seed=5)\n  %y = " + op +
            "(%b, %a) : float32[*]  # n\n  output %y: float32[*]\n");
    }
  // Integer arithmetic is not this family's: it stays with the reference.
  Check(
      "graph main (opsets ai.onnx=13)\n  input  %a: int64[3]\n  input  %b: int64[3]\n"
      "  %y = Add(%a, %b) : int64[*]  # n\n  output %y: int64[*]\n",
      0);
}

TEST(NativeEltwise, SoftmaxAndBatchNorm) {
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (int axis : {-1, 0, 1, 2}) {
      Check(OneNode(StrCat(op, "(%x) {axis=", axis, "}"), "[3,4,37]", "", "ai.onnx=13"));
      Check(OneNode(StrCat(op, "(%x) {axis=", axis, "}"), "[5,64,70]", "", "ai.onnx=13"));
    }
  // Opset 11 flattens around the axis: other semantics, left to the reference.
  Check(OneNode("Softmax(%x) {axis=1}", "[3,4,5]", "", "ai.onnx=11"), 0);
  const std::string stats =
      "  const  %s: float32[3] = [1,0.5,-2]\n  const  %b: float32[3] = [0,0.1,-0.2]\n"
      "  const  %m: float32[3] = [0.1,-0.1,0.2]\n  const  %v: float32[3] = [1,0.25,4]\n";
  Check(OneNode("BatchNormalization(%x, %s, %b, %m, %v) {epsilon=0.001}", "[2,3,5,4]", stats,
                "ai.onnx=15"));
  Check(OneNode("BatchNormalization(%x, %s, %b, %m, %v)", "[2,3]", stats, "ai.onnx=15"));
}

// BatchNormalization -> activation, fused by fuse_conv_activation into kiln.FusedBatchNorm and
// lowered to one batchnorm step, against the reference run of the graph before fusion.
TEST(NativeEltwise, FusedBatchNormMatchesUnfused) {
  const char* kActs[] = {"Relu(%n)", "Clip(%n, %lo, %hi)", "HardSwish(%n)", "Silu@kiln(%n)",
                         "Gelu(%n)"};
  for (const char* act : kActs)
    for (const char* dims : {"[2,3,5,4]", "[1,3,1,1]", "[3,3]", "[2,3,33,17]", "[1,3,0,2]"}) {
      const std::string text = StrCat(
          "graph main (opsets ai.onnx=20 kiln=1)\n  input  %x: float32", dims,
          "\n  const  %s: float32[3] = [1,0.5,-2]\n  const  %b: float32[3] = [0,0.1,-0.2]\n"
          "  const  %m: float32[3] = [0.1,-0.1,0.2]\n  const  %v: float32[3] = [1,0.25,4]\n"
          "  const  %lo: float32[] = [-0.5]\n  const  %hi: float32[] = [1.5]\n"
          "  %n = BatchNormalization(%x, %s, %b, %m, %v) {epsilon=0.001} : float32[*]  # bn\n"
          "  %y = ",
          act, " : float32[*]  # act\n  output %y: float32[*]\n");
      SCOPED_TRACE(text);
      auto unfused = ir::ParseGraph(text);
      ASSERT_TRUE(unfused.ok()) << unfused.status().message();
      ASSERT_TRUE(ops::InferShapes(**unfused).ok());
      auto fused = ir::ParseGraph(text);
      ASSERT_TRUE(fused.ok());
      ASSERT_TRUE(ops::InferShapes(**fused).ok());
      auto changed = passes::CreateFuseConvActivationPass()->Run(**fused);
      ASSERT_TRUE(changed.ok() && *changed) << "the pass did not fuse";
      auto l = Lower(ir::PrintGraph(**fused));
      ASSERT_NE(l, nullptr);
      ASSERT_EQ(l->graph->nodes().size(), 1u);
      ASSERT_EQ(l->claimed, 1u);
      ASSERT_EQ(l->ctx.module.steps.size(), 1u);
      EXPECT_EQ(l->ctx.module.steps[0].kernel, "batchnorm");
      const auto inputs = Inputs(**unfused, 3, false);
      std::vector<Tensor> ref;
      ASSERT_TRUE(interp::Run(**unfused, inputs, &ref).ok());
      for (bool in_place : {false, true}) {
        std::vector<Tensor> got;
        Status st = Execute(*l, inputs, in_place, &got);
        ASSERT_TRUE(st.ok()) << st.message();
        ASSERT_EQ(got.size(), 1u);
        ExpectClose(got[0], ref[0], in_place ? "in place" : "out of place");
      }
    }
}

TEST(NativePool, MaxAndAveragePool) {
  struct Case {
    const char* x;
    const char* attrs;
  };
  const Case kCases[] = {
      {"[1,3,13,13]", "kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]"},
      {"[2,2,7,9]", "ceil_mode=1, kernel_shape=[2,2], strides=[2,2]"},
      {"[1,2,6,7]", "kernel_shape=[3,3], pads=[0,1,2,0]"},
      {"[1,2,6,7]", "count_include_pad=1, kernel_shape=[3,3], pads=[0,1,2,0]"},
      {"[1,2,9,10]", "ceil_mode=1, kernel_shape=[3,2], pads=[1,0,1,1], strides=[2,3]"},
      {"[1,2,9,10]",
       "ceil_mode=1, count_include_pad=1, kernel_shape=[3,2], pads=[1,0,1,1], strides=[2,3]"},
      {"[1,2,8,8]", "auto_pad=\"SAME_UPPER\", kernel_shape=[3,3], strides=[2,2]"},
      {"[1,2,8,7]", "auto_pad=\"SAME_LOWER\", kernel_shape=[2,3], strides=[1,1]"},
      {"[1,2,8,7]", "auto_pad=\"VALID\", kernel_shape=[2,2], strides=[3,1]"},
      {"[2,16,32,32]", "kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]"},
      {"[1,1,1,1]", "kernel_shape=[1,1]"},
  };
  for (const Case& c : kCases)
    for (const char* op : {"MaxPool", "AveragePool"})
      Check(OneNode(StrCat(op, "(%x) {", c.attrs, "}"), c.x, "", "ai.onnx=13"));
  // Dilated windows take the plain loop.
  Check(OneNode("MaxPool(%x) {dilations=[2,2], kernel_shape=[3,3], pads=[1,1,1,1]}", "[1,2,9,9]",
                "", "ai.onnx=13"));
  Check(OneNode("MaxPool(%x) {ceil_mode=1, dilations=[2,1], kernel_shape=[2,3], strides=[2,2]}",
                "[1,2,10,9]", "", "ai.onnx=13"));
  // Pads as wide as the window (windows of padding only) stay with the reference.
  Check(OneNode("MaxPool(%x) {kernel_shape=[2,2], pads=[2,0,0,0]}", "[1,1,4,4]", "", "ai.onnx=13"),
        0);
  // MaxPool with its Indices output stays with the reference.
  Check(
      "graph main (opsets ai.onnx=13)\n  input  %x: float32[1,1,4,4]\n"
      "  %y, %i = MaxPool(%x) {kernel_shape=[2,2]} : float32[*], int64[*]  # n\n"
      "  output %y: float32[*]\n  output %i: int64[*]\n",
      0);
}

TEST(NativePool, GlobalPoolsAndReductions) {
  for (const char* op : {"GlobalAveragePool(%x)", "GlobalMaxPool(%x)"})
    for (const char* x : {"[2,3,7,5]", "[1,64,1,1]", "[2,5,9]", "[2,8,64,64]"})
      Check(OneNode(op, x, "", "ai.onnx=13"));
  struct Case {
    const char* x;
    const char* axes;
    int keepdims;
  };
  const Case kCases[] = {
      {"[2,8,5,5]", "[2,3]", 1}, {"[2,8,5,5]", "[-1,-2]", 0},   {"[2,8,5,5]", "[1]", 1},
      {"[2,8,5,5]", "[0,2]", 0}, {"[2,8,5,5]", "[0,1,2,3]", 0}, {"[3,4,5]", "[0]", 1},
      {"[3,1,5]", "[1]", 0},     {"[2,3,4,5,6]", "[0,2,4]", 1}, {"[2,64,48]", "[2]", 1},
  };
  for (const char* op : {"ReduceMean", "ReduceSum"})
    for (const Case& c : kCases) {
      const std::string node = StrCat(op, "(%x, %axes) {keepdims=", c.keepdims, "}");
      const std::string axes =
          StrCat("  const  %axes: int64[", std::count(c.axes, c.axes + strlen(c.axes), ',') + 1,
                 "] = ", c.axes, "\n");
      Check(OneNode(node, c.x, axes, "ai.onnx=18"));
    }
  // Old forms: axes as an attribute (ReduceMean-13), and no axes at all (every axis).
  Check(OneNode("ReduceMean(%x) {axes=[2,3]}", "[2,8,5,5]", "", "ai.onnx=13"));
  Check(OneNode("ReduceSum(%x)", "[2,8,5]", "", "ai.onnx=13"));
  // Axes computed at run time stay with the reference.
  Check(
      "graph main (opsets ai.onnx=18)\n  input  %x: float32[2,3]\n  input  %a: int64[1]\n"
      "  %y = ReduceSum(%x, %a) : float32[*]  # n\n  output %y: float32[*]\n",
      0);
}

TEST(NativeTensor, ReshapeFamily) {
  for (const char* t : {"float32", "int64"}) {
    const std::string x = StrCat(t, "[2,3,4,1]");
    auto shape = [](const std::string& s, int n) {
      return StrCat("  const  %s: int64[", n, "] = ", s, "\n");
    };
    Check(Movement(x, "Reshape(%x, %s)", shape("[6,4]", 2)));
    Check(Movement(x, "Reshape(%x, %s)", shape("[0,-1]", 2)));
    Check(Movement(x, "Reshape(%x, %s)", shape("[-1,0,2,2]", 4)));
    Check(Movement(x, "Reshape(%x, %s) {allowzero=1}", shape("[2,12]", 2)));
    Check(Movement(x, "Flatten(%x) {axis=2}"));
    Check(Movement(x, "Flatten(%x) {axis=0}"));
    Check(Movement(x, "Flatten(%x) {axis=-1}"));
    Check(Movement(x, "Squeeze(%x, %s)", shape("[-1]", 1)));
    Check(Movement(StrCat(t, "[1,3,1,2]"), "Squeeze(%x)"));
    Check(Movement(x, "Unsqueeze(%x, %s)", shape("[0,-1]", 2)));
    Check(Movement(x, "Unsqueeze(%x, %s)", shape("[2,4]", 2)));
  }
  // Squeeze of every unit dim when a dim is symbolic (a run may bind it to 1) stays with the
  // reference; so does a shape computed at run time.
  Check("graph main (opsets ai.onnx=13)\n  input  %x: float32[N,1,3]\n"
        "  %y = Squeeze(%x) : float32[*]  # n\n  output %y: float32[*]\n",
        0);
  Check(
      "graph main (opsets ai.onnx=13)\n  input  %x: float32[6]\n  input  %s: int64[2]\n"
      "  %y = Reshape(%x, %s) : float32[*]  # n\n  output %y: float32[*]\n",
      0);
}

TEST(NativeTensor, ConcatAndTranspose) {
  for (const char* t : {"float32", "int64"})
    for (int axis : {0, 1, 2, -1}) {
      Check(StrCat("graph main (opsets ai.onnx=13)\n  input  %a: ", t, "[2,3,4]\n  input  %b: ", t,
                   axis == 0 || axis == -3 ? "[5,3,4]"
                   : axis == 1             ? "[2,1,4]"
                                           : "[2,3,7]",
                   "\n  const  %c: ", t,
                   axis == 0   ? "[1,3,4]"
                   : axis == 1 ? "[2,2,4]"
                               : "[2,3,2]",
                   " = random(seed=3)\n  %y = Concat(%a, %b, %c) {axis=", axis, "} : ", t,
                   "[*]  # n\n  output %y: ", t, "[*]\n"));
    }
  Check(Movement("float32[2,3,4]", "Concat(%x) {axis=1}"));  // one input: a copy, or in place
  // Big with one outer row (a piece per task), and many short rows (ShuffleNet's shuffle).
  Check(
      "graph main (opsets ai.onnx=13)\n  input  %a: float32[1,64,64,40]\n"
      "  input  %b: float32[1,32,64,40]\n  %y = Concat(%a, %b) {axis=1} : float32[*]  # n\n"
      "  output %y: float32[*]\n");
  Check(
      "graph main (opsets ai.onnx=13)\n  input  %a: float32[1,232,1,7,7]\n"
      "  input  %b: float32[1,232,1,7,7]\n  %y = Concat(%a, %b) {axis=2} : float32[*]  # n\n"
      "  output %y: float32[*]\n");
  Check(
      "graph main (opsets ai.onnx=13)\n  input  %a: float32[2,64,64,8]\n"
      "  input  %b: float32[2,64,64,8]\n  %y = Concat(%a, %b) {axis=3} : float32[*]  # n\n"
      "  output %y: float32[*]\n");
  {
    // More inputs than the kernel lists on its stack.
    std::string text = "graph main (opsets ai.onnx=13)\n";
    std::string args;
    for (int i = 0; i < 70; ++i) {
      text += StrCat("  input  %i", i, ": float32[2,", 1 + i % 3, ",5]\n");
      args += StrCat(i ? ", " : "", "%i", i);
    }
    Check(text + "  %y = Concat(" + args + ") {axis=1} : float32[*]  # n\n  output %y: float32[*]\n");
  }
  const std::vector<std::vector<int64_t>> kPerms = {{0, 2, 3, 1}, {0, 3, 1, 2}, {3, 2, 1, 0},
                                                    {1, 0, 2, 3}, {0, 1, 3, 2}, {0, 1, 2, 3}};
  for (const char* t : {"float32", "int64"})
    for (const auto& perm : kPerms)
      Check(Movement(StrCat(t, "[2,3,4,5]"), "Transpose(%x) {perm=" + Dims(perm) + "}"));
  Check(Movement("float32[7,9]", "Transpose(%x)"));
  Check(Movement("float32[2,64,32,24]", "Transpose(%x) {perm=[0,2,3,1]}"));
  Check(Movement("float32[3,1,4,1,5]", "Transpose(%x) {perm=[4,1,0,3,2]}"));
}

// A chain over a symbolic batch, lowered once and run at two batch sizes.
TEST(NativeSymbolic, BatchChangesBetweenRuns) {
  const std::string text =
      "graph main (opsets ai.onnx=13)\n"
      "  input  %x: float32[N,8,10,10]\n"
      "  const  %bias: float32[8,1,1] = random(seed=7)\n"
      "  const  %axes: int64[2] = [2,3]\n"
      "  const  %shape: int64[2] = [0,-1]\n"
      "  %a = Add(%x, %bias) : float32[N,8,10,10]  # bias\n"
      "  %r = Relu(%a) : float32[N,8,10,10]  # relu\n"
      "  %p = MaxPool(%r) {ceil_mode=1, kernel_shape=[3,3], strides=[2,2]} : float32[*]  # pool\n"
      "  %m = ReduceMean(%p, %axes) {keepdims=1} : float32[*]  # se_mean\n"
      "  %s = Sigmoid(%m) : float32[*]  # se_gate\n"
      "  %g = Mul(%p, %s) : float32[*]  # se_scale\n"
      "  %t = Transpose(%g) {perm=[0,2,3,1]} : float32[*]  # nhwc\n"
      "  %f = Reshape(%t, %shape) : float32[*]  # flat\n"
      "  %c = Concat(%f, %f) {axis=1} : float32[*]  # cat\n"
      "  %y = Softmax(%c) {axis=1} : float32[*]  # softmax\n"
      "  output %y: float32[*]\n";
  Check(text, -1, false, {{{"N", 1}}, {{"N", 3}}, {{"N", 2}}});
}

// The same kind of chain through the real driver: lower::Lower claims every node natively, and
// a Session (planned arena, in-place sharing) re-plans when the batch changes.
TEST(NativeSymbolic, SessionThroughLowerMatchesReference) {
  const std::string text =
      "graph main (opsets ai.onnx=13)\n"
      "  input  %x: float32[N,6,9,9]\n"
      "  const  %scale: float32[1,6,1,1] = random(seed=9)\n"
      "  const  %axes: int64[2] = [2,3]\n"
      "  %a = Mul(%x, %scale) : float32[N,6,9,9]  # scale\n"
      "  %r = Sigmoid(%a) : float32[N,6,9,9]  # act\n"
      "  %p = AveragePool(%r) {ceil_mode=1, kernel_shape=[2,2], strides=[2,2]} : float32[*]  # "
      "pool\n"
      "  %m = ReduceSum(%p, %axes) {keepdims=0} : float32[*]  # sum\n"
      "  %f = Unsqueeze(%m, %axes) : float32[*]  # unsq\n"
      "  %g = Sub(%p, %f) : float32[*]  # center\n"
      "  %y = Flatten(%g) : float32[*]  # flat\n"
      "  output %y: float32[*]\n";
  auto graph = ir::ParseGraph(text);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  ASSERT_TRUE(ops::InferShapes(**graph).ok());
  lower::LowerReport report;
  auto module = lower::Lower(**graph, {}, &report);
  ASSERT_TRUE(module.ok()) << module.status().message();
  EXPECT_EQ(report.native_steps, (*graph)->nodes().size());
  EXPECT_EQ(report.reference_steps, 0u);
  auto model = runtime::CompiledModel::Create(std::make_shared<const Module>(std::move(*module)));
  ASSERT_TRUE(model.ok()) << model.status().message();
  runtime::SessionOptions options;
  options.threads = 2;
  auto session = runtime::Session::Create(*model, options);
  ASSERT_TRUE(session.ok()) << session.status().message();
  for (int64_t n : {2, 1, 4}) {
    const auto inputs = Inputs(**graph, static_cast<uint32_t>(n), false, {{"N", n}});
    std::vector<Tensor> ref;
    ASSERT_TRUE(interp::Run(**graph, inputs, &ref).ok());
    const Tensor* in[] = {&inputs.at("x")};
    Status s = (*session)->Run(in);
    ASSERT_TRUE(s.ok()) << s.message();
    ExpectClose((*session)->output(0), ref[0], StrCat("batch ", n));
  }
}

// Params that lie: CreateKernel or InferShapes refuses them with a message, never crashes.
TEST(NativeHostile, LyingParamsGiveErrors) {
  Module m;
  runtime::WeightWriter w;
  for (int i = 0; i < 3; ++i) {
    runtime::ValueInfo v;
    v.name = StrCat("v", i);
    v.dims = {2, 3};
    v.dim_params = {"", ""};
    m.values.push_back(v);
  }
  std::vector<float> four(4, 1.0f);
  w.Add(m, std::as_bytes(std::span<const float>(four)));
  w.Finish(m);
  auto step = [](std::string kernel, std::vector<int32_t> in, std::vector<int32_t> out) {
    runtime::Step s;
    s.kernel = std::move(kernel);
    s.name = "liar";
    s.inputs = std::move(in);
    s.outputs = std::move(out);
    return s;
  };
  std::vector<runtime::Step> refused;
  auto add = [&](runtime::Step s) { refused.push_back(std::move(s)); };
  add(step("eltwise_unary", {0}, {1}));  // no ops
  auto s = step("eltwise_unary", {0}, {1});
  s.params.strings["ops"] = "relu,nonsense";
  add(s);
  s.params.strings["ops"] = "clip";  // params missing
  add(s);
  s = step("eltwise_binary", {0, 7}, {1});  // value id out of range
  s.params.strings["op"] = "add";
  add(s);
  s = step("eltwise_binary", {0}, {1});  // one input
  s.params.strings["op"] = "add";
  add(s);
  s = step("softmax", {0}, {1});
  s.params.ints["axis"] = -3;
  add(s);
  s = step("batchnorm", {0}, {1});
  s.params.ints["channels"] = 3;  // the blob holds 2 channels' worth
  s.blobs = {0};
  add(s);
  s.blobs = {5};
  add(s);
  s = step("batchnorm", {0}, {1});
  s.params.ints["channels"] = 2;
  s.blobs = {0};
  s.params.strings["activation"] = "tanh";  // not an epilogue
  add(s);
  s.params.strings["activation"] = "clip";
  s.params.floats = {{"clip_min", 2.0}, {"clip_max", -2.0}};  // unordered bounds
  add(s);
  s = step("maxpool2d", {0}, {1});
  s.params.int_lists = {
      {"kernel", {3, 3}}, {"strides", {0, 1}}, {"dilations", {1, 1}}, {"pads", {0, 0, 0, 0}}};
  add(s);
  s.params.int_lists["strides"] = {1, 1};
  s.params.int_lists["pads"] = {0, -4, 0, 0};
  add(s);
  s.params.int_lists["pads"] = {0, 0};
  add(s);
  s.params.int_lists["pads"] = {3, 0, 0, 0};  // a window of padding only
  add(s);
  s = step("reduce", {0}, {1});
  s.params.strings["op"] = "mean";
  s.params.ints["rank"] = 2;
  s.params.int_lists["axes"] = {1, 1};
  add(s);
  s.params.int_lists["axes"] = {5};
  add(s);
  s = step("reshape", {0}, {1});
  s.params.strings["mode"] = "reshape";
  s.params.int_lists["shape"] = {-1, -1};
  add(s);
  s.params.strings["mode"] = "squeeze";
  s.params.int_lists["axes"] = {0};
  add(s);  // no rank
  s = step("transpose", {0}, {1});
  s.params.int_lists["perm"] = {0, 0};
  add(s);
  s = step("concat", {0, 2}, {1});
  s.params.ints["axis"] = 99;
  add(s);
  for (const runtime::Step& r : refused) {
    auto k = runtime::CreateKernel(r, m);
    EXPECT_FALSE(k.ok()) << r.kernel;
    if (!k.ok()) {
      EXPECT_NE(k.status().message().find("liar"), std::string::npos);
    }
  }

  // Accepted params that do not fit the dims a run brings: InferShapes says so.
  const runtime::Dims x = {2, 3};
  const runtime::Dims* one[] = {&x};
  std::vector<std::optional<runtime::Dims>> out;
  std::vector<runtime::Step> misfits;
  s = step("reshape", {0}, {1});
  s.params.strings["mode"] = "reshape";
  s.params.int_lists["shape"] = {4, -1};
  misfits.push_back(s);
  s = step("maxpool2d", {0}, {1});
  s.params.int_lists = {
      {"kernel", {3, 3}}, {"strides", {1, 1}}, {"dilations", {1, 1}}, {"pads", {0, 0, 0, 0}}};
  misfits.push_back(s);  // rank 2 is not NCHW
  s = step("transpose", {0}, {1});
  s.params.int_lists["perm"] = {2, 1, 0};
  misfits.push_back(s);
  s = step("softmax", {0}, {1});
  s.params.ints["axis"] = 5;
  misfits.push_back(s);
  for (const runtime::Step& r : misfits) {
    auto k = runtime::CreateKernel(r, m);
    ASSERT_TRUE(k.ok()) << r.kernel << ": " << k.status().message();
    Status st = (*k)->InferShapes(one, &out);
    EXPECT_FALSE(st.ok()) << r.kernel;
    EXPECT_NE(st.message().find("liar"), std::string::npos) << st.message();
  }
  // Binary shapes that do not broadcast, and a pool window larger than the input.
  s = step("eltwise_binary", {0, 2}, {1});
  s.params.strings["op"] = "mul";
  auto k = runtime::CreateKernel(s, m);
  ASSERT_TRUE(k.ok());
  const runtime::Dims y = {4, 3};
  const runtime::Dims* two[] = {&x, &y};
  EXPECT_FALSE((*k)->InferShapes(two, &out).ok());
  s = step("avgpool2d", {0}, {1});
  s.params.int_lists = {
      {"kernel", {9, 9}}, {"strides", {1, 1}}, {"dilations", {1, 1}}, {"pads", {0, 0, 0, 0}}};
  k = runtime::CreateKernel(s, m);
  ASSERT_TRUE(k.ok());
  const runtime::Dims small = {1, 1, 4, 4};
  const runtime::Dims* pool_in[] = {&small};
  EXPECT_FALSE((*k)->InferShapes(pool_in, &out).ok());
}

}  // namespace
}  // namespace kiln
