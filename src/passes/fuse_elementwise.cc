#include "passes/fuse_elementwise.h"

#include <cmath>
#include <limits>
#include <optional>

#include "passes/graph_edit.h"

namespace kiln::passes {
namespace {

bool IsOp(const ir::Node& n, const char* domain, const char* op) {
  return n.domain == domain && n.op_type == op;
}

bool IsFloat32(const ir::Value* v) { return v && v->type.dtype == DType::kFloat32; }

// One step of a kiln.FusedElementwise (the encoding is documented in src/ops/kiln_ops.cc): the
// op name, its params, and the value it reads.
struct Step {
  const char* name;
  std::vector<float> params;
  ir::Value* input;
};

// A one-element float32 constant input i of n that cannot raise the rank of `x` by broadcasting.
std::optional<float> ScalarConstant(const ir::Node& n, size_t i, const ir::Value* x) {
  if (x == nullptr || !n.has_input(i) || !n.inputs[i]->constant) return std::nullopt;
  const Tensor& c = *n.inputs[i]->constant;
  if (c.dtype() != DType::kFloat32 || c.numel() != 1) return std::nullopt;
  const int64_t x_rank = x->type.shape ? static_cast<int64_t>(x->type.shape->size()) : -1;
  if (c.rank() > 0 && c.rank() > x_rank) return std::nullopt;
  return c.data<float>()[0];
}

// Mul/Add/Sub/Div of a tensor by a scalar constant, as MulScalar/AddScalar. Sub(x, c) is
// x + (-c) exactly; Div(x, c) is x * (1/c) exactly only when c is a power of two.
std::optional<Step> ScalarStep(const ir::Node& n) {
  const bool mul = IsOp(n, "", "Mul"), add = IsOp(n, "", "Add");
  const bool sub = IsOp(n, "", "Sub"), div = IsOp(n, "", "Div");
  if (!(mul || add || sub || div) || n.inputs.size() != 2) return std::nullopt;
  for (size_t k = 0; k < 2; ++k) {
    if ((sub || div) && k == 1) break;  // c - x and c / x are not of this form
    ir::Value* x = n.inputs[k];
    if (!IsFloat32(x) || x->constant) continue;
    std::optional<float> c = ScalarConstant(n, 1 - k, x);
    if (!c) continue;
    if (mul || add) return Step{mul ? "MulScalar" : "AddScalar", {*c}, x};
    if (sub) return Step{"AddScalar", {-*c}, x};
    int exp = 0;
    const float mantissa = std::frexp(*c, &exp);
    const float inv = 1.0f / *c;
    if (std::fabs(mantissa) != 0.5f || !std::isnormal(inv)) return std::nullopt;
    return Step{"MulScalar", {inv}, x};
  }
  return std::nullopt;
}

// The step n computes, if n is a float32 unary elementwise op with compile-time parameters.
std::optional<Step> StepOf(const ir::Node& n) {
  if (n.outputs.size() != 1 || !n.has_output(0) || !n.has_input(0)) return std::nullopt;
  if (std::optional<Step> s = ScalarStep(n)) return s;
  ir::Value* x = n.inputs[0];
  if (!IsFloat32(x)) return std::nullopt;
  ir::AttrReader r(n);
  std::optional<Step> s;
  if (n.domain.empty() && n.inputs.size() == 1) {
    for (const char* op :
         {"Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Sqrt", "Erf", "HardSwish"})
      if (n.op_type == op) s = Step{op, {}, x};
    if (n.op_type == "LeakyRelu") s = Step{"LeakyRelu", {r.Float("alpha", 0.01f)}, x};
    if (n.op_type == "HardSigmoid")
      s = Step{"HardSigmoid", {r.Float("alpha", 0.2f), r.Float("beta", 0.5f)}, x};
  }
  if (n.domain == "kiln" && n.inputs.size() == 1)
    for (const char* op : {"Silu", "HardSwish"})
      if (n.op_type == op) s = Step{op, {}, x};
  // The chain has the erf form of Gelu only.
  if ((n.domain.empty() || n.domain == "kiln") && n.op_type == "Gelu" && n.inputs.size() == 1 &&
      r.String("approximate", "none") == "none")
    s = Step{"Gelu", {}, x};
  if (IsOp(n, "", "Clip") && n.inputs.size() <= 3) {
    float bounds[2] = {std::numeric_limits<float>::lowest(), std::numeric_limits<float>::max()};
    for (size_t i = 1; i <= 2; ++i) {
      if (n.has_input(i)) {
        std::optional<float> b = ScalarConstant(n, i, x);
        if (!b || std::isnan(*b)) return std::nullopt;
        bounds[i - 1] = *b;
      } else if (r.Has(i == 1 ? "min" : "max")) {
        bounds[i - 1] = r.Float(i == 1 ? "min" : "max", 0);
      }
    }
    s = Step{"Clip", {bounds[0], bounds[1]}, x};
  }
  if (!r.status().ok()) return std::nullopt;
  return s;
}

// The activations fuse_conv_activation folds into a Conv/Gemm before them: a chain leaves them
// there when the pass runs first out of order (the pipeline runs fuse_conv_activation first).
bool EpilogueCandidate(const Step& s) {
  const std::string_view name = s.name;
  if (name != "Relu" && name != "Clip" && name != "Silu" && name != "HardSwish" && name != "Gelu")
    return false;
  const ir::Node* p = s.input->producer;
  return p && p->domain.empty() && (p->op_type == "Conv" || p->op_type == "Gemm");
}

struct Matcher {
  ir::Graph& g;
  std::unordered_map<const ir::Value*, std::vector<ir::Node*>> users;
  const std::set<std::string>& outer;

  // The node that alone reads v (once), when v is neither a graph output nor read by a subgraph.
  ir::Node* OnlyReader(const ir::Value* v) const {
    if (v == nullptr || IsGraphOutput(g, v) || outer.count(v->name)) return nullptr;
    auto it = users.find(v);
    return it != users.end() && it->second.size() == 1 ? it->second[0] : nullptr;
  }
};

// A chain starting at `head`: each next node is the only reader of the previous output and reads
// it as its data input. Two or more steps become one FusedElementwise in the last node's place.
bool TryChain(Matcher& m, ir::Node& head, std::unordered_set<const ir::Node*>* dead) {
  std::optional<Step> first = StepOf(head);
  if (!first || EpilogueCandidate(*first)) return false;
  std::vector<Step> steps = {*first};
  std::vector<ir::Node*> nodes = {&head};
  for (;;) {
    ir::Node* next = m.OnlyReader(nodes.back()->outputs[0]);
    std::optional<Step> s = next ? StepOf(*next) : std::nullopt;
    if (!s || s->input != nodes.back()->outputs[0]) break;
    steps.push_back(*s);
    nodes.push_back(next);
  }
  if (steps.size() < 2) return false;

  ir::Attribute ops, params;
  ops.kind = ir::Attribute::Kind::kStrings;
  params.kind = ir::Attribute::Kind::kFloats;
  for (const Step& s : steps) {
    ops.strings.push_back(s.name);
    params.floats.insert(params.floats.end(), s.params.begin(), s.params.end());
  }
  if (m.g.opset("kiln") == 0) m.g.opset_imports["kiln"] = 1;
  // The last node sits after every step, so it can stand for the chain.
  ir::Node& last = *nodes.back();
  last.op_type = "FusedElementwise";
  last.domain = "kiln";
  last.opset = m.g.opset("kiln");
  last.inputs = {first->input};
  last.attrs.clear();
  last.attrs["ops"] = ops;
  if (!params.floats.empty()) last.attrs["params"] = params;
  for (size_t i = 0; i + 1 < nodes.size(); ++i) dead->insert(nodes[i]);
  return true;
}

Expected<bool> Fuse(ir::Graph& g) {
  // Topological order meets a chain at its head first.
  return RewriteOneAtATime<Matcher>(
      g, [](Matcher& m, ir::Node& n, std::unordered_set<const ir::Node*>* dead) {
        return TryChain(m, n, dead);
      });
}

class FuseElementwise : public Pass {
 public:
  const char* name() const override { return "fuse_elementwise"; }
  Expected<bool> Run(ir::Graph& graph) const override { return ForEachGraph(graph, Fuse); }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseElementwisePass() { return std::make_unique<FuseElementwise>(); }

}  // namespace kiln::passes
