// Regressions found by tests/fuzz/fuzz_model_run.cc (one-node models run by the reference
// interpreter under hostile attributes, shapes and index values). Each case is the smallest model
// that crashed, tripped a sanitizer or hung before its fix; now it must fail with an error that
// names the node and the problem.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "../hostile/model_builder.h"
#include "interp/interpreter.h"
#include "ops/op_registry.h"

namespace kiln {
namespace {

using hostile::AddInit;
using hostile::AddInput;
using hostile::AddIntsAttr;
using hostile::AddNode;
using hostile::AddOutput;
using hostile::ExpectError;
using hostile::MakeModel;

template <class T>
std::string Raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Loads `m` (which must load) and runs it with `inputs`; returns the run's status.
Status LoadAndRun(const ::onnx::ModelProto& m, const interp::NamedTensors& inputs) {
  auto model = onnx::LoadModelFromBytes(hostile::Serialize(m), "");
  if (!model.ok()) return model.status();
  std::vector<Tensor> outputs;
  return interp::Run(*model->graph, inputs, &outputs);
}

// HannWindow with size 2^33 (and HammingWindow with 2^31 - 1) built a vector of doubles twice the
// output's size before any size check; now the output is checked first and the doubles go
// through a small block.
TEST(RunFuzzRegression, WindowSizeTooLarge) {
  auto m = MakeModel(17);
  auto* g = m.mutable_graph();
  AddInit(g, "size", ::onnx::TensorProto::INT64, {}, Raw<int64_t>({int64_t{1} << 33}));
  AddNode(g, "HannWindow", {"size"}, {"y"}, "win");
  AddOutput(g, "y");
  ExpectError(LoadAndRun(m, {}),
              {"win", "window: [8589934592] of float32 is larger than kiln's limit"});
}

}  // namespace
}  // namespace kiln
