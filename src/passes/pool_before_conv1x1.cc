#include "passes/pool_before_conv1x1.h"

#include <algorithm>

#include "passes/graph_edit.h"

namespace kiln::passes {
namespace {

bool AllEqual(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
}

bool NoPadding(ir::AttrReader& r) {
  const std::string auto_pad = r.String("auto_pad", "NOTSET");
  return (auto_pad == "NOTSET" || auto_pad == "VALID") && AllEqual(r.Ints("pads"), 0);
}

// The Conv: 1x1, unit strides and dilations, no padding, static 4-D X and 4-D W.
bool PointwiseConv(const ir::Node& c) {
  if (!c.domain.empty() || c.op_type != "Conv" || !c.has_input(0) || !c.has_input(1) ||
      c.outputs.size() != 1 || !c.has_output(0))
    return false;
  const ir::Value* x = c.inputs[0];
  const ir::Value* w = c.inputs[1];
  if (!x->type.has_static_shape() || x->type.static_dims().size() != 4 ||
      !w->type.has_static_shape())
    return false;
  const std::vector<int64_t> wd = w->type.static_dims();
  if (wd.size() != 4 || wd[2] != 1 || wd[3] != 1) return false;
  ir::AttrReader r(c);
  const bool ok = AllEqual(r.Ints("strides"), 1) && AllEqual(r.Ints("dilations"), 1) &&
                  NoPadding(r) && AllEqual(r.Ints("kernel_shape", {1, 1}), 1);
  return ok && r.status().ok();
}

// The AveragePool: 2-D, no padding, floor rounding; its output of static 4-D dims.
bool PlainAveragePool(const ir::Node& p) {
  if (!p.domain.empty() || p.op_type != "AveragePool" || !p.has_input(0) ||
      p.outputs.size() != 1 || !p.has_output(0))
    return false;
  const ir::Value* z = p.outputs[0];
  if (!z->type.has_static_shape() || z->type.static_dims().size() != 4) return false;
  ir::AttrReader r(p);
  const bool ok = r.Ints("kernel_shape").size() == 2 && NoPadding(r) &&
                  r.Int("ceil_mode", 0) == 0 && AllEqual(r.Ints("dilations"), 1);
  return ok && r.status().ok();
}

// A Pad that changes nothing (constant mode, every pad 0: PyTorch exports one before DenseNet's
// pools), so that the pool reads its input.
bool ZeroPad(const ir::Node& p) {
  if (!p.domain.empty() || p.op_type != "Pad" || !p.has_input(0) || p.outputs.size() != 1 ||
      !p.has_output(0))
    return false;
  ir::AttrReader r(p);
  if (r.String("mode", "constant") != "constant" || !r.status().ok()) return false;
  std::vector<int64_t> pads = r.Ints("pads");  // opset < 11
  if (p.has_input(1)) {
    const ir::Value* v = p.inputs[1];
    if (!v->constant || v->constant->dtype() != DType::kInt64) return false;
    const int64_t* d = v->constant->data<int64_t>();
    pads.assign(d, d + v->constant->numel());
  }
  return AllEqual(pads, 0);
}

Expected<bool> Rewrite(ir::Graph& g) {
  const std::set<std::string> outer = NamesReadBySubgraphs(g);
  const auto users = Users(g);
  bool changed = false;
  std::unordered_set<const ir::Node*> dead;
  auto& nodes = g.mutable_nodes();
  for (size_t at = 0; at < nodes.size(); ++at) {
    ir::Node& pool = *nodes[at];
    if (!PlainAveragePool(pool)) continue;
    // Whether v is read by `reader` alone, once, and by no graph output or subgraph.
    auto private_to = [&](const ir::Value* v, const ir::Node* reader) {
      if (IsGraphOutput(g, v) || outer.count(v->name)) return false;
      const auto it = users.find(v);
      return it != users.end() && it->second.size() == 1 && it->second[0] == reader;
    };
    ir::Value* y = pool.inputs[0];
    ir::Node* pad = nullptr;
    if (y->producer != nullptr && ZeroPad(*y->producer) && private_to(y, &pool)) {
      pad = y->producer;
      y = pad->inputs[0];
    }
    ir::Node* conv = y->producer;
    if (conv == nullptr || !PointwiseConv(*conv) || !private_to(y, pad ? pad : &pool)) continue;
    // X pooled: [N, C, OH, OW] with the pool's output pixels.
    ir::Value* x = conv->inputs[0];
    const std::vector<int64_t> xd = x->type.static_dims(), zd = pool.outputs[0]->type.static_dims();
    KILN_ASSIGN_OR_RETURN(
        ir::Value * xp,
        g.AddValue(FreshName(g, x->name + "/pooled"),
                   ir::ValueType::Of(x->type.dtype, {xd[0], xd[1], zd[2], zd[3]})));
    ir::Value* z = pool.outputs[0];
    pool.inputs[0] = x;
    pool.outputs[0] = xp;
    xp->producer = &pool;
    conv->inputs[0] = xp;
    conv->outputs[0] = z;
    z->producer = conv;
    y->producer = nullptr;  // read by nothing now; dead_code_elimination drops it
    // The pool now runs first: it takes the conv's place (X is ready there), the conv its own.
    const auto conv_pos = std::find_if(nodes.begin(), nodes.end(),
                                       [&](const auto& n) { return n.get() == conv; });
    std::iter_swap(conv_pos, nodes.begin() + static_cast<std::ptrdiff_t>(at));
    changed = true;
    if (pad) {
      // Nothing reads the Pad now; erased after the scan, as it shifts the node indices.
      dead.insert(pad);
    }
  }
  if (!dead.empty()) EraseNodes(g, dead);
  return changed;
}

class PoolBeforeConv1x1 : public Pass {
 public:
  const char* name() const override { return "pool_before_conv1x1"; }
  Expected<bool> Run(ir::Graph& graph) const override { return ForEachGraph(graph, Rewrite); }
};

}  // namespace

std::unique_ptr<Pass> CreatePoolBeforeConv1x1Pass() {
  return std::make_unique<PoolBeforeConv1x1>();
}

}  // namespace kiln::passes
