#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <random>

#include "frontend/onnx/importer.h"
#include "interp/interpreter.h"
#include "ir/printer.h"
#include "tools/commands.h"
#include "tools/npy.h"

namespace kiln::tools {
namespace {

// Random inputs are a convenience; a declared shape above this is refused rather than filled.
constexpr int64_t kMaxRandomInputBytes = int64_t{1} << 30;

// Deterministic inputs for a model run without --input: symbolic dims become 1.
Expected<Tensor> RandomInput(const ir::Value& v, std::mt19937& rng) {
  std::vector<int64_t> dims;
  if (v.type.shape)
    for (const ir::Dim& d : *v.type.shape) dims.push_back(d.is_static() ? d.value : 1);
  const std::string what = StrCat("random input '", v.name, "'");
  if (v.type.dtype == DType::kString || v.type.dtype == DType::kUndefined)
    return Status::Error(what, ": cannot make random ", DTypeName(v.type.dtype),
                         " data; pass --input");
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Make(v.type.dtype, dims, what));
  if (static_cast<int64_t>(t.nbytes()) > kMaxRandomInputBytes)
    return Status::Error(what, ": ", DescribeTensor(t), " is too large to fill; pass --input");
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_int_distribution<int> small(0, 2);
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype()) {
      case DType::kFloat32: t.data<float>()[i] = normal(rng); break;
      case DType::kFloat64: t.data<double>()[i] = normal(rng); break;
      case DType::kFloat16: t.data<uint16_t>()[i] = FloatToHalf(normal(rng)); break;
      case DType::kBool: t.data<bool>()[i] = small(rng) != 0; break;
      default:
        KILN_DISPATCH_INTEGER(t.dtype(), T, break, t.data<T>()[i] = static_cast<T>(small(rng)));
    }
  }
  return t;
}

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
  auto model = onnx::LoadModel(opts.model);
  if (!model.ok()) {
    std::cerr << "kiln: error: " << model.status().message() << '\n';
    return 1;
  }
  const ir::Graph& graph = *model->graph;
  interp::NamedTensors inputs;
  for (const std::string& spec : opts.inputs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "kiln: error: --input must be NAME=FILE.npy, got '" << spec << "'\n";
      return 1;
    }
    auto t = ReadNpy(spec.substr(eq + 1));
    if (!t.ok()) {
      std::cerr << "kiln: error: " << t.status().message() << '\n';
      return 1;
    }
    inputs[spec.substr(0, eq)] = std::move(t).value();
  }
  std::mt19937 rng(42);
  if (opts.inputs.empty()) {
    for (const ir::Value* v : graph.inputs) {
      auto t = RandomInput(*v, rng);
      if (!t.ok()) {
        std::cerr << "kiln: error: " << t.status().message() << '\n';
        return 1;
      }
      inputs[v->name] = std::move(t).value();
    }
  }

  std::vector<Tensor> outputs;
  const auto start = std::chrono::steady_clock::now();
  Status st = interp::Run(graph, inputs, &outputs);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!st.ok()) {
    std::cerr << "kiln: error: " << st.message() << '\n';
    return 1;
  }
  for (size_t i = 0; i < outputs.size(); ++i) PrintSummary(graph.outputs[i]->name, outputs[i]);
  if (!opts.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opts.output_dir, ec);
    for (size_t i = 0; i < outputs.size(); ++i) {
      auto path = std::filesystem::path(opts.output_dir) / FileNameFor(graph.outputs[i]->name);
      Status w = WriteNpy(path.string(), outputs[i]);
      if (!w.ok()) {
        std::cerr << "kiln: error: " << w.message() << '\n';
        return 1;
      }
    }
  }
  std::cout << "time: " << ms << " ms (reference interpreter, 1 thread)\n";
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
