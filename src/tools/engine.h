// The one place the CLI's commands (run, bench, profile, classify, conformance) run a model:
// an ONNX file is imported, optimized at the chosen level and lowered in memory; a .kiln file is
// mapped. Either way a runtime::Session runs it, with exactly the threads asked for.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "interp/interpreter.h"
#include "ir/graph.h"
#include "lower/lower.h"
#include "runtime/module.h"
#include "runtime/session.h"
#include "support/status.h"
#include "support/tensor.h"

namespace kiln::tools {

struct EngineOptions {
  int threads = 1;
  int opt_level = 2;  // for ONNX models: the pass pipeline (-O0 runs every node on the interpreter)
  bool check_input_dims = true;
};

// What a caller needs to make inputs for a model it has not imported (a .kiln file).
struct InputInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  bool rank_known = false;
  std::vector<int64_t> dims;  // -1 for a symbolic dim
};

class Engine {
 public:
  // MODEL.onnx or MODEL.kiln.
  static Expected<std::unique_ptr<Engine>> Open(const std::string& path, const EngineOptions& options);
  // An imported graph, optimized in place at options.opt_level and lowered.
  static Expected<std::unique_ptr<Engine>> Compile(ir::Graph& graph, const EngineOptions& options,
                                                   const std::string& producer = "");

  // Inputs by name (every model input); outputs in the model's order (copies, the caller's).
  Status Run(const interp::NamedTensors& inputs, std::vector<Tensor>* outputs,
             const runtime::StepTimeFn& on_step = {});
  // The two halves of Run, for timing the session alone: Bind checks and binds `inputs` (which
  // must outlive the runs), RunBound runs the session on them; outputs stay in session().
  Status Bind(const interp::NamedTensors& inputs);
  Status RunBound(const runtime::StepTimeFn& on_step = {});

  const runtime::Module& module() const { return model_->module(); }
  std::vector<InputInfo> Inputs() const;
  std::vector<std::string> OutputNames() const;
  const char* name() const { return "kiln runtime"; }
  int threads() const { return static_cast<int>(session_->threads()); }
  // The kernel that runs step `s`, as the profiler shows it.
  std::string KernelFor(size_t s) const { return model_->kernel(s).Describe(); }
  std::string ThreadsNote() const { return ""; }
  const lower::LowerReport& report() const { return report_; }
  runtime::Session& session() { return *session_; }
  double prepare_ms() const { return prepare_ms_; }  // compile or load, to ready

 private:
  Engine() = default;
  static Expected<std::unique_ptr<Engine>> FromModule(std::shared_ptr<const runtime::Module> m,
                                                      const EngineOptions& options);
  std::shared_ptr<const runtime::CompiledModel> model_;
  std::unique_ptr<runtime::Session> session_;
  lower::LowerReport report_;
  double prepare_ms_ = 0;
  std::vector<const Tensor*> bound_;
};

// Imports, optimizes and lowers an ONNX model (kiln compile and Engine::Open share it).
struct CompileResult {
  runtime::Module module;
  lower::LowerReport report;
};
Expected<CompileResult> CompileOnnx(const std::string& path, int opt_level);

bool IsKilnFile(const std::string& path);

}  // namespace kiln::tools
