// The harness of the native-step tests: lowers a graph node by node through the eltwise,
// pool and tensor families with a small fake LowerContext (independent of lower.cc), runs the
// steps with kernels from runtime::CreateKernel on a two-thread pool, and compares every output
// with interp::Run on the same random inputs, out of place and with each in-place pair a
// kernel offers sharing one buffer.
#pragma once

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

namespace kiln::native_test {

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
inline std::unique_ptr<Lowered> Lower(const std::string& text) {
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

inline ThreadPool* Pool() {
  static auto pool = ThreadPool::Create(2);
  return pool->get();
}

// Runs the lowered steps on `inputs`; with `in_place`, every pair a kernel offers shares a
// buffer (a copy of the input, so the graph's own input stays intact for later steps).
inline Status Execute(const Lowered& l, const interp::NamedTensors& inputs, bool in_place,
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
inline interp::NamedTensors Inputs(const ir::Graph& g, uint32_t seed, bool positive,
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

inline void ExpectClose(const Tensor& got, const Tensor& want, const std::string& what) {
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
inline void Check(const std::string& text, int claimed = -1, bool positive = false,
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

inline std::string Dims(const std::vector<int64_t>& d) { return DimsToString(d); }

// One node on one float32 input `x` of `dims`; `node` is the text after "%y = ".
inline std::string OneNode(const std::string& node, const std::string& dims,
                    const std::string& consts = "",
                    const std::string& opsets = "ai.onnx=20 kiln=1") {
  return "graph main (opsets " + opsets + ")\n  input  %x: float32" + dims + "\n" + consts +
         "  %y = " + node + " : float32[*]  # n\n  output %y: float32[*]\n";
}

// One node on input %x of type `xt` (e.g. "int64[2,3]").
inline std::string Movement(const std::string& xt, const std::string& node,
                     const std::string& consts = "") {
  return "graph main (opsets ai.onnx=13)\n  input  %x: " + xt + "\n" + consts + "  %y = " + node +
         " : " + xt.substr(0, xt.find('[')) +
         "[*]  # n\n  output %y: " + xt.substr(0, xt.find('[')) + "[*]\n";
}

}  // namespace kiln::native_test
