#include "passes/simplify_algebra.h"

#include "passes/graph_edit.h"

namespace kiln::passes {
namespace {

bool Is(const ir::Node* n, const char* op) { return n && n->domain.empty() && n->op_type == op; }
const Tensor* ConstantInput(const ir::Node& n, size_t i) {
  return n.has_input(i) && n.inputs[i]->constant ? &*n.inputs[i]->constant : nullptr;
}

// Every element of c equals v.
bool AllEqual(const Tensor& c, double v) {
  if (!IsFloat(c.dtype()) && !IsInteger(c.dtype())) return false;
  for (int64_t i = 0; i < c.numel(); ++i)
    if (c.AsDouble(i) != v) return false;
  return true;
}

// x op c has x's type: same dtype, and broadcasting c against x changes no dim of x.
bool BroadcastKeepsType(const ir::Value& x, const Tensor& c) {
  if (x.type.dtype != c.dtype() || !x.type.shape ||
      c.rank() > static_cast<int64_t>(x.type.shape->size()))
    return false;
  const std::vector<ir::Dim>& xs = *x.type.shape;
  for (int64_t k = 0; k < c.rank(); ++k) {
    const ir::Dim& d = xs[xs.size() - c.rank() + k];
    if (c.dim(k) != 1 && !(d.is_static() && d.value == c.dim(k))) return false;
  }
  return true;
}

// x * 1, 1 * x, x + 0, 0 + x, x - 0, x / 1.
ir::Value* NeutralOperand(const ir::Node& n) {
  const bool mul = Is(&n, "Mul"), add = Is(&n, "Add");
  if (!(mul || add || Is(&n, "Sub") || Is(&n, "Div")) || n.inputs.size() != 2) return nullptr;
  const double neutral = mul || Is(&n, "Div") ? 1.0 : 0.0;
  for (size_t k = 0; k < 2; ++k) {
    if (k == 0 && !(mul || add)) continue;  // 1 / x and 0 - x are not x
    const Tensor* c = ConstantInput(n, k);
    ir::Value* x = n.inputs[1 - k];
    if (c && x && AllEqual(*c, neutral) && BroadcastKeepsType(*x, *c)) return x;
  }
  return nullptr;
}

// Reshape's target dims for input dims `in` (0 copies, -1 infers), or empty if unresolvable.
std::vector<int64_t> ReshapeTarget(const std::vector<int64_t>& in,
                                   const std::vector<int64_t>& shape, bool allowzero) {
  std::vector<int64_t> out;
  int64_t known = 1, infer = -1, total = 1;
  for (int64_t d : in) total *= d;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d == 0 && !allowzero) {
      if (i >= in.size()) return {};
      d = in[i];
    }
    if (d == -1) {
      if (infer >= 0) return {};
      infer = static_cast<int64_t>(i);
    } else {
      known *= d;
    }
    out.push_back(d);
  }
  if (infer >= 0) {
    if (known == 0 || total % known) return {};
    out[infer] = total / known;
  }
  return out;
}

std::vector<int64_t> Perm(const ir::Node& t, int64_t rank) {
  ir::AttrReader attrs(t);
  std::vector<int64_t> perm = attrs.Ints("perm");
  if (perm.empty())
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  return perm;
}

// The value n's output equals, or nullptr.
ir::Value* Forwarded(const ir::Graph& g, const ir::Node& n) {
  if (n.outputs.empty() || !n.has_input(0)) return nullptr;
  ir::Value* x = n.inputs[0];
  if (Is(&n, "Identity")) return x;
  if (Is(&n, "Dropout")) {
    // Inference mode only: no training_mode input, or a constant false one; the mask unused.
    const Tensor* training = ConstantInput(n, 2);
    if (n.has_input(2) && (!training || training->numel() != 1 || training->AsDouble(0) != 0))
      return nullptr;
    if (n.has_output(1) && IsUsed(g, n.outputs[1])) return nullptr;
    return x;
  }
  if (Is(&n, "Cast")) {
    ir::AttrReader attrs(n);
    return x->type.dtype != DType::kUndefined &&
                   attrs.Int("to", -1) == static_cast<int64_t>(x->type.dtype)
               ? x
               : nullptr;
  }
  if (Is(&n, "Reshape")) {
    const Tensor* shape = ConstantInput(n, 1);
    if (!shape || !x->type.has_static_shape()) return nullptr;
    auto target = shape->ToInt64Vector("shape");
    if (!target.ok()) return nullptr;
    const std::vector<int64_t> in = x->type.static_dims();
    return ReshapeTarget(in, *target, ir::AttrReader(n).Int("allowzero", 0) != 0) == in ? x
                                                                                        : nullptr;
  }
  if (Is(&n, "Transpose") && Is(x->producer, "Transpose")) {
    const ir::Node& inner = *x->producer;
    ir::Value* src = inner.inputs.empty() ? nullptr : inner.inputs[0];
    if (!src) return nullptr;
    const int64_t rank = src->type.shape ? static_cast<int64_t>(src->type.shape->size()) : -1;
    const std::vector<int64_t> p1 = Perm(inner, rank),
                               p2 = Perm(n, static_cast<int64_t>(p1.size()));
    if (rank < 0 || p1.size() != p2.size()) return nullptr;
    for (size_t i = 0; i < p2.size(); ++i)
      if (p2[i] < 0 || p2[i] >= static_cast<int64_t>(p1.size()) ||
          p1[p2[i]] != static_cast<int64_t>(i))
        return nullptr;
    return src;
  }
  return NeutralOperand(n);
}

// Reshape(Reshape(x, s1), s2) reads x directly when s2 needs nothing of the middle shape.
bool SkipInnerReshape(ir::Node& n) {
  if (!Is(&n, "Reshape") || !n.has_input(0) || !Is(n.inputs[0]->producer, "Reshape")) return false;
  const Tensor* shape = ConstantInput(n, 1);
  if (!shape) return false;
  auto target = shape->ToInt64Vector("shape");
  if (!target.ok()) return false;
  const bool allowzero = ir::AttrReader(n).Int("allowzero", 0) != 0;
  for (int64_t d : *target)
    if (d == 0 && !allowzero) return false;  // 0 copies a dim of the middle shape
  ir::Node& inner = *n.inputs[0]->producer;
  if (!inner.has_input(0)) return false;
  n.inputs[0] = inner.inputs[0];
  return true;
}

Expected<bool> Simplify(ir::Graph& g) {
  bool changed = false;
  std::unordered_set<const ir::Node*> dead;
  // Topological order: a rewrite rewires later readers before they are visited, so chains
  // (Identity of Identity, Reshape of Reshape of Reshape) finish in one walk.
  for (auto& up : g.mutable_nodes()) {
    ir::Node& n = *up;
    changed = SkipInnerReshape(n) || changed;
    ir::Value* to = Forwarded(g, n);
    if (to == nullptr || !ReplaceAllUses(g, n.outputs[0], to)) continue;
    dead.insert(&n);
    changed = true;
  }
  EraseNodes(g, dead);
  return changed;
}

class SimplifyAlgebra : public Pass {
 public:
  const char* name() const override { return "simplify_algebra"; }
  // Recurses into subgraphs; a value a subgraph reads by name is never rewired (ReplaceAllUses).
  Expected<bool> Run(ir::Graph& graph) const override { return ForEachGraph(graph, Simplify); }
};

}  // namespace

std::unique_ptr<Pass> CreateSimplifyAlgebraPass() { return std::make_unique<SimplifyAlgebra>(); }

}  // namespace kiln::passes
