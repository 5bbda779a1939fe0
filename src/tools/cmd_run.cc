#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "frontend/onnx/importer.h"
#include "interp/interpreter.h"
#include "tools/engine.h"
#include "ir/printer.h"
#include "tools/commands.h"
#include "tools/inputs.h"
#include "tools/npy.h"

namespace kiln::tools {
namespace {

void PrintSummary(const std::string& name, const Tensor& t) {
  std::cout << "output " << name << ": " << DescribeTensor(t);
  if (t.numel() > 0 && t.dtype() != DType::kString) {
    double lo = t.AsDouble(0), hi = lo, sum = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      double x = t.AsDouble(i);
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      sum += x;
    }
    std::cout << " min=" << lo << " max=" << hi << " mean=" << sum / t.numel() << " first=[";
    for (int64_t i = 0; i < std::min<int64_t>(t.numel(), 5); ++i) std::cout << (i ? ", " : "") << t.AsDouble(i);
    std::cout << (t.numel() > 5 ? ", ...]" : "]");
  }
  std::cout << '\n';
}

std::string FileNameFor(std::string name) {
  for (char& c : name)
    if (c == '/' || c == '\\' || c == ':') c = '_';
  return name + ".npy";
}

}  // namespace

int RunModel(const RunOptions& opts) {
  auto fail = [](const std::string& msg) {
    std::cerr << "kiln: error: " << msg << '\n';
    return 1;
  };
  EngineOptions eo;
  eo.threads = opts.threads;
  eo.opt_level = opts.opt_level;
  auto engine = Engine::Open(opts.model, eo);
  if (!engine.ok()) return fail(engine.status().message());
  Engine& e = **engine;
  auto made = MakeInputs(e.Inputs(), opts.inputs);
  if (!made.ok()) return fail(made.status().message());
  const interp::NamedTensors inputs = std::move(made).value();

  std::vector<Tensor> outputs;
  const auto start = std::chrono::steady_clock::now();
  Status st = e.Run(inputs, &outputs);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!st.ok()) return fail(st.message());
  const std::vector<std::string> names = e.OutputNames();
  for (size_t i = 0; i < outputs.size(); ++i) PrintSummary(names[i], outputs[i]);
  if (!opts.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opts.output_dir, ec);
    for (size_t i = 0; i < outputs.size(); ++i) {
      auto path = std::filesystem::path(opts.output_dir) / FileNameFor(names[i]);
      Status w = WriteNpy(path.string(), outputs[i]);
      if (!w.ok()) return fail(w.message());
    }
  }
  std::cout << (IsKilnFile(opts.model) ? "loaded" : "compiled") << " in "
            << e.prepare_ms() << " ms: " << e.module().steps.size() << " steps";
  if (!IsKilnFile(opts.model))
    std::cout << " (" << e.report().native_steps << " native, " << e.report().reference_steps
              << " reference partitions holding " << e.report().reference_nodes << " nodes)";
  std::cout << ", arena " << e.session().memory().arena_bytes << " bytes\n";
  std::cout << "time: " << ms << " ms (first run, " << e.name() << ", " << e.threads()
            << (e.threads() == 1 ? " thread)\n" : " threads)\n");
  return 0;
}

int Inspect(const std::string& path) {
  auto model = onnx::LoadModel(path);
  if (!model.ok()) {
    std::cerr << "kiln: error: " << model.status().message() << '\n';
    return 1;
  }
  std::cout << "# ir_version " << model->ir_version << ", producer '" << model->producer << "'\n";
  std::cout << ir::PrintGraph(*model->graph);
  return 0;
}

}  // namespace kiln::tools
