// The native elementwise, pooling and tensor-movement steps (lower/native_{eltwise,pool,tensor}
// and runtime/kernels/{eltwise,pool,tensor}) against the reference interpreter. Each graph is
// lowered node by node through the families' NativeLowerings with a small fake LowerContext
// (independent of lower.cc), its steps run with kernels from runtime::CreateKernel on a
// two-thread pool, and every output is compared with interp::Run on the same random inputs.
// Runs are repeated with each in-place pair a kernel offers sharing one buffer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "interp/interpreter.h"
#include "ir/parser.h"
#include "lower/lower.h"
#include "lower/native.h"
#include "ops/shape_inference.h"
#include "runtime/kernel_registry.h"
#include "runtime/session.h"

namespace kiln {
namespace {

using runtime::Module;
using runtime::StepKernel;

class FakeContext final : public lower::LowerContext {
 public:
  IsaLevel isa() const override { return ActiveIsa(); }
  Expected<int32_t> ValueId(const ir::Value* v) override {
    if (v == nullptr) return -1;
    if (auto it = ids.find(v); it != ids.end()) return it->second;
    runtime::ValueInfo info;
    info.name = v->name;
    info.dtype = v->type.dtype;
    info.rank_known = v->type.shape.has_value();
    if (v->constant) {
      info.dims = v->constant->dims();
      info.dim_params.assign(info.dims.size(), "");
      info.kind = runtime::ValueKind::kConstant;
      info.blob =
          AddBlob({static_cast<const std::byte*>(v->constant->raw()), v->constant->nbytes()});
    } else {
      if (info.rank_known)
        for (const ir::Dim& d : *v->type.shape) {
          info.dims.push_back(d.is_static() ? d.value : -1);
          info.dim_params.push_back(d.is_static() ? "" : d.symbol);
        }
      info.kind = v->is_graph_input ? runtime::ValueKind::kInput : runtime::ValueKind::kActivation;
    }
    module.values.push_back(info);
    return ids[v] = static_cast<int32_t>(module.values.size() - 1);
  }
  int32_t AddBlob(std::span<const std::byte> bytes) override { return writer.Add(module, bytes); }
  void AddStep(runtime::Step step) override { module.steps.push_back(std::move(step)); }

  Module module;
  runtime::WeightWriter writer;
  std::map<const ir::Value*, int32_t> ids;
};

struct Lowered {
  std::unique_ptr<ir::Graph> graph;
  FakeContext ctx;
  std::vector<std::unique_ptr<StepKernel>> kernels;
  size_t claimed = 0;
};

// Parses `text` (node outputs may be declared float32[*]: shape inference fills them), lowers
// every node the three families claim, and prepares the kernels.
std::unique_ptr<Lowered> Lower(const std::string& text) {
  auto l = std::make_unique<Lowered>();
  auto g = ir::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << text;
  if (!g.ok()) return nullptr;
  l->graph = std::move(*g);
  Status s = ops::InferShapes(*l->graph);
  EXPECT_TRUE(s.ok()) << s.message();
  for (const auto& node : l->graph->nodes()) {
    for (auto family : {lower::EltwiseLowerings, lower::PoolLowerings, lower::TensorLowerings}) {
      bool done = false;
      for (lower::NativeLowering f : family()) {
        auto r = f(*node, l->ctx);
        EXPECT_TRUE(r.ok()) << r.status().message();
        if (r.ok() && *r) done = true;
        if (done) break;
      }
      if (done) {
        ++l->claimed;
        break;
      }
    }
  }
  l->ctx.writer.Finish(l->ctx.module);
  for (const runtime::Step& step : l->ctx.module.steps) {
    auto k = runtime::CreateKernel(step, l->ctx.module);
    EXPECT_TRUE(k.ok()) << k.status().message();
    if (!k.ok()) return nullptr;
    l->kernels.push_back(std::move(*k));
  }
  return l;
}

ThreadPool* Pool() {
  static auto pool = ThreadPool::Create(2);
  return pool->get();
}

// Runs the lowered steps on `inputs`; with `in_place`, every pair a kernel offers shares a
// buffer (a copy of the input, so the graph's own input stays intact for later steps).
Status Execute(const Lowered& l, const interp::NamedTensors& inputs, bool in_place,
               std::vector<Tensor>* outputs) {
  const Module& m = l.ctx.module;
  std::vector<Tensor> values(m.values.size());
  for (size_t i = 0; i < m.values.size(); ++i) {
    const runtime::ValueInfo& v = m.values[i];
    if (v.kind == runtime::ValueKind::kConstant)
      values[i] = Tensor::Borrow(v.dtype, v.dims,
                                 const_cast<std::byte*>(m.BlobBytes(v.blob).data()), nullptr);
    if (v.kind == runtime::ValueKind::kInput) values[i] = inputs.at(v.name);
  }
  for (size_t s = 0; s < m.steps.size(); ++s) {
    const runtime::Step& step = m.steps[s];
    const StepKernel& k = *l.kernels[s];
    std::vector<Tensor> ins;
    std::vector<const runtime::Dims*> dims;
    for (int32_t id : step.inputs) ins.push_back(values[id]);
    for (const Tensor& t : ins) dims.push_back(&t.dims());
    std::vector<std::optional<runtime::Dims>> out_dims;
    KILN_RETURN_IF_ERROR(k.InferShapes(dims, &out_dims));
    if (out_dims.size() != step.outputs.size()) return Status::Error("wrong output count");
    std::vector<Tensor> outs;
    for (size_t o = 0; o < out_dims.size(); ++o) {
      if (!out_dims[o]) return Status::Error("output dims left unknown");
      outs.emplace_back(m.values[step.outputs[o]].dtype, *out_dims[o]);
    }
    if (in_place)
      for (auto [o, i] : k.InPlace())
        if (ins[i].nbytes() == outs[o].nbytes() && ins[i].dtype() == outs[o].dtype()) {
          ins[i] = ins[i].Clone();
          outs[o] = ins[i].Reshaped(outs[o].dims());
          break;
        }
    std::vector<const Tensor*> in_ptrs;
    std::vector<Tensor*> out_ptrs;
    for (const Tensor& t : ins) in_ptrs.push_back(&t);
    for (Tensor& t : outs) out_ptrs.push_back(&t);
    const size_t ws = k.WorkspaceBytes(dims, 2);
    std::vector<std::byte> workspace(ws + 64);
    runtime::StepArgs args;
    args.inputs = in_ptrs;
    args.outputs = out_ptrs;
    args.workspace = workspace.data() + (64 - reinterpret_cast<uintptr_t>(workspace.data()) % 64);
    args.workspace_bytes = ws;
    args.pool = Pool();
    KILN_RETURN_IF_ERROR(k.Run(args).WithContext(k.Describe() + ": "));
    for (size_t o = 0; o < outs.size(); ++o) values[step.outputs[o]] = outs[o];
  }
  outputs->clear();
  for (const ir::Value* v : l.graph->outputs) {
    auto it = l.ctx.ids.find(v);
    if (it == l.ctx.ids.end()) return Status::Error("output '", v->name, "' was not lowered");
    outputs->push_back(values[it->second]);
  }
  return Status::Ok();
}

// Random inputs for the graph's inputs; symbolic dims take their size from `symbols`.
interp::NamedTensors Inputs(const ir::Graph& g, uint32_t seed, bool positive,
                            const std::map<std::string, int64_t>& symbols = {}) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(positive ? 0.1f : -3.f, 3.f);
  interp::NamedTensors in;
  for (const ir::Value* v : g.inputs) {
    std::vector<int64_t> dims;
    for (const ir::Dim& d : *v->type.shape)
      dims.push_back(d.is_static() ? d.value : symbols.at(d.symbol));
    Tensor t(v->type.dtype, dims);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (t.dtype() == DType::kFloat32) t.data<float>()[i] = u(rng);
      if (t.dtype() == DType::kInt64) t.data<int64_t>()[i] = static_cast<int64_t>(rng() % 1000);
      if (t.dtype() == DType::kInt32) t.data<int32_t>()[i] = static_cast<int32_t>(rng() % 1000);
    }
    in[v->name] = t;
  }
  return in;
}

void ExpectClose(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.dims(), want.dims()) << what;
  if (got.dtype() != DType::kFloat32) {
    ASSERT_EQ(std::memcmp(got.raw(), want.raw(), got.nbytes()), 0) << what;
    return;
  }
  for (int64_t i = 0; i < got.numel(); ++i) {
    const float g = got.data<float>()[i], w = want.data<float>()[i];
    if (std::isnan(w)) {
      ASSERT_TRUE(std::isnan(g)) << what << " at " << i;
      continue;
    }
    ASSERT_NEAR(g, w, 2e-5 + 2e-4 * std::fabs(w)) << what << " at element " << i;
  }
}

// Lowers `text`, expects `claimed` nodes native (-1: all of them), and compares with the
// reference at each symbol binding, out of place and in place.
void Check(const std::string& text, int claimed = -1, bool positive = false,
           const std::vector<std::map<std::string, int64_t>>& bindings = {{}}) {
  SCOPED_TRACE(text);
  auto l = Lower(text);
  ASSERT_NE(l, nullptr);
  const size_t want = claimed < 0 ? l->graph->nodes().size() : static_cast<size_t>(claimed);
  ASSERT_EQ(l->claimed, want);
  if (want == 0) return;  // nothing native to compare
  uint32_t seed = 1;
  for (const auto& symbols : bindings) {
    const auto inputs = Inputs(*l->graph, seed++, positive, symbols);
    std::vector<Tensor> ref;
    Status rs = interp::Run(*l->graph, inputs, &ref);
    ASSERT_TRUE(rs.ok()) << rs.message();
    for (bool in_place : {false, true}) {
      std::vector<Tensor> got;
      Status s = Execute(*l, inputs, in_place, &got);
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_EQ(got.size(), ref.size());
      for (size_t i = 0; i < got.size(); ++i)
        ExpectClose(got[i], ref[i], StrCat("output ", i, in_place ? " (in place)" : ""));
    }
  }
}

std::string Dims(const std::vector<int64_t>& d) { return DimsToString(d); }

// One node on one float32 input `x` of `dims`; `node` is the text after "%y = ".
std::string OneNode(const std::string& node, const std::string& dims,
                    const std::string& consts = "",
                    const std::string& opsets = "ai.onnx=20 kiln=1") {
  return "graph main (opsets " + opsets + ")\n  input  %x: float32" + dims + "\n" + consts +
         "  %y = " + node + " : float32[*]  # n\n  output %y: float32[*]\n";
}

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

// One node on input %x of type `xt` (e.g. "int64[2,3]").
std::string Movement(const std::string& xt, const std::string& node,
                     const std::string& consts = "") {
  return "graph main (opsets ai.onnx=13)\n  input  %x: " + xt + "\n" + consts + "  %y = " + node +
         " : " + xt.substr(0, xt.find('[')) +
         "[*]  # n\n  output %y: " + xt.substr(0, xt.find('[')) + "[*]\n";
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
  Check(
      "graph main (opsets ai.onnx=13)\n  input  %a: float32[2,64,64,8]\n"
      "  input  %b: float32[2,64,64,8]\n  %y = Concat(%a, %b) {axis=3} : float32[*]  # n\n"
      "  output %y: float32[*]\n");
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
