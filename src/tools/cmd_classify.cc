// `kiln classify`: runs a classifier one sample at a time (batch 1, as a deployed model would)
// and reports each prediction, the accuracy against labels and the latency.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <iostream>

#include "frontend/onnx/importer.h"
#include "interp/interpreter.h"
#include "tools/commands.h"
#include "tools/engine.h"
#include "tools/npy.h"

namespace kiln::tools {
namespace {

int Fail(const std::string& msg) {
  std::cerr << "kiln: error: " << msg << '\n';
  return 1;
}

// Sample i of a batch, as a batch of one.
Tensor Sample(const Tensor& batch, int64_t i) {
  std::vector<int64_t> dims = batch.dims();
  dims[0] = 1;
  Tensor t(batch.dtype(), dims);
  const size_t bytes = t.nbytes();
  std::memcpy(t.raw(), static_cast<const char*>(batch.raw()) + i * bytes, bytes);
  return t;
}

int64_t ArgMax(const Tensor& logits) {
  int64_t best = 0;
  for (int64_t k = 1; k < logits.numel(); ++k)
    if (logits.AsDouble(k) > logits.AsDouble(best)) best = k;
  return best;
}

}  // namespace

int Classify(const ClassifyOptions& opts) {
  auto engine = Engine::Open(opts.model, EngineOptions{});
  if (!engine.ok()) return Fail(engine.status().message());
  Engine& e = **engine;
  if (e.Inputs().size() != 1 || e.OutputNames().empty())
    return Fail("classify needs a model with one input and a logits output");
  const std::string input_name = e.Inputs()[0].name;
  auto batch = ReadNpy(opts.input);
  if (!batch.ok()) return Fail(batch.status().message());
  if (batch->rank() < 1 || batch->dim(0) == 0) return Fail("'" + opts.input + "' holds no samples");
  Tensor labels;
  if (!opts.labels.empty()) {
    auto l = ReadNpy(opts.labels);
    if (!l.ok()) return Fail(l.status().message());
    if (l->rank() != 1 || l->dim(0) != batch->dim(0) || !IsInteger(l->dtype()))
      return Fail("labels must be integers of shape [" + std::to_string(batch->dim(0)) + "]");
    labels = std::move(l).value();
  }

  const int64_t n = batch->dim(0);
  int64_t correct = 0;
  std::vector<double> ms;
  for (int64_t i = 0; i < n; ++i) {
    interp::NamedTensors inputs{{input_name, Sample(*batch, i)}};
    std::vector<Tensor> outputs;
    const auto start = std::chrono::steady_clock::now();
    Status st = e.Run(inputs, &outputs);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
    if (!st.ok()) return Fail(st.message());
    const int64_t predicted = ArgMax(outputs[0]);
    const bool has_label = labels.defined();
    const int64_t truth = has_label ? labels.AsInt64(i) : -1;
    correct += predicted == truth;
    if (i < opts.show) {
      std::cout << "sample " << std::setw(3) << i << ": predicted " << predicted;
      if (has_label) std::cout << ", true " << truth << (predicted == truth ? "" : "  <-- wrong");
      std::cout << '\n';
    }
  }
  std::sort(ms.begin(), ms.end());
  if (labels.defined())
    std::cout << "accuracy: " << correct << "/" << n << " = " << std::fixed << std::setprecision(2)
              << 100.0 * correct / n << "%\n";
  std::cout << std::fixed << std::setprecision(3) << "latency per sample (batch 1): median "
            << ms[ms.size() / 2] << " ms, min " << ms.front() << " ms, max " << ms.back()
            << " ms over " << n << " runs (" << e.name() << ", " << e.threads() << " thread; "
            << (IsKilnFile(opts.model) ? "loaded" : "compiled at -O2") << " in "
            << e.prepare_ms() << " ms)\n";
  return 0;
}

}  // namespace kiln::tools
