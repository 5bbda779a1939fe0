#include "tools/engine.h"

#include <chrono>

#include "frontend/onnx/importer.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "runtime/module_file.h"
#include "runtime_ref/reference_partition.h"

namespace kiln::tools {
namespace {

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

Status Optimize(ir::Graph& graph, int opt_level) {
  passes::PassManager pm(passes::PassManagerOptions{});
  for (auto& p : passes::BuildPipeline(opt_level)) pm.Add(std::move(p));
  return pm.Run(graph);
}

}  // namespace

bool IsKilnFile(const std::string& path) {
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".kiln") == 0;
}

Expected<CompileResult> CompileOnnx(const std::string& path, int opt_level) {
  KILN_ASSIGN_OR_RETURN(auto model, onnx::LoadModel(path));
  KILN_RETURN_IF_ERROR(Optimize(*model.graph, opt_level));
  lower::LowerOptions options;
  options.native = opt_level > 0;
  options.measure_algorithms = opt_level >= 3;
  options.producer = StrCat("kiln from ", path, " at -O", opt_level);
  CompileResult result;
  KILN_ASSIGN_OR_RETURN(result.module, lower::Lower(*model.graph, options, &result.report));
  return result;
}

Expected<std::unique_ptr<Engine>> Engine::FromModule(std::shared_ptr<const runtime::Module> m,
                                                     const EngineOptions& options) {
  runtime_ref::EnableReferencePartitions();
  std::unique_ptr<Engine> engine(new Engine());
  KILN_ASSIGN_OR_RETURN(engine->model_, runtime::CompiledModel::Create(std::move(m)));
  runtime::SessionOptions so;
  so.threads = options.threads;
  so.check_input_dims = options.check_input_dims;
  KILN_ASSIGN_OR_RETURN(engine->session_, runtime::Session::Create(engine->model_, so));
  return engine;
}

Expected<std::unique_ptr<Engine>> Engine::Open(const std::string& path,
                                               const EngineOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  if (IsKilnFile(path)) {
    KILN_ASSIGN_OR_RETURN(auto module, runtime::LoadModule(path));
    KILN_ASSIGN_OR_RETURN(auto engine, FromModule(std::move(module), options));
    engine->prepare_ms_ = MsSince(t0);
    return engine;
  }
  KILN_ASSIGN_OR_RETURN(CompileResult compiled, CompileOnnx(path, options.opt_level));
  KILN_ASSIGN_OR_RETURN(
      auto engine,
      FromModule(std::make_shared<const runtime::Module>(std::move(compiled.module)), options));
  engine->report_ = compiled.report;
  engine->prepare_ms_ = MsSince(t0);
  return engine;
}

Expected<std::unique_ptr<Engine>> Engine::Compile(ir::Graph& graph, const EngineOptions& options,
                                                  const std::string& producer) {
  KILN_RETURN_IF_ERROR(Optimize(graph, options.opt_level));
  lower::LowerOptions lo;
  lo.native = options.opt_level > 0;
  lo.measure_algorithms = options.opt_level >= 3;
  lo.producer = producer;
  lower::LowerReport report;
  KILN_ASSIGN_OR_RETURN(runtime::Module module, lower::Lower(graph, lo, &report));
  KILN_ASSIGN_OR_RETURN(
      auto engine, FromModule(std::make_shared<const runtime::Module>(std::move(module)), options));
  engine->report_ = report;
  return engine;
}

std::vector<InputInfo> Engine::Inputs() const {
  std::vector<InputInfo> infos;
  for (int32_t id : module().inputs) {
    const runtime::ValueInfo& v = module().values[id];
    infos.push_back({v.name, v.dtype, v.rank_known, v.dims});
  }
  return infos;
}

std::vector<std::string> Engine::OutputNames() const {
  std::vector<std::string> names;
  for (int32_t id : module().outputs) names.push_back(module().values[id].name);
  return names;
}

Status Engine::Run(const interp::NamedTensors& inputs, std::vector<Tensor>* outputs,
                   const runtime::StepTimeFn& on_step) {
  KILN_RETURN_IF_ERROR(Bind(inputs));
  KILN_RETURN_IF_ERROR(RunBound(on_step));
  outputs->clear();
  for (size_t i = 0; i < session_->num_outputs(); ++i) {
    // Views of the session's arena die at the next run: the caller gets its own copy.
    outputs->push_back(session_->output(i).Clone());
  }
  return Status::Ok();
}

Status Engine::RunBound(const runtime::StepTimeFn& on_step) {
  return session_->Run(bound_, on_step);
}

Status Engine::Bind(const interp::NamedTensors& inputs) {
  bound_.clear();
  for (int32_t id : module().inputs) {
    const std::string& name = module().values[id].name;
    auto it = inputs.find(name);
    if (it == inputs.end()) return Status::Error("missing input '", name, "'");
    bound_.push_back(&it->second);
  }
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (int32_t id : module().inputs) known = known || module().values[id].name == name;
    if (!known) return Status::Error("'", name, "' is not an input of the model");
  }
  return Status::Ok();
}

}  // namespace kiln::tools
