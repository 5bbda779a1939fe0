#include "frontend/onnx/normalize.h"

#include <string_view>

namespace kiln::onnx {
namespace {

struct AttrToInput {
  std::string_view op_type;
  int before_opset;  // nodes of opset < this are rewritten
  std::string_view attr;
  size_t input_index;
  enum class Type { kInt64s, kFloat32s, kFloat32Scalar, kInt64Scalar1D } type;
};

// One row per form change, in ONNX's own order of history.
constexpr AttrToInput kMoves[] = {
    {"Slice", 10, "starts", 1, AttrToInput::Type::kInt64s},
    {"Slice", 10, "ends", 2, AttrToInput::Type::kInt64s},
    {"Slice", 10, "axes", 3, AttrToInput::Type::kInt64s},
    {"TopK", 10, "k", 1, AttrToInput::Type::kInt64Scalar1D},
    {"Upsample", 9, "scales", 1, AttrToInput::Type::kFloat32s},
    {"Pad", 11, "pads", 1, AttrToInput::Type::kInt64s},
    {"Pad", 11, "value", 2, AttrToInput::Type::kFloat32Scalar},
    {"Clip", 11, "min", 1, AttrToInput::Type::kFloat32Scalar},
    {"Clip", 11, "max", 2, AttrToInput::Type::kFloat32Scalar},
    {"Split", 13, "split", 1, AttrToInput::Type::kInt64s},
    {"Squeeze", 13, "axes", 1, AttrToInput::Type::kInt64s},
    {"Unsqueeze", 13, "axes", 1, AttrToInput::Type::kInt64s},
    {"ReduceSum", 13, "axes", 1, AttrToInput::Type::kInt64s},
    {"ReduceMean", 18, "axes", 1, AttrToInput::Type::kInt64s},
    {"ReduceMax", 18, "axes", 1, AttrToInput::Type::kInt64s},
    {"ReduceMin", 18, "axes", 1, AttrToInput::Type::kInt64s},
    {"ReduceProd", 18, "axes", 1, AttrToInput::Type::kInt64s},
    {"ReduceL1", 18, "axes", 1, AttrToInput::Type::kInt64s},
    {"ReduceL2", 18, "axes", 1, AttrToInput::Type::kInt64s},
    {"ReduceLogSum", 18, "axes", 1, AttrToInput::Type::kInt64s},
    {"ReduceLogSumExp", 18, "axes", 1, AttrToInput::Type::kInt64s},
    {"ReduceSumSquare", 18, "axes", 1, AttrToInput::Type::kInt64s},
};

Expected<Tensor> AttrTensor(const ir::Node& node, const ir::Attribute& a, AttrToInput::Type type) {
  using K = ir::Attribute::Kind;
  switch (type) {
    case AttrToInput::Type::kInt64s:
      if (a.kind != K::kInts) break;
      return Tensor::FromVector(a.ints, {static_cast<int64_t>(a.ints.size())});
    case AttrToInput::Type::kFloat32s:
      if (a.kind != K::kFloats) break;
      return Tensor::FromVector(a.floats, {static_cast<int64_t>(a.floats.size())});
    case AttrToInput::Type::kFloat32Scalar:
      if (a.kind != K::kFloat) break;
      return Tensor::Scalar(a.f);
    case AttrToInput::Type::kInt64Scalar1D:
      if (a.kind != K::kInt) break;
      return Tensor::FromVector(std::vector<int64_t>{a.i}, {1});
  }
  return Status::Error(node.Where(), "attribute has the wrong type (", AttrKindName(a.kind), ")");
}

}  // namespace

Status NormalizeOpsets(ir::Graph& graph) {
  for (const auto& node_ptr : graph.nodes()) {
    ir::Node& node = *node_ptr;
    if (!node.domain.empty()) continue;
    for (const AttrToInput& m : kMoves) {
      if (node.op_type != m.op_type || node.opset >= m.before_opset) continue;
      auto it = node.attrs.find(std::string(m.attr));
      if (it == node.attrs.end()) continue;
      auto t = AttrTensor(node, it->second, m.type);
      if (!t.ok()) return t.status();
      // Old Pad/Clip carry float attributes whatever X's type: match X so kernels see one type.
      if (m.type == AttrToInput::Type::kFloat32Scalar && node.has_input(0) &&
          node.inputs[0]->type.dtype == DType::kFloat64)
        t = Tensor::Scalar(static_cast<double>(t->data<float>()[0]));
      std::string name = StrCat(node.name, "__", m.attr);
      for (int k = 0; graph.FindValue(name) != nullptr; ++k) name = StrCat(node.name, "__", m.attr, k);
      KILN_ASSIGN_OR_RETURN(ir::Value * v, graph.AddValue(name, ir::ValueType::Of(t->dtype(), t->dims())));
      v->constant = std::move(t).value();
      if (node.inputs.size() <= m.input_index) node.inputs.resize(m.input_index + 1, nullptr);
      node.inputs[m.input_index] = v;
      node.attrs.erase(it);
    }
  }
  return Status::Ok();
}

}  // namespace kiln::onnx
