// The op table: one OpDef per (domain, op_type). An OpDef holds the op's shape and type
// inference and its binding to the reference kernels (the oracle the interpreter runs).
// Each op family lives in its own file and exposes a span of OpDefs; op_table.cc lists the
// families explicitly (no static self-registration, which static libraries silently drop).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ops {

// What the reference run of a node sees. Control-flow ops call back into the interpreter
// through run_subgraph; everything else only reads inputs and fills outputs.
struct RunContext {
  const ir::Node& node;
  // inputs[i] is nullptr for an omitted optional input.
  std::vector<const Tensor*> inputs;
  // Pre-sized to node.outputs.size(); the kernel assigns each output it produces.
  std::vector<Tensor> outputs;
  // Runs `body` with `body_inputs` bound to its graph inputs in order; outer-scope names resolve
  // through the calling scope. Set by the interpreter.
  std::function<Status(const ir::Graph& body, const std::vector<Tensor>& body_inputs,
                       std::vector<Tensor>* body_outputs)>
      run_subgraph;

  const Tensor* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  size_t num_inputs() const { return inputs.size(); }
  // Errors about this node carry its name, op and opset.
  template <class... Args>
  Status Error(const Args&... args) const {
    return Status::Error(node.Where(), args...);
  }
};

// Sets the types of node.outputs from the input types (and constant inputs where the op's output
// shape depends on them). Unknown is a fine answer; an inconsistent input is an error.
using InferFn = Status (*)(ir::Node& node);
using RunFn = Status (*)(RunContext& ctx);

struct OpDef {
  std::string_view domain;  // "" for the default ONNX domain
  std::string_view op_type;
  InferFn infer;
  RunFn run;
  // Oldest default-domain opset this definition implements (ONNX 7 is kiln's floor).
  int since_version = 1;
  // float16/bfloat16 inputs are widened to float32 before `run` and float32 outputs narrowed back
  // afterwards, so float math is written once. Off for ops that move bytes or cast.
  bool promote_half = false;
};

// The whole table, built once from the family spans.
std::span<const OpDef> AllOps();
const OpDef* FindOp(std::string_view domain, std::string_view op_type);

// Every node (subgraphs included) whose op kiln does not have, reported at once:
// "unsupported ops: Foo (opset 13) at nodes 'a', 'b'; Bar@com.x (opset 1) at node 'c'".
Status CheckSupported(const ir::Graph& graph);

}  // namespace kiln::ops
