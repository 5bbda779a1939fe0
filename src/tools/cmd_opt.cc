// `kiln opt`: IR text in, passes in the order given, IR text out (the driver of the golden pass
// tests, like LLVM's opt and IREE's iree-opt).
#include <fstream>
#include <iostream>
#include <sstream>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "tools/commands.h"

namespace kiln::tools {

int Opt(const OptOptions& opts) {
  auto fail = [](const std::string& msg) {
    std::cerr << "kiln: error: " << msg << '\n';
    return 1;
  };
  std::ostringstream text;
  if (opts.input == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(opts.input, std::ios::binary);
    if (!in) return fail(StrCat("cannot open '", opts.input, "'"));
    text << in.rdbuf();
  }
  auto graph = ir::ParseGraph(text.str());
  if (!graph.ok()) return fail(StrCat(opts.input, ": ", graph.status().message()));
  if (Status st = ir::Verify(**graph); !st.ok())
    return fail(StrCat(opts.input, ": ", st.message()));

  passes::PassManagerOptions pm_opts;
  pm_opts.verify = pm_opts.verify || opts.verify;
  passes::PassManager pm(std::move(pm_opts));
  std::stringstream names(opts.passes);
  for (std::string name; std::getline(names, name, ',');) {
    if (name.empty()) continue;
    auto pass = passes::CreatePassByName(name);
    if (!pass.ok()) return fail(pass.status().message());
    pm.Add(std::move(pass).value());
  }
  if (Status st = pm.Run(**graph); !st.ok()) return fail(st.message());
  if (opts.time_passes) std::cerr << pm.TimingReport();
  std::cout << ir::PrintGraph(**graph);
  return 0;
}

}  // namespace kiln::tools
