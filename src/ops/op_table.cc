#include <algorithm>
#include <map>
#include <set>

#include "ops/families.h"
#include "ops/op_registry.h"

namespace kiln::ops {

std::span<const OpDef> AllOps() {
  static const std::vector<OpDef> table = [] {
    std::vector<OpDef> all;
    for (std::span<const OpDef> family :
         {UnaryOps(), BinaryOps(), ConvOps(), PoolOps(), NormOps(), MatMulOps(), ShapeOps(),
          MovementOps(), IndexingOps(), ReduceOps(), SoftmaxOps(), SortOps(), QuantOps(),
          ResizeOps(), ControlFlowOps(), RnnOps(), SignalOps(), StringOps(), TrainingOps(),
          LinalgOps(), RandomOps(), SequenceOps(), KilnOps()}) {
      all.insert(all.end(), family.begin(), family.end());
    }
    return all;
  }();
  return table;
}

const OpDef* FindOp(std::string_view domain, std::string_view op_type) {
  if (domain == "ai.onnx") domain = "";
  for (const OpDef& def : AllOps())
    if (def.domain == domain && def.op_type == op_type) return &def;
  return nullptr;
}

namespace {
void CollectUnsupported(const ir::Graph& g,
                        std::map<std::string, std::vector<std::string>>* missing) {
  for (const auto& node : g.nodes()) {
    if (FindOp(node->domain, node->op_type) == nullptr) {
      std::string key = StrCat(node->op_type, node->domain.empty() ? "" : "@", node->domain,
                               " (opset ", node->opset, ")");
      (*missing)[key].push_back(node->name);
    }
    for (const auto& [name, attr] : node->attrs) {
      if (attr.g) CollectUnsupported(*attr.g, missing);
      for (const auto& sub : attr.graphs)
        if (sub) CollectUnsupported(*sub, missing);
    }
  }
}
}  // namespace

Status CheckSupported(const ir::Graph& graph) {
  std::map<std::string, std::vector<std::string>> missing;
  CollectUnsupported(graph, &missing);
  if (missing.empty()) return Status::Ok();
  std::string msg = "unsupported ops: ";
  bool first = true;
  for (const auto& [op, nodes] : missing) {
    msg += StrCat(first ? "" : "; ", op, " at node", nodes.size() > 1 ? "s " : " ");
    first = false;
    for (size_t i = 0; i < nodes.size() && i < 5; ++i) msg += StrCat(i ? ", '" : "'", nodes[i], "'");
    if (nodes.size() > 5) msg += StrCat(" and ", nodes.size() - 5, " more");
  }
  return Status::Error(msg);
}

}  // namespace kiln::ops
