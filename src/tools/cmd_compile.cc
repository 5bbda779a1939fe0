// `kiln compile`: loads a model, runs the pipeline of its optimization level, lowers it (kernel
// choice, prepacking, reference partitions), plans its memory for the declared input dims
// (symbolic ones taken as 1), and writes `-o OUT.kiln`.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "frontend/onnx/importer.h"
#include "lower/lower.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "runtime/module_file.h"
#include "runtime/session.h"
#include "runtime_ref/reference_partition.h"
#include "tools/commands.h"

namespace kiln::tools {

int Compile(const CompileOptions& opts) {
  auto fail = [](const std::string& msg) {
    std::cerr << "kiln: error: " << msg << '\n';
    return 1;
  };
  const std::vector<std::string> known = passes::PassNames();
  auto is_known = [&known](const std::string& n) {
    return std::find(known.begin(), known.end(), n) != known.end();
  };
  if (!opts.print_ir_after.empty() && opts.print_ir_after != "all" &&
      !is_known(opts.print_ir_after))
    return fail(StrCat("--print-ir-after: unknown pass '", opts.print_ir_after, "'"));
  for (const std::string& d : opts.disabled_passes)
    if (!is_known(d)) return fail(StrCat("--disable-pass: unknown pass '", d, "'"));

  const auto t0 = std::chrono::steady_clock::now();
  auto model = onnx::LoadModel(opts.model);
  if (!model.ok()) return fail(model.status().message());
  ir::Graph& graph = *model->graph;

  passes::PassManagerOptions pm_opts;
  pm_opts.print_ir_after = opts.print_ir_after;
  pm_opts.disabled.insert(opts.disabled_passes.begin(), opts.disabled_passes.end());
  pm_opts.verify = pm_opts.verify || opts.verify;
  pm_opts.ir_out = &std::cout;
  passes::PassManager pm(std::move(pm_opts));
  for (auto& p : passes::BuildPipeline(opts.opt_level)) pm.Add(std::move(p));

  const size_t before = passes::CountNodes(graph);
  if (Status st = pm.Run(graph); !st.ok()) return fail(st.message());
  if (opts.time_passes) std::cout << pm.TimingReport();
  size_t changed = 0;
  for (const auto& r : pm.records()) changed += r.changed ? 1 : 0;
  std::cout << opts.model << ": -O" << opts.opt_level << ", " << pm.records().size()
            << " passes run (" << changed << " changed the graph), nodes " << before << " -> "
            << passes::CountNodes(graph) << "\n";

  lower::LowerOptions lo;
  lo.native = opts.opt_level > 0;
  lo.measure_algorithms = opts.opt_level >= 3;
  lo.producer = StrCat("kiln from ", std::filesystem::path(opts.model).filename().string(),
                       " at -O", opts.opt_level);
  lower::LowerReport report;
  auto module = lower::Lower(graph, lo, &report);
  if (!module.ok()) return fail(module.status().message());
  const double compile_ms = std::chrono::duration<double, std::milli>(
                                std::chrono::steady_clock::now() - t0).count();
  std::cout << "lowered for " << IsaName(lo.isa) << ": " << module->steps.size() << " steps ("
            << report.native_steps << " native, " << report.reference_steps
            << " reference partitions holding " << report.reference_nodes << " nodes), "
            << module->weights_size << " weight bytes\n";

  auto shared = std::make_shared<const runtime::Module>(std::move(module).value());
  // The memory plan at the declared dims. Reference partitions need the interpreter linked in.
  runtime_ref::EnableReferencePartitions();
  auto compiled = runtime::CompiledModel::Create(shared);
  if (!compiled.ok()) return fail(compiled.status().message());
  auto session = runtime::Session::Create(*compiled);
  if (!session.ok()) return fail(session.status().message());
  std::vector<runtime::Dims> dims;
  for (int32_t id : shared->inputs) {
    runtime::Dims d = shared->values[id].dims;
    for (int64_t& x : d) x = x < 0 ? 1 : x;
    dims.push_back(std::move(d));
  }
  if (Status st = (*session)->Reshape(dims); !st.ok()) return fail(st.message());
  const runtime::MemoryReport mem = (*session)->memory();
  std::cout << "memory plan: arena " << mem.arena_bytes << " bytes for "
            << mem.intermediate_bytes << " bytes of intermediate tensors (" << std::fixed
            << std::setprecision(1)
            << (mem.intermediate_bytes ? 100.0 * mem.arena_bytes / mem.intermediate_bytes : 0.0)
            << "%), workspace " << mem.workspace_bytes << " bytes";
  if (mem.dynamic_values > 0)
    std::cout << ", " << mem.dynamic_values << " values sized at run time";
  std::cout << "\ncompile time: " << std::setprecision(0) << compile_ms << " ms\n";
  if (!opts.output.empty()) {
    if (Status st = runtime::SaveModule(*shared, opts.output); !st.ok()) return fail(st.message());
    std::cout << "wrote " << opts.output << '\n';
  }
  return 0;
}

}  // namespace kiln::tools
