#include "passes/infer_shapes.h"

#include "ir/printer.h"
#include "ops/shape_inference.h"

namespace kiln::passes {
namespace {

class InferShapesPass final : public Pass {
 public:
  const char* name() const override { return "infer_shapes"; }
  Expected<bool> Run(ir::Graph& graph) const override {
    // "Changed" is whether any value's type now prints differently.
    std::vector<std::string> before;
    for (const auto& v : graph.values()) before.push_back(ir::PrintType(v->type));
    KILN_RETURN_IF_ERROR(ops::InferShapes(graph));
    size_t i = 0;
    for (const auto& v : graph.values())
      if (i >= before.size() || ir::PrintType(v->type) != before[i++]) return true;
    return false;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateInferShapesPass() { return std::make_unique<InferShapesPass>(); }

}  // namespace kiln::passes
