// `kiln compile`: loads a model and runs the pipeline of its optimization level. Lowering
// (kernel choice, prepacking, memory plan) and writing `-o OUT.kiln` come later; for now it
// prints the IR asked for and a summary.
#include <algorithm>
#include <iostream>

#include "frontend/onnx/importer.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
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
            << passes::CountNodes(graph) << "\n"
            << "note: lowering and -o OUT.kiln are not implemented yet\n";
  return 0;
}

}  // namespace kiln::tools
