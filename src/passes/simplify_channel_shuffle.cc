#include "passes/simplify_channel_shuffle.h"

#include <algorithm>
#include <optional>

#include "passes/graph_edit.h"

namespace kiln::passes {
namespace {

bool Is(const ir::Node* n, const char* op) {
  return n && n->domain.empty() && n->op_type == op && n->outputs.size() == 1 && n->has_output(0);
}

std::optional<std::vector<int64_t>> StaticDims(const ir::Value* v) {
  if (v == nullptr || !v->type.has_static_shape()) return std::nullopt;
  return v->type.static_dims();
}

struct Matcher {
  ir::Graph& g;
  std::unordered_map<const ir::Value*, std::vector<ir::Node*>> users;
  const std::set<std::string>& outer;

  // Whether `reader` alone reads v (once) and v is neither a graph output nor read by a
  // subgraph: only then may the rewrite drop v.
  bool Private(const ir::Value* v, const ir::Node* reader) const {
    if (v == nullptr || IsGraphOutput(g, v) || outer.count(v->name)) return false;
    auto it = users.find(v);
    return it != users.end() && it->second.size() == 1 && it->second[0] == reader;
  }
};

// The Concat and Reshape before Transpose `tr` when the three are a channel shuffle of the
// Concat's inputs (see the header), or nullptrs.
std::pair<ir::Node*, ir::Node*> Shuffle(const Matcher& m, const ir::Node& tr) {
  const std::pair<ir::Node*, ir::Node*> none{nullptr, nullptr};
  if (!Is(&tr, "Transpose") || tr.inputs.size() != 1 || !tr.has_input(0)) return none;
  ir::AttrReader tr_attrs(tr);
  const std::vector<int64_t> want = {0, 2, 1, 3, 4};
  if (tr_attrs.Ints("perm") != want || !tr_attrs.status().ok()) return none;
  ir::Node* r = tr.inputs[0]->producer;
  if (!Is(r, "Reshape") || !r->has_input(0) || !m.Private(tr.inputs[0], &tr)) return none;
  ir::Node* c = r->inputs[0]->producer;
  if (!Is(c, "Concat") || !m.Private(r->inputs[0], r)) return none;
  const auto cd = StaticDims(c->outputs[0]);
  const auto rd = StaticDims(r->outputs[0]);
  if (!cd || !rd || cd->size() != 4 || rd->size() != 5) return none;
  ir::AttrReader c_attrs(*c);
  const int64_t axis = c_attrs.Int("axis", 0);
  if (!c_attrs.status().ok() || (axis != 1 && axis != -3)) return none;
  // [N, g*C, H, W] split into [N, g, C, H, W], with g the number of concatenated pieces, each
  // of C channels.
  const auto g = static_cast<int64_t>(c->inputs.size());
  const std::vector<int64_t> split = {(*cd)[0], g, (*rd)[2], (*cd)[2], (*cd)[3]};
  if (*rd != split || g < 2 || (*rd)[2] * g != (*cd)[1]) return none;
  for (const ir::Value* in : c->inputs) {
    const auto d = StaticDims(in);
    if (!d || d->size() != 4 || (*d)[1] != (*rd)[2] || in->type.dtype != c->outputs[0]->type.dtype)
      return none;
  }
  return {c, r};
}

Expected<bool> Simplify(ir::Graph& g) {
  if (g.opset("") < 13) return false;  // Unsqueeze's axes are an input from opset 13
  const std::set<std::string> outer = NamesReadBySubgraphs(g);
  bool changed = false;
  // One rewrite per scan, so the reader counts stay exact on the edited graph.
  for (bool hit = true; hit;) {
    hit = false;
    Matcher m{g, Users(g), outer};
    for (size_t at = 0; at < g.nodes().size() && !hit; ++at) {
      ir::Node& tr = *g.mutable_nodes()[at];
      auto [c, r] = Shuffle(m, tr);
      if (c == nullptr) continue;
      Tensor axes_t(DType::kInt64, {1});
      axes_t.data<int64_t>()[0] = 2;
      ir::Value* axes = AddConstant(g, c->name + "/shuffle_axes", std::move(axes_t));
      // The new nodes go where the Concat was: after its inputs, before the shuffle's readers.
      std::vector<std::unique_ptr<ir::Node>> added;
      std::vector<ir::Value*> pieces;
      for (ir::Value* in : c->inputs) {
        std::vector<int64_t> d = in->type.static_dims();
        d.insert(d.begin() + 2, 1);
        KILN_ASSIGN_OR_RETURN(ir::Value * u, g.AddValue(FreshName(g, in->name + "/shuffle_piece"),
                                                        ir::ValueType::Of(in->type.dtype, d)));
        auto n = std::make_unique<ir::Node>();
        n->op_type = "Unsqueeze";
        n->name = StrCat(c->name, "/shuffle_unsqueeze_", pieces.size());
        n->opset = g.opset("");
        n->inputs = {in, axes};
        n->outputs = {u};
        u->producer = n.get();
        pieces.push_back(u);
        added.push_back(std::move(n));
      }
      auto cat = std::make_unique<ir::Node>();
      cat->op_type = "Concat";
      cat->name = c->name;
      cat->opset = c->opset;
      ir::Attribute axis;
      axis.kind = ir::Attribute::Kind::kInt;
      axis.i = 2;
      cat->attrs["axis"] = axis;
      cat->inputs = pieces;
      cat->outputs = {tr.outputs[0]};
      tr.outputs[0]->producer = cat.get();
      tr.outputs[0] = nullptr;
      added.push_back(std::move(cat));
      auto& nodes = g.mutable_nodes();
      const auto pos = std::find_if(nodes.begin(), nodes.end(),
                                    [&](const auto& n) { return n.get() == c; });
      nodes.insert(pos, std::make_move_iterator(added.begin()), std::make_move_iterator(added.end()));
      const ir::Node* tr_ptr = &tr;
      EraseNodes(g, {c, r, tr_ptr});
      hit = changed = true;
    }
  }
  return changed;
}

class SimplifyChannelShuffle : public Pass {
 public:
  const char* name() const override { return "simplify_channel_shuffle"; }
  Expected<bool> Run(ir::Graph& graph) const override { return ForEachGraph(graph, Simplify); }
};

}  // namespace

std::unique_ptr<Pass> CreateSimplifyChannelShufflePass() {
  return std::make_unique<SimplifyChannelShuffle>();
}

}  // namespace kiln::passes
