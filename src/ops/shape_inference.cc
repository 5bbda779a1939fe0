#include "ops/shape_inference.h"

#include "ops/op_registry.h"

namespace kiln::ops {
namespace {

// Keeps what the model declared where inference knows less (unknown rank, unknown dims).
ir::ValueType Merge(const ir::ValueType& declared, const ir::ValueType& inferred) {
  ir::ValueType out = inferred;
  if (out.dtype == DType::kUndefined) out.dtype = declared.dtype;
  if (out.is_container()) {  // no shape: what the items are is merged instead
    if (declared.dtype == out.dtype && declared.elem)
      out.elem = std::make_shared<const ir::ValueType>(
          out.elem ? Merge(*declared.elem, *out.elem) : *declared.elem);
    return out;
  }
  if (!out.shape) {
    out.shape = declared.shape;
  } else if (declared.shape && declared.shape->size() == out.shape->size()) {
    for (size_t i = 0; i < out.shape->size(); ++i) {
      ir::Dim& d = (*out.shape)[i];
      if (!d.is_static() && d.symbol.empty()) d = (*declared.shape)[i];
    }
  }
  return out;
}

}  // namespace

Status InferShapes(ir::Graph& graph) {
  for (const auto& node : graph.nodes()) {
    const OpDef* def = FindOp(node->domain, node->op_type);
    if (def == nullptr || def->infer == nullptr) continue;
    std::vector<ir::ValueType> declared;
    for (ir::Value* v : node->outputs) declared.push_back(v ? v->type : ir::ValueType{});
    Status st = def->infer(*node);
    if (!st.ok()) return st;
    for (size_t i = 0; i < node->outputs.size(); ++i)
      if (node->outputs[i]) node->outputs[i]->type = Merge(declared[i], node->outputs[i]->type);
    for (const auto& [name, attr] : node->attrs) {
      if (attr.g) KILN_RETURN_IF_ERROR(InferShapes(*attr.g));
      for (const auto& sub : attr.graphs)
        if (sub) KILN_RETURN_IF_ERROR(InferShapes(*sub));
    }
  }
  return Status::Ok();
}

}  // namespace kiln::ops
