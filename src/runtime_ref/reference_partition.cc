#include "runtime_ref/reference_partition.h"

#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ops/op_registry.h"
#include "runtime/kernel_registry.h"

namespace kiln::runtime_ref {
namespace {

using runtime::Dims;

class ReferencePartition final : public runtime::StepKernel {
 public:
  explicit ReferencePartition(std::unique_ptr<ir::Graph> graph) : graph_(std::move(graph)) {}

  Status InferShapes(std::span<const Dims* const>,
                     std::vector<std::optional<Dims>>* outputs) const override {
    // The interpreter sizes what it computes; a partition's outputs are never planned.
    for (auto& o : *outputs) o.reset();
    return Status::Ok();
  }

  Status Run(const runtime::StepArgs& args) const override {
    if (args.inputs.size() != graph_->inputs.size())
      return Status::Error("reference partition has ", graph_->inputs.size(), " inputs, ",
                           args.inputs.size(), " were bound");
    interp::NamedTensors named;
    for (size_t i = 0; i < args.inputs.size(); ++i)
      if (args.inputs[i]) named.emplace(graph_->inputs[i]->name, *args.inputs[i]);
    interp::RunOptions options;
    // The session checked the model's inputs; inside a partition the declared dims are only
    // inference's guess and the values are what they are.
    options.check_input_shapes = false;
    std::vector<Tensor> outputs;
    KILN_RETURN_IF_ERROR(interp::Run(*graph_, named, &outputs, options));
    if (outputs.size() != args.outputs.size())
      return Status::Error("reference partition produced ", outputs.size(), " outputs, ",
                           args.outputs.size(), " expected");
    for (size_t i = 0; i < outputs.size(); ++i) *args.outputs[i] = std::move(outputs[i]);
    return Status::Ok();
  }

  std::string Describe() const override { return "reference"; }

 private:
  std::unique_ptr<ir::Graph> graph_;
};

Expected<std::unique_ptr<runtime::StepKernel>> CreateReferencePartition(
    const runtime::Step& step, const runtime::Module&) {
  KILN_ASSIGN_OR_RETURN(std::string text, step.params.String("ir"));
  auto graph = ir::ParseGraph(text);
  if (!graph.ok())
    return Status::Error("reference partition '", step.name, "' has unreadable IR: ",
                         graph.status().message());
  if ((*graph)->outputs.size() != step.outputs.size())
    return Status::Error("reference partition '", step.name, "' computes ",
                         (*graph)->outputs.size(), " values but the step writes ",
                         step.outputs.size());
  KILN_RETURN_IF_ERROR(ops::CheckSupported(**graph));
  return std::unique_ptr<runtime::StepKernel>(new ReferencePartition(std::move(*graph)));
}

}  // namespace

void EnableReferencePartitions() { runtime::SetReferencePartitionFactory(CreateReferencePartition); }

}  // namespace kiln::runtime_ref
