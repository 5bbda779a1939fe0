#include "passes/recognize_activations.h"

#include <cmath>
#include <optional>

#include "passes/graph_edit.h"

namespace kiln::passes {
namespace {

bool Is(const ir::Node* n, const char* op) {
  return n && n->domain.empty() && n->op_type == op && n->outputs.size() == 1 && n->has_output(0);
}

// Exported constants are rounded to float32 (and some exporters write 0.7071 rather than
// 1/sqrt(2) to all digits), so constants match within a small relative tolerance.
bool Near(double v, double target) { return std::fabs(v - target) <= 1e-5 * std::fabs(target); }

// The graph and who reads what; rebuilt after every rewrite so reader counts stay exact.
struct Matcher {
  ir::Graph& g;
  std::unordered_map<const ir::Value*, std::vector<ir::Node*>> users;
  const std::set<std::string>& outer;

  // The node that alone reads v (once), when v is neither a graph output nor read by a subgraph:
  // only then may a rewrite remove v.
  ir::Node* OnlyReader(const ir::Value* v) const {
    if (v == nullptr || IsGraphOutput(g, v) || outer.count(v->name)) return nullptr;
    auto it = users.find(v);
    return it != users.end() && it->second.size() == 1 ? it->second[0] : nullptr;
  }
  bool Private(const ir::Value* v, const ir::Node* reader) const { return OnlyReader(v) == reader; }
};

bool IsFloatValue(const ir::Value* v) { return v && IsFloat(v->type.dtype); }

// The value of n's input i when it is a one-element float constant that cannot broadcast `x`
// to a higher rank (so the op's output keeps x's shape).
std::optional<double> ScalarConstant(const ir::Node& n, size_t i, const ir::Value* x) {
  if (x == nullptr || !n.has_input(i) || !n.inputs[i]->constant) return std::nullopt;
  const Tensor& c = *n.inputs[i]->constant;
  if (!IsFloat(c.dtype()) || c.numel() != 1) return std::nullopt;
  const int64_t x_rank = x->type.shape ? static_cast<int64_t>(x->type.shape->size()) : -1;
  if (c.rank() > 0 && c.rank() > x_rank) return std::nullopt;
  return c.AsDouble(0);
}

// For a binary node n reading `x` and a scalar constant (either order): the constant.
std::optional<double> ScalarOperand(const ir::Node& n, const ir::Value* x) {
  if (n.inputs.size() != 2) return std::nullopt;
  for (size_t k = 0; k < 2; ++k)
    if (n.inputs[k] == x) return ScalarConstant(n, 1 - k, x);
  return std::nullopt;
}

// n's input other than `v` (n has two inputs, one of which is v), or nullptr.
ir::Value* OtherInput(const ir::Node& n, const ir::Value* v) {
  if (n.inputs.size() != 2) return nullptr;
  if (n.inputs[0] == v) return n.inputs[1];
  if (n.inputs[1] == v) return n.inputs[0];
  return nullptr;
}

// Turns `last` (which already produces the pattern's output) into kiln.<op>(x).
void Become(ir::Graph& g, ir::Node& last, const char* op, ir::Value* x) {
  if (g.opset("kiln") == 0) g.opset_imports["kiln"] = 1;
  last.op_type = op;
  last.domain = "kiln";
  last.opset = g.opset("kiln");
  last.inputs = {x};
  last.attrs.clear();
}

// Mul(x, Sigmoid(x)) -> kiln.Silu(x); Mul(x, HardSigmoid(x){1/6, 1/2}) -> kiln.HardSwish(x).
bool TryGate(Matcher& m, ir::Node& mul, std::unordered_set<const ir::Node*>* dead) {
  if (!Is(&mul, "Mul") || mul.inputs.size() != 2) return false;
  for (size_t k = 0; k < 2; ++k) {
    ir::Value* x = mul.inputs[1 - k];
    ir::Node* gate = mul.inputs[k] ? mul.inputs[k]->producer : nullptr;
    if (!IsFloatValue(x) || !gate || gate->inputs.size() != 1 || gate->inputs[0] != x ||
        !m.Private(mul.inputs[k], &mul))
      continue;
    const char* op = nullptr;
    if (Is(gate, "Sigmoid")) {
      op = "Silu";
    } else if (Is(gate, "HardSigmoid")) {
      ir::AttrReader r(*gate);
      const float alpha = r.Float("alpha", 0.2f), beta = r.Float("beta", 0.5f);
      if (r.status().ok() && Near(alpha, 1.0 / 6.0) && Near(beta, 0.5)) op = "HardSwish";
    }
    if (op == nullptr) continue;
    dead->insert(gate);
    Become(m.g, mul, op, x);
    return true;
  }
  return false;
}

// torch's erf GELU, triggered at the Erf:
//   d = Div(x, sqrt 2) | Mul(x, 1/sqrt 2);  e = Erf(d);  a = Add(e, 1)
//   then 0.5 * x * a as Mul(Mul(x, a), 0.5), Mul(Mul(x, 0.5), a) or Mul(Mul(a, 0.5), x),
// every Mul and Add in either operand order.
bool TryGelu(Matcher& m, ir::Node& erf, std::unordered_set<const ir::Node*>* dead) {
  if (!Is(&erf, "Erf") || erf.inputs.size() != 1) return false;
  ir::Node* scale = erf.inputs[0] ? erf.inputs[0]->producer : nullptr;
  if (!scale || !m.Private(erf.inputs[0], &erf) || scale->inputs.size() != 2) return false;
  ir::Value* x = scale->inputs[0];
  std::optional<double> c;
  if (Is(scale, "Div")) {
    c = ScalarConstant(*scale, 1, x);
    if (!c || !Near(*c, std::sqrt(2.0))) return false;
  } else if (Is(scale, "Mul")) {
    if (scale->inputs[0] && scale->inputs[0]->constant) x = scale->inputs[1];
    c = ScalarOperand(*scale, x);
    if (!c || !Near(*c, std::sqrt(0.5))) return false;
  } else {
    return false;
  }
  if (!IsFloatValue(x)) return false;

  ir::Node* add = m.OnlyReader(erf.outputs[0]);
  if (!Is(add, "Add")) return false;
  c = ScalarOperand(*add, erf.outputs[0]);
  if (!c || !Near(*c, 1.0)) return false;
  ir::Node* m1 = m.OnlyReader(add->outputs[0]);
  if (!Is(m1, "Mul")) return false;
  ir::Value* other = OtherInput(*m1, add->outputs[0]);
  if (other == nullptr) return false;

  ir::Node* last = nullptr;
  ir::Node* half_x = other->producer;
  if (other == x) {  // Mul(Mul(x, a), 0.5)
    ir::Node* m2 = m.OnlyReader(m1->outputs[0]);
    if (!Is(m2, "Mul")) return false;
    c = ScalarOperand(*m2, m1->outputs[0]);
    if (!c || !Near(*c, 0.5)) return false;
    last = m2;
    dead->insert(m1);
  } else if (Is(half_x, "Mul") && m.Private(other, m1)) {  // Mul(Mul(x, 0.5), a)
    c = ScalarOperand(*half_x, x);
    if (!c || !Near(*c, 0.5)) return false;
    last = m1;
    dead->insert(half_x);
  } else {  // Mul(Mul(a, 0.5), x)
    c = ScalarConstant(*m1, m1->inputs[0] == other ? 0 : 1, x);
    if (!c || !Near(*c, 0.5)) return false;
    ir::Node* m2 = m.OnlyReader(m1->outputs[0]);
    if (!Is(m2, "Mul") || OtherInput(*m2, m1->outputs[0]) != x) return false;
    last = m2;
    dead->insert(m1);
  }
  dead->insert(scale);
  dead->insert(&erf);
  dead->insert(add);
  Become(m.g, *last, "Gelu", x);
  return true;
}

Expected<bool> Recognize(ir::Graph& g) {
  return RewriteOneAtATime<Matcher>(
      g, [](Matcher& m, ir::Node& n, std::unordered_set<const ir::Node*>* dead) {
        return TryGate(m, n, dead) || TryGelu(m, n, dead);
      });
}

class RecognizeActivations : public Pass {
 public:
  const char* name() const override { return "recognize_activations"; }
  Expected<bool> Run(ir::Graph& graph) const override { return ForEachGraph(graph, Recognize); }
};

}  // namespace

std::unique_ptr<Pass> CreateRecognizeActivationsPass() {
  return std::make_unique<RecognizeActivations>();
}

}  // namespace kiln::passes
