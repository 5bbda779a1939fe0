#include "ops/infer_util.h"

#include <algorithm>

namespace kiln::ops {

void SetOutputType(ir::Node& node, size_t i, ValueType type) {
  if (node.has_output(i)) node.outputs[i]->type = std::move(type);
}

Status InferSameAsInput0(ir::Node& node) {
  if (!node.has_input(0)) return Status::Error(node.Where(), "input 0 is missing");
  SetOutputType(node, 0, node.inputs[0]->type);
  return Status::Ok();
}

Status InferDTypeOfInput0(ir::Node& node) {
  if (!node.has_input(0)) return Status::Error(node.Where(), "input 0 is missing");
  ValueType t;
  t.dtype = node.inputs[0]->type.dtype;
  SetOutputType(node, 0, t);
  return Status::Ok();
}

Expected<std::optional<std::vector<Dim>>> BroadcastShapes(const ir::Node& node) {
  size_t rank = 0;
  for (const ir::Value* v : node.inputs) {
    if (v == nullptr) continue;
    if (!v->type.shape) return std::optional<std::vector<Dim>>();
    rank = std::max(rank, v->type.shape->size());
  }
  std::vector<Dim> out(rank, Dim::Static(1));
  for (const ir::Value* v : node.inputs) {
    if (v == nullptr) continue;
    const auto& s = *v->type.shape;
    for (size_t k = 0; k < s.size(); ++k) {
      Dim& o = out[rank - s.size() + k];
      const Dim& d = s[k];
      if (d.is_static() && d.value == 1) continue;
      if (o.is_static() && o.value == 1) {
        o = d;
      } else if (d.is_static() && o.is_static() && d.value != o.value) {
        return Status::Error(node.Where(), "shapes of '", node.inputs[0]->name, "' ",
                             node.inputs[0]->type.ToString(), " and '", v->name, "' ",
                             v->type.ToString(), " do not broadcast");
      } else if (!(d == o)) {
        if (!o.is_static() && d.is_static()) o = d;  // the static size wins (the other must be 1 or equal)
        else if (!(o.is_static())) o = Dim::Unknown();
      }
    }
  }
  return std::optional<std::vector<Dim>>(std::move(out));
}

Expected<int64_t> NormalizeAxis(const ir::Node& node, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return Status::Error(node.Where(), "axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

const Tensor* ConstantInput(const ir::Node& node, size_t i) {
  if (!node.has_input(i) || !node.inputs[i]->constant) return nullptr;
  return &*node.inputs[i]->constant;
}

int64_t InputRank(const ir::Node& node, size_t i) {
  if (!node.has_input(i) || !node.inputs[i]->type.shape) return -1;
  return static_cast<int64_t>(node.inputs[i]->type.shape->size());
}

const std::vector<Dim>* InputShape(const ir::Node& node, size_t i) {
  if (!node.has_input(i) || !node.inputs[i]->type.shape) return nullptr;
  return &*node.inputs[i]->type.shape;
}

DType InputDType(const ir::Node& node, size_t i) {
  return node.has_input(i) ? node.inputs[i]->type.dtype : DType::kUndefined;
}

Status RequireInput(const ir::Node& node, size_t i, const char* what) {
  if (!node.has_input(i))
    return Status::Error(node.Where(), "input ", i, " (", what, ") is missing");
  return Status::Ok();
}

Status RequireInputs(const ir::Node& node, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!node.has_input(i)) return Status::Error(node.Where(), "input ", i, " is missing");
  return Status::Ok();
}

Expected<const Tensor*> Input(RunContext& ctx, size_t i, const char* what) {
  const Tensor* t = ctx.input(i);
  if (t == nullptr) return ctx.Error("input ", i, " (", what, ") is missing");
  return t;
}

std::optional<std::vector<int64_t>> StaticDimsBatchAsOne(const ValueType& t) {
  if (!t.shape || t.shape->empty()) return std::nullopt;
  std::vector<int64_t> dims;
  for (size_t i = 0; i < t.shape->size(); ++i) {
    const Dim& d = (*t.shape)[i];
    if (!d.is_static() && i != 0) return std::nullopt;
    dims.push_back(d.is_static() ? d.value : 1);
  }
  return dims;
}

}  // namespace kiln::ops
