// SequenceMap: runs its body once per item of the first input sequence and gathers each body
// output into a sequence. Further inputs are sequences of the same length (item k goes to run
// k) or tensors (passed to every run). Part of the sequence family (sequence.cc).
#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

// Bodies can hold SequenceMaps in turn; running deeper than this fails instead of exhausting
// the stack on a hostile file.
constexpr int kMaxNesting = 64;
thread_local int nesting = 0;

Expected<const ir::Graph*> MapBody(const ir::Node& node) {
  ir::AttrReader r(node);
  const ir::Graph* body = r.GraphAttr("body");
  KILN_RETURN_IF_ERROR(r.status());
  if (body == nullptr) return Status::Error(node.Where(), "needs graph attribute 'body'");
  if (body->inputs.size() != node.inputs.size())
    return Status::Error(node.Where(), "body takes ", body->inputs.size(), " inputs, the node has ",
                         node.inputs.size());
  if (body->outputs.size() != node.outputs.size())
    return Status::Error(node.Where(), "body has ", body->outputs.size(), " outputs, the node has ",
                         node.outputs.size());
  return body;
}

Status InferSequenceMap(ir::Node& node) {
  KILN_ASSIGN_OR_RETURN(const ir::Graph* body, MapBody(node));
  for (size_t i = 0; i < node.outputs.size(); ++i)
    SetOutputType(node, i, ValueType::Sequence(body->outputs[i]->type));
  return Status::Ok();
}

Status RunSequenceMap(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::Graph* body, MapBody(ctx.node));
  KILN_ASSIGN_OR_RETURN(const Tensor* first, Input(ctx, 0, "input_sequence"));
  if (!first->is_sequence())
    return ctx.Error("input_sequence must be a sequence, got ", DescribeTensor(*first));
  const size_t n = first->items().size();
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(const Tensor* t, Input(ctx, i, "additional_inputs"));
    if (t->is_sequence() && t->items().size() != n)
      return ctx.Error("input ", i, " has ", t->items().size(), " items, input_sequence has ", n);
    ins.push_back(t);
  }
  if (nesting >= kMaxNesting)
    return ctx.Error("subgraphs nest deeper than kiln's limit of ", kMaxNesting);
  std::vector<std::vector<Tensor>> gathered(ctx.outputs.size());
  std::vector<Tensor> body_in(ins.size()), body_out;
  for (size_t k = 0; k < n; ++k) {
    for (size_t i = 0; i < ins.size(); ++i)
      body_in[i] = ins[i]->is_sequence() ? ins[i]->items()[k] : *ins[i];
    body_out.clear();
    ++nesting;
    Status st = ctx.run_subgraph(*body, body_in, &body_out);
    --nesting;
    KILN_RETURN_IF_ERROR(st);
    if (body_out.size() != gathered.size())
      return ctx.Error("body produced ", body_out.size(), " outputs, expected ", gathered.size());
    for (size_t j = 0; j < gathered.size(); ++j) gathered[j].push_back(std::move(body_out[j]));
  }
  for (size_t j = 0; j < gathered.size(); ++j) {
    DType elem = body->outputs[j]->type.dtype;
    if (!gathered[j].empty()) elem = gathered[j][0].dtype();
    ctx.outputs[j] = Tensor::Sequence(std::move(gathered[j]), elem);
  }
  return Status::Ok();
}

constexpr OpDef kOps[] = {
    {"", "SequenceMap", InferSequenceMap, RunSequenceMap, 17},
};

}  // namespace

std::span<const OpDef> SequenceMapOps() { return kOps; }

}  // namespace kiln::ops
