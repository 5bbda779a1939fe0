// Native Conv and Gemm/MatMul steps: one-node IR graphs lowered by lower/native_conv.cc and
// lower/native_gemm.cc through a small LowerContext, run by the runtime kernels on random inputs
// and compared with the reference interpreter, at every ISA level this process runs (the module
// ISA is the context's). Also: modules whose blobs or params lie must give errors, not crashes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>

#include "interp/interpreter.h"
#include "ir/parser.h"
#include "lower/lower.h"
#include "lower/native.h"
#include "runtime/kernel_registry.h"
#include "runtime/module_file.h"
#include "runtime/session.h"

namespace kiln {
namespace {

// Builds a module the way lower.cc does, so the lowerings can be tested alone.
class TestContext : public lower::LowerContext {
 public:
  explicit TestContext(IsaLevel isa) : isa_(isa) {}
  IsaLevel isa() const override { return isa_; }
  Expected<int32_t> ValueId(const ir::Value* v) override {
    if (!v) return -1;
    auto it = ids_.find(v);
    if (it != ids_.end()) return it->second;
    if (!v->type.has_static_shape()) return Status::Error("test: '", v->name, "' is not static");
    runtime::ValueInfo info;
    info.name = v->name;
    info.dtype = v->type.dtype;
    info.dims = v->type.static_dims();
    info.dim_params.assign(info.dims.size(), "");
    info.kind = runtime::ValueKind::kActivation;
    if (v->is_graph_input) info.kind = runtime::ValueKind::kInput;
    if (v->constant) {
      info.kind = runtime::ValueKind::kConstant;
      ++constants_stored;  // the lowerings must never store raw weights
    }
    const auto id = static_cast<int32_t>(module.values.size());
    module.values.push_back(info);
    if (v->is_graph_input) module.inputs.push_back(id);
    ids_[v] = id;
    return id;
  }
  int32_t AddBlob(std::span<const std::byte> bytes) override { return writer_.Add(module, bytes); }
  void AddStep(runtime::Step step) override { module.steps.push_back(std::move(step)); }
  void Finish() { writer_.Finish(module); }

  runtime::Module module;
  int constants_stored = 0;

 private:
  IsaLevel isa_;
  runtime::WeightWriter writer_;
  std::map<const ir::Value*, int32_t> ids_;
};

std::vector<IsaLevel> IsaLevels() {
  std::vector<IsaLevel> levels;
  for (IsaLevel l : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512})
    if (l <= ActiveIsa()) levels.push_back(l);
  return levels;
}

ThreadPool* TwoThreads() {
  static std::unique_ptr<ThreadPool> pool = std::move(ThreadPool::Create(2).value());
  return pool.get();
}

std::unique_ptr<ir::Graph> Parse(const std::string& text) {
  auto g = ir::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << text;
  return g.ok() ? std::move(g).value() : nullptr;
}

Tensor RandomTensor(const std::vector<int64_t>& dims, uint32_t seed) {
  Tensor t(DType::kFloat32, dims);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// Lowers the graph's one node at `isa`; false when no native lowering claims it.
Expected<bool> LowerOne(const ir::Graph& g, TestContext& ctx) {
  if (g.nodes().size() != 1) return Status::Error("test: expected one node");
  for (auto family : {lower::ConvLowerings, lower::GemmLowerings}) {
    for (lower::NativeLowering f : family()) {
      KILN_ASSIGN_OR_RETURN(bool claimed, f(*g.nodes()[0], ctx));
      if (claimed) {
        ctx.Finish();
        return true;
      }
    }
  }
  return false;
}

// Runs the module's one step on x, as a session would: InferShapes, workspace, Run.
Expected<Tensor> RunStep(const runtime::Module& m, const Tensor& x, std::string* describe) {
  KILN_ASSIGN_OR_RETURN(auto kernel, runtime::CreateKernel(m.steps.at(0), m));
  if (describe) *describe = kernel->Describe();
  const runtime::Dims* in[] = {&x.dims()};
  std::vector<std::optional<runtime::Dims>> out;
  KILN_RETURN_IF_ERROR(kernel->InferShapes(in, &out));
  Tensor y(DType::kFloat32, *out.at(0));
  const size_t bytes = kernel->WorkspaceBytes(in, TwoThreads()->threads());
  std::unique_ptr<void, void (*)(void*)> ws(std::aligned_alloc(64, (bytes + 64) / 64 * 64),
                                            std::free);
  const Tensor* inputs[] = {&x};
  Tensor* outputs[] = {&y};
  runtime::StepArgs args{inputs, outputs, static_cast<std::byte*>(ws.get()), bytes, TwoThreads()};
  KILN_RETURN_IF_ERROR(kernel->Run(args));
  return y;
}

float Activate(const std::string& act, float v, float lo, float hi) {
  const double d = v;
  if (act == "Relu") return std::max(v, 0.0f);
  if (act == "Clip") return std::min(std::max(v, lo), hi);
  if (act == "Silu") return static_cast<float>(d / (1.0 + std::exp(-d)));
  if (act == "HardSwish") return static_cast<float>(d * std::clamp(d / 6 + 0.5, 0.0, 1.0));
  if (act == "Gelu") return static_cast<float>(0.5 * d * (1.0 + std::erf(d / std::sqrt(2.0))));
  return v;
}

// y against act(reference) with a tolerance that grows with the reduction length k.
void ExpectClose(const Tensor& y, const Tensor& ref, size_t k, const std::string& act,
                 const std::string& what) {
  ASSERT_EQ(y.dims(), ref.dims()) << what;
  ASSERT_GT(ref.numel(), 0) << what;  // an empty comparison would prove nothing
  const float tol = 4e-6f * static_cast<float>(k + 1);
  int bad = 0;
  for (int64_t i = 0; i < y.numel() && bad < 5; ++i) {
    const float want = Activate(act, ref.data<float>()[i], -0.25f, 0.5f);
    const float got = y.data<float>()[i];
    if (!(std::fabs(got - want) <= tol + 1e-5f * std::fabs(want))) {
      ADD_FAILURE() << what << ": element " << i << " is " << got << ", reference " << want;
      ++bad;
    }
  }
}

std::string List(std::initializer_list<int64_t> v) {
  std::string s = "[";
  for (int64_t x : v) s += (s.size() > 1 ? "," : "") + std::to_string(x);
  return s + "]";
}

struct ConvCase {
  int64_t n = 1, c = 4, h = 8, w = 8, m = 6, kh = 3, kw = 3;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, group = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  std::string auto_pad;  // overrides pads
  bool bias = true;
  std::string act;  // "" for Conv, else kiln.FusedConv's activation

  std::vector<int64_t> OutHw() const {
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      return {(h + sh - 1) / sh, (w + sw - 1) / sw};
    }
    return {(h + pt + pb - (kh - 1) * dh - 1) / sh + 1, (w + pl + pr - (kw - 1) * dw - 1) / sw + 1};
  }
  // The graph with batch `batch`; fused = false gives the plain Conv the reference runs.
  std::string Text(int64_t batch, bool fused) const {
    const auto o = OutHw();
    const std::string y = "float32" + List({batch, m, o[0], o[1]});
    std::string attrs = "group=" + std::to_string(group) + ", kernel_shape=" + List({kh, kw}) +
                        ", strides=" + List({sh, sw}) + ", dilations=" + List({dh, dw});
    attrs +=
        auto_pad.empty() ? ", pads=" + List({pt, pl, pb, pr}) : ", auto_pad=\"" + auto_pad + "\"";
    std::string op = "Conv";
    if (fused && !act.empty()) {
      op = "FusedConv@kiln";
      attrs += ", activation=\"" + act + "\"";
      if (act == "Clip") attrs += ", activation_params=floats[-0.25,0.5]";
    }
    return "graph main (opsets ai.onnx=13 kiln=1)\n"
           "  input  %x: float32" +
           List({batch, c, h, w}) +
           "\n"
           "  const  %w: float32" +
           List({m, c / group, kh, kw}) + " = random(seed=3)\n" +
           (bias ? "  const  %b: float32" + List({m}) + " = random(seed=5)\n" : "") +
           "  %y = " + op + "(%x, %w" + (bias ? ", %b" : "") + ") {" + attrs + "} : " + y +
           "  # conv\n  output %y: " + y + "\n";
  }
  std::string Name() const {
    return StrCat("conv N=", n, " C=", c, " H=", h, " W=", w, " M=", m, " k=", kh, "x", kw,
                  " s=", sh, "x", sw, " d=", dh, "x", dw, " g=", group, " pads=", pt, ",", pl, ",",
                  pb, ",", pr, " auto_pad=", auto_pad, " act=", act);
  }
};

Tensor Reference(const std::string& text, const Tensor& x) {
  auto g = Parse(text);
  std::vector<Tensor> out;
  if (!g) return Tensor();
  Status s = interp::Run(*g, {{"x", x}}, &out);
  EXPECT_TRUE(s.ok()) << s.message();
  return s.ok() ? out.at(0) : Tensor();
}

// Lowers, runs natively at every ISA level, and compares with the interpreter.
void CheckConv(const ConvCase& cc, int64_t run_batch = 0) {
  if (run_batch == 0) run_batch = cc.n;
  const Tensor x = RandomTensor({run_batch, cc.c, cc.h, cc.w}, 7);
  const Tensor ref = Reference(cc.Text(run_batch, false), x);
  for (IsaLevel isa : IsaLevels()) {
    const std::string what = StrCat(cc.Name(), " isa=", IsaName(isa), " run N=", run_batch);
    auto g = Parse(cc.Text(cc.n, true));
    ASSERT_TRUE(g);
    TestContext ctx(isa);
    auto claimed = LowerOne(*g, ctx);
    ASSERT_TRUE(claimed.ok()) << what << ": " << claimed.status().message();
    ASSERT_TRUE(*claimed) << what;
    EXPECT_EQ(ctx.constants_stored, 0) << what;
    std::string describe;
    auto y = RunStep(ctx.module, x, &describe);
    ASSERT_TRUE(y.ok()) << what << ": " << y.status().message();
    EXPECT_NE(describe.find("conv2d"), std::string::npos) << describe;
    ExpectClose(*y, ref, static_cast<size_t>(cc.c / cc.group * cc.kh * cc.kw), cc.act,
                what + " (" + describe + ")");
  }
}

TEST(NativeConv, Pointwise) {
  ConvCase cc;
  cc.c = 5, cc.m = 11, cc.h = 7, cc.w = 6, cc.kh = cc.kw = 1;
  CheckConv(cc);
  cc.c = 32, cc.m = 17, cc.bias = false;
  CheckConv(cc);
}

TEST(NativeConv, Dense3x3) {
  ConvCase cc;
  cc.c = 16, cc.m = 24, cc.h = cc.w = 9, cc.pt = cc.pl = cc.pb = cc.pr = 1;
  CheckConv(cc);
  cc.c = 13, cc.m = 20, cc.h = cc.w = 10, cc.sh = cc.sw = 2;
  CheckConv(cc);
  cc.c = 3, cc.m = 5, cc.sh = 1, cc.bias = false;  // too few channels for NCHWc
  CheckConv(cc);
}

TEST(NativeConv, AsymmetricPadsAndAutoPad) {
  ConvCase cc;
  cc.c = 8, cc.m = 8, cc.h = 7, cc.w = 9, cc.pt = 0, cc.pl = 1, cc.pb = 2, cc.pr = 1;
  CheckConv(cc);
  cc.c = 4, cc.m = 6, cc.h = cc.w = 8, cc.sh = cc.sw = 2, cc.auto_pad = "SAME_UPPER";
  CheckConv(cc);
  cc.auto_pad = "SAME_LOWER", cc.c = 20;
  CheckConv(cc);
}

TEST(NativeConv, Depthwise) {
  ConvCase cc;
  cc.c = cc.m = cc.group = 10, cc.pt = cc.pl = cc.pb = cc.pr = 1;
  CheckConv(cc);
  cc.c = cc.m = cc.group = 12, cc.h = cc.w = 11, cc.sh = cc.sw = 2;
  CheckConv(cc);
  cc.dh = cc.dw = 2, cc.sh = cc.sw = 1, cc.pt = cc.pl = cc.pb = cc.pr = 2;  // the portable loop
  CheckConv(cc);
}

TEST(NativeConv, GroupedDilatedAndStem) {
  ConvCase cc;
  cc.c = 12, cc.m = 18, cc.group = 3, cc.pt = cc.pl = cc.pb = cc.pr = 1;
  CheckConv(cc);
  cc.c = 6, cc.m = 10, cc.group = 1, cc.dh = cc.dw = 2, cc.pt = cc.pl = cc.pb = cc.pr = 2;
  CheckConv(cc);
  ConvCase stem;
  stem.c = 3, stem.m = 16, stem.h = stem.w = 23, stem.kh = stem.kw = 7, stem.sh = stem.sw = 2;
  stem.pt = stem.pl = stem.pb = stem.pr = 3;
  CheckConv(stem);
}

TEST(NativeConv, EveryActivation) {
  for (const char* act : {"Relu", "Clip", "Silu", "HardSwish", "Gelu"}) {
    ConvCase dense;  // NCHWc where the ISA has it
    dense.c = 16, dense.m = 20, dense.pt = dense.pl = dense.pb = dense.pr = 1, dense.act = act;
    CheckConv(dense);
    ConvCase im2col;  // and the GEMM epilogue
    im2col.c = 3, im2col.m = 9, im2col.sh = im2col.sw = 2, im2col.act = act;
    CheckConv(im2col);
    ConvCase dw;
    dw.c = dw.m = dw.group = 9, dw.pt = dw.pl = dw.pb = dw.pr = 1, dw.act = act;
    CheckConv(dw);
  }
}

TEST(NativeConv, BatchOtherThanCompiled) {
  ConvCase cc;
  cc.n = 2, cc.c = 16, cc.m = 12, cc.pt = cc.pl = cc.pb = cc.pr = 1;
  CheckConv(cc);
  CheckConv(cc, /*run_batch=*/3);
  cc.c = 5, cc.kh = cc.kw = 1, cc.sh = cc.sw = 2, cc.pt = cc.pl = cc.pb = cc.pr = 0;
  CheckConv(cc, 1);
}

runtime::Module Lowered(const std::string& text);  // below

// Layers where the cost model picks Winograd (on SIMD ISAs): through the blobs and the runtime
// kernel's view, with an activation, and at a batch other than the compiled one.
TEST(NativeConv, Winograd) {
  ConvCase cc;
  cc.c = 64, cc.m = 64, cc.h = cc.w = 14, cc.pt = cc.pl = cc.pb = cc.pr = 1, cc.act = "Relu";
  if (ActiveIsa() >= IsaLevel::kAvx2) {
    const runtime::Module m = Lowered(cc.Text(1, true));
    EXPECT_EQ(m.steps.at(0).params.strings.at("algorithm"), "winograd");
  }
  CheckConv(cc);
  cc.n = 2, cc.c = 72, cc.m = 80, cc.h = 15, cc.w = 17, cc.act = "";
  CheckConv(cc, /*run_batch=*/3);
  CheckConv(cc);
}

TEST(NativeConv, LeavesWhatItCannotRun) {
  // A computed W, and an unknown fused activation, go to reference partitions.
  const char* text = R"(graph main (opsets ai.onnx=13 kiln=1)
  input  %x: float32[1,2,4,4]
  input  %w: float32[3,2,1,1]
  %y = Conv(%x, %w) {kernel_shape=[1,1]} : float32[1,3,4,4]  # conv
  output %y: float32[1,3,4,4]
)";
  auto g = Parse(text);
  ASSERT_TRUE(g);
  TestContext ctx(ActiveIsa());
  auto claimed = LowerOne(*g, ctx);
  ASSERT_TRUE(claimed.ok()) << claimed.status().message();
  EXPECT_FALSE(*claimed);
  ConvCase cc;
  cc.act = "Tanh";
  g = Parse(cc.Text(1, true));
  ASSERT_TRUE(g);
  claimed = LowerOne(*g, ctx);
  ASSERT_TRUE(claimed.ok()) << claimed.status().message();
  EXPECT_FALSE(*claimed);
  EXPECT_TRUE(ctx.module.steps.empty());
}

struct GemmCase {
  int64_t m = 5, k = 7, n = 9;
  bool trans_a = false, trans_b = false;
  float alpha = 1.0f, beta = 1.0f;
  std::vector<int64_t> c_dims;  // empty: no C
  std::string act;

  std::string Text(bool fused) const {
    const std::string a = "float32" + (trans_a ? List({k, m}) : List({m, k}));
    const std::string b = "float32" + (trans_b ? List({n, k}) : List({k, n}));
    std::string c_type = "float32[";
    for (size_t i = 0; i < c_dims.size(); ++i) c_type += (i ? "," : "") + std::to_string(c_dims[i]);
    c_type += "]";
    std::string attrs = StrCat("alpha=", std::to_string(alpha), ", beta=", std::to_string(beta),
                               ", transA=", trans_a ? 1 : 0, ", transB=", trans_b ? 1 : 0);
    std::string op = "Gemm";
    if (fused && !act.empty()) {
      op = "FusedGemm@kiln";
      attrs += ", activation=\"" + act + "\"";
      if (act == "Clip") attrs += ", activation_params=floats[-0.25,0.5]";
    }
    const std::string y = "float32" + List({m, n});
    return "graph main (opsets ai.onnx=13 kiln=1)\n  input  %x: " + a + "\n  const  %b: " + b +
           " = random(seed=4)\n" +
           (c_dims.empty() ? "" : "  const  %c: " + c_type + " = random(seed=6)\n") +
           "  %y = " + op + "(%x, %b" + (c_dims.empty() ? "" : ", %c") + ") {" + attrs +
           "} : " + y + "  # gemm\n  output %y: " + y + "\n";
  }
};

// Lowers `text` at every ISA level, runs it on x and compares with `ref_text` on the interpreter.
void CheckProduct(const std::string& text, const std::string& ref_text, const Tensor& x, size_t k,
                  const std::string& act) {
  const Tensor ref = Reference(ref_text, x);
  for (IsaLevel isa : IsaLevels()) {
    const std::string what = StrCat(text, "isa=", IsaName(isa));
    auto g = Parse(text);
    ASSERT_TRUE(g);
    TestContext ctx(isa);
    auto claimed = LowerOne(*g, ctx);
    ASSERT_TRUE(claimed.ok()) << what << ": " << claimed.status().message();
    ASSERT_TRUE(*claimed) << what;
    EXPECT_EQ(ctx.constants_stored, 0) << what;
    std::string describe;
    auto y = RunStep(ctx.module, x, &describe);
    ASSERT_TRUE(y.ok()) << what << ": " << y.status().message();
    EXPECT_NE(describe.find("gemm"), std::string::npos) << describe;
    ExpectClose(*y, ref, k, act, what + describe);
  }
}

void CheckGemm(const GemmCase& gc) {
  const Tensor x = RandomTensor(
      gc.trans_a ? std::vector<int64_t>{gc.k, gc.m} : std::vector<int64_t>{gc.m, gc.k}, 9);
  CheckProduct(gc.Text(true), gc.Text(false), x, static_cast<size_t>(gc.k), gc.act);
}

TEST(NativeGemm, TransposesAlphaBetaAndBias) {
  GemmCase gc;
  CheckGemm(gc);
  gc.trans_a = true, gc.trans_b = true, gc.alpha = 0.5f, gc.beta = 3.0f, gc.c_dims = {9};
  CheckGemm(gc);
  gc.trans_a = false, gc.c_dims = {1, 33}, gc.m = 40, gc.k = 70, gc.n = 33;
  CheckGemm(gc);
  gc.trans_b = false, gc.c_dims = {1}, gc.m = 1;
  CheckGemm(gc);
  gc.c_dims = {9}, gc.beta = 0.0f, gc.m = 3, gc.k = 5, gc.n = 9;  // beta 0: C ignored
  CheckGemm(gc);
}

TEST(NativeGemm, EveryActivation) {
  for (const char* act : {"Relu", "Clip", "Silu", "HardSwish", "Gelu"}) {
    GemmCase gc;
    gc.m = 17, gc.k = 19, gc.n = 35, gc.c_dims = {35}, gc.act = act;
    CheckGemm(gc);
  }
}

TEST(NativeGemm, MatMulRank3) {
  const std::string text = R"(graph main (opsets ai.onnx=13)
  input  %x: float32[2,3,17]
  const  %b: float32[17,33] = random(seed=8)
  %y = MatMul(%x, %b) : float32[2,3,33]  # matmul
  output %y: float32[2,3,33]
)";
  CheckProduct(text, text, RandomTensor({2, 3, 17}, 10), 17, "");
}

TEST(NativeGemm, LeavesWhatItCannotRun) {
  // C of shape [M, N], and a MatMul whose B is computed, stay on the reference.
  GemmCase gc;
  gc.c_dims = {5, 9};
  const std::string computed_b = R"(graph main (opsets ai.onnx=13)
  input  %x: float32[2,3]
  input  %b: float32[3,4]
  %y = MatMul(%x, %b) : float32[2,4]  # matmul
  output %y: float32[2,4]
)";
  for (const std::string& text : {gc.Text(true), computed_b}) {
    auto g = Parse(text);
    ASSERT_TRUE(g);
    TestContext ctx(ActiveIsa());
    auto claimed = LowerOne(*g, ctx);
    ASSERT_TRUE(claimed.ok()) << claimed.status().message();
    EXPECT_FALSE(*claimed) << text;
  }
}

// A lowered module, for the tests that then break it.
runtime::Module Lowered(const std::string& text) {
  auto g = Parse(text);
  TestContext ctx(ActiveIsa());
  auto claimed = g ? LowerOne(*g, ctx) : Expected<bool>(false);
  EXPECT_TRUE(claimed.ok() && *claimed) << text;
  return std::move(ctx.module);
}

// CreateKernel must refuse `m` with an error mentioning `expect`.
void ExpectRefused(const runtime::Module& m, const std::string& expect, const std::string& what) {
  auto k = runtime::CreateKernel(m.steps.at(0), m);
  ASSERT_FALSE(k.ok()) << what;
  EXPECT_NE(k.status().message().find(expect), std::string::npos)
      << what << ": " << k.status().message();
}

TEST(NativeConvGemmHostile, ConvBlobsAndParamsThatLie) {
  ConvCase direct;  // one blob of reordered weights (NCHWc on SIMD, im2col on scalar)
  direct.c = 16, direct.m = 16, direct.pt = direct.pl = direct.pb = direct.pr = 1;
  ConvCase grouped;  // packed A per group
  grouped.c = 8, grouped.m = 12, grouped.group = 2, grouped.kh = grouped.kw = 1;
  ConvCase wino;  // 36 packed U matrices where the cost model picks Winograd
  wino.c = 64, wino.m = 64, wino.h = wino.w = 14, wino.pt = wino.pl = wino.pb = wino.pr = 1;
  ConvCase gdirect;  // reordered weights of kGroupedDirect (SIMD) or a packed A per group
  gdirect.c = 16, gdirect.m = 24, gdirect.group = 4, gdirect.pt = gdirect.pl = 1;
  gdirect.pb = gdirect.pr = 1;
  for (const ConvCase& cc : {direct, grouped, wino, gdirect}) {
    const runtime::Module good = Lowered(cc.Text(1, true));
    ASSERT_EQ(good.steps.size(), 1u);
    ASSERT_TRUE(runtime::CreateKernel(good.steps[0], good).ok());
    runtime::Module m = good;
    m.blobs[m.steps[0].blobs[0]].size -= 4;
    ExpectRefused(m, "", "short weight blob");
    m = good;
    m.blobs[m.steps[0].blobs[1]].size -= 4;
    ExpectRefused(m, "bias", "short bias blob");
    m = good;
    m.blobs[m.steps[0].blobs[0]].offset = m.weights_size;
    m.blobs[m.steps[0].blobs[0]].size = 64;
    ExpectRefused(m, "outside", "blob past the weights");
    m = good;
    m.steps[0].blobs[1] = 999;
    ExpectRefused(m, "does not exist", "missing blob");
    for (const char* key : {"m", "c", "kh", "groups", "block"}) {
      m = good;
      m.steps[0].params.ints[key] += 1;
      ExpectRefused(m, "", StrCat("param ", key, " + 1"));
    }
    m = good;
    m.steps[0].params.ints["h"] = -5;
    ExpectRefused(m, "'h'", "negative h");
    m = good;
    m.steps[0].params.ints.erase("kw");
    ExpectRefused(m, "'kw'", "missing kw");
    m = good;
    m.steps[0].params.strings["isa"] = "avx9";
    ExpectRefused(m, "avx9", "unknown isa");
    m = good;
    m.steps[0].params.strings["algorithm"] = "winograd7x7";
    ExpectRefused(m, "winograd7x7", "unknown algorithm");
    if (good.steps[0].params.strings.at("algorithm") != "winograd") {
      m = good;
      m.steps[0].params.strings["algorithm"] = "winograd";  // its blob is not 36 U matrices
      ExpectRefused(m, "", "winograd over another algorithm's weights");
    }
    m = good;
    m.steps[0].params.strings["algorithm"] =
        good.steps[0].params.strings.at("algorithm") == "direct_nchwc" ? "im2col_gemm"
                                                                       : "direct_nchwc";
    ExpectRefused(m, "", "another algorithm");
    m = good;
    m.steps[0].params.strings["activation"] = "tanh";
    ExpectRefused(m, "tanh", "unknown activation");
  }
}

TEST(NativeConvGemmHostile, GemmBlobsAndParamsThatLie) {
  GemmCase gc;
  gc.c_dims = {9};
  const runtime::Module good = Lowered(gc.Text(true));
  ASSERT_TRUE(runtime::CreateKernel(good.steps.at(0), good).ok());
  runtime::Module m = good;
  m.blobs[m.steps[0].blobs[0]].size -= 4;
  ExpectRefused(m, "bytes", "short packed B");
  m = good;
  m.blobs[m.steps[0].blobs[1]].size = 4;
  ExpectRefused(m, "bias", "short bias");
  for (const char* key : {"k", "n", "panel"}) {
    m = good;
    m.steps[0].params.ints[key] += 1;
    ExpectRefused(m, "", StrCat("param ", key, " + 1"));
  }
  m = good;
  m.steps[0].params.ints["k"] = int64_t{1} << 40;
  ExpectRefused(m, "'k'", "huge k");
  m = good;
  m.steps[0].params.ints["has_bias"] = 0;
  ExpectRefused(m, "blobs", "bias blob not announced");
}

TEST(NativeConvGemmHostile, WrongInputShapesAreErrorsNamingTheStep) {
  ConvCase cc;
  const runtime::Module conv = Lowered(cc.Text(1, true));
  auto kernel = runtime::CreateKernel(conv.steps.at(0), conv);
  ASSERT_TRUE(kernel.ok()) << kernel.status().message();
  const runtime::Dims wrong{1, cc.c + 1, cc.h, cc.w};
  const runtime::Dims* in[] = {&wrong};
  std::vector<std::optional<runtime::Dims>> out;
  Status s = (*kernel)->InferShapes(in, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'conv'"), std::string::npos) << s.message();

  GemmCase gc;
  const runtime::Module gemm = Lowered(gc.Text(true));
  kernel = runtime::CreateKernel(gemm.steps.at(0), gemm);
  ASSERT_TRUE(kernel.ok()) << kernel.status().message();
  const runtime::Dims bad_k{gc.m, gc.k + 1};
  const runtime::Dims* in2[] = {&bad_k};
  s = (*kernel)->InferShapes(in2, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'gemm'"), std::string::npos) << s.message();
}

// The whole path: lower::Lower, a .kiln file, its mapping as the kernels' weights, a session.
TEST(NativeConvGemm, ThroughLowerFileAndSession) {
  const std::string text = R"(graph main (opsets ai.onnx=13 kiln=1)
  input  %x: float32[1,16,6,6]
  const  %w: float32[20,16,3,3] = random(seed=3)
  const  %b: float32[20] = random(seed=5)
  const  %m: float32[6,5] = random(seed=6)
  %c = FusedConv@kiln(%x, %w, %b) {kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"} : float32[1,20,6,6]  # conv
  %y = MatMul(%c, %m) : float32[1,20,6,5]  # matmul
  output %y: float32[1,20,6,5]
)";
  const std::string ref_text = R"(graph main (opsets ai.onnx=13)
  input  %x: float32[1,16,6,6]
  const  %w: float32[20,16,3,3] = random(seed=3)
  const  %b: float32[20] = random(seed=5)
  const  %m: float32[6,5] = random(seed=6)
  %c = Conv(%x, %w, %b) {kernel_shape=[3,3], pads=[1,1,1,1]} : float32[1,20,6,6]  # conv
  %r = Relu(%c) : float32[1,20,6,6]  # relu
  %y = MatMul(%r, %m) : float32[1,20,6,5]  # matmul
  output %y: float32[1,20,6,5]
)";
  auto g = Parse(text);
  ASSERT_TRUE(g);
  lower::LowerReport report;
  auto module = lower::Lower(*g, lower::LowerOptions{}, &report);
  ASSERT_TRUE(module.ok()) << module.status().message();
  EXPECT_EQ(report.native_steps, 2u);
  EXPECT_EQ(report.reference_steps, 0u);
  const std::string path =
      ::testing::TempDir() + "native_conv_gemm_" + std::to_string(::getpid()) + ".kiln";
  ASSERT_TRUE(runtime::SaveModule(*module, path).ok());
  auto loaded = runtime::LoadModule(path);
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto compiled = runtime::CompiledModel::Create(*loaded);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  runtime::SessionOptions options;
  options.threads = 2;
  auto session = runtime::Session::Create(*compiled, options);
  ASSERT_TRUE(session.ok()) << session.status().message();
  const Tensor x = RandomTensor({1, 16, 6, 6}, 11);
  const Tensor* inputs[] = {&x};
  Status s = (*session)->Run(inputs);
  ASSERT_TRUE(s.ok()) << s.message();
  ExpectClose((*session)->output(0), Reference(ref_text, x), 16 * 9 * 6, "", "conv+matmul");
}

}  // namespace
}  // namespace kiln
