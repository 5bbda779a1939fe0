// kiln: ahead-of-time compiler and runtime for neural-network inference.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"kiln: compile and run neural-network models (ONNX)"};
  app.require_subcommand(1);

  kiln::tools::RunOptions run;
  auto* run_cmd = app.add_subcommand("run", "Run a model on given (.npy) or random inputs");
  run_cmd->add_option("model", run.model, "Model file (.onnx, compiled in memory, or .kiln)")
      ->required();
  run_cmd->add_option("-O", run.opt_level, "Optimization level for an .onnx model (0-3)")
      ->check(CLI::Range(0, 3));
  run_cmd->add_option("--input", run.inputs, "Input as NAME=FILE.npy (repeatable)");
  run_cmd->add_option("--output-dir", run.output_dir, "Write each output as DIR/NAME.npy");
  run_cmd->add_option("--threads", run.threads, "Threads for the run")
      ->check(CLI::Range(1, 1024));

  std::string inspect_model;
  auto* inspect_cmd = app.add_subcommand("inspect", "Print the model's IR, one line per node");
  inspect_cmd->add_option("model", inspect_model, "Model file (.onnx)")->required();

  kiln::tools::ClassifyOptions cls;
  auto* cls_cmd = app.add_subcommand(
      "classify", "Classify samples one at a time; print predictions, accuracy and latency");
  cls_cmd->add_option("model", cls.model, "Model file (.onnx or .kiln)")->required();
  cls_cmd->add_option("--input", cls.input, "Samples as a .npy batch [N, ...]")->required();
  cls_cmd->add_option("--labels", cls.labels, "True labels as a .npy of N integers");
  cls_cmd->add_option("--show", cls.show, "Print this many samples' predictions");

  kiln::tools::ConformanceOptions conf;
  auto* conf_cmd = app.add_subcommand(
      "conformance", "Run ONNX backend test cases (model.onnx + test_data_set_*) under folders");
  conf_cmd->add_option("dirs", conf.dirs, "Folders holding test cases")->required();
  conf_cmd->add_option("--filter", conf.filter, "Only cases whose name contains this");
  conf_cmd->add_option("--rtol", conf.rtol, "Relative tolerance");
  conf_cmd->add_option("--atol", conf.atol, "Absolute tolerance");
  conf_cmd->add_flag("-v,--verbose", conf.verbose, "Print the error of unsupported cases too");
  conf_cmd->add_flag("--compiled", conf.compiled,
                     "Compile each case at -O2 and run it on the runtime (not the interpreter)");

  kiln::tools::CompileOptions comp;
  auto* comp_cmd = app.add_subcommand(
      "compile",
      "Optimize and lower a model; write the compiled module with -o OUT.kiln");
  comp_cmd->add_option("model", comp.model, "Model file (.onnx)")->required();
  comp_cmd->add_option("-o,--output", comp.output, "Write the compiled module here (.kiln)");
  comp_cmd->add_option("-O", comp.opt_level,
                       "Optimization level: 0 reference kernels only, 1 simplify, 2 fuse and "
                       "native kernels, 3 also measure convolution algorithms")
      ->check(CLI::Range(0, 3));
  comp_cmd->add_option("--print-ir-after", comp.print_ir_after, "Print the IR after 'all' or NAME");
  comp_cmd->add_option("--disable-pass", comp.disabled_passes, "Skip this pass (repeatable)");
  comp_cmd->add_flag("--time-passes", comp.time_passes, "Print each pass's time");
  comp_cmd->add_flag("--verify", comp.verify, "Verify the graph after every pass");

  kiln::tools::OptOptions opt;
  auto* opt_cmd = app.add_subcommand("opt", "Read IR text, run passes, print IR text");
  opt_cmd->add_option("file", opt.input, "IR text file ('-' for stdin)")->required();
  opt_cmd->add_option("--passes", opt.passes, "Comma-separated pass names, run in order");
  opt_cmd->add_flag("--verify", opt.verify, "Verify the graph after every pass");
  opt_cmd->add_flag("--time-passes", opt.time_passes, "Print each pass's time to stderr");

  kiln::tools::BenchOptions bench;
  auto* bench_cmd = app.add_subcommand(
      "bench", "Time whole-model runs after warm-up: min, median, p90, max, throughput");
  bench_cmd->add_option("model", bench.model, "Model file (.onnx or .kiln)")->required();
  bench_cmd->add_option("--input", bench.inputs, "Input as NAME=FILE.npy (repeatable)");
  bench_cmd->add_option("--threads", bench.threads, "Threads for the run")
      ->check(CLI::Range(1, 1024));
  bench_cmd->add_option("--warmup", bench.warmup, "Untimed runs first")
      ->check(CLI::Range(0, 1 << 20));
  bench_cmd->add_option("--iters", bench.iters, "Timed runs")->check(CLI::Range(1, 1 << 20));
  bench_cmd->add_option("--json", bench.json, "Also write every iteration's time as JSON here");

  kiln::tools::ProfileOptions prof;
  auto* prof_cmd = app.add_subcommand(
      "profile", "Per-op times, GFLOP/s and share of the measured FMA peak; Chrome-trace JSON");
  prof_cmd->add_option("model", prof.model, "Model file (.onnx or .kiln)")->required();
  prof_cmd->add_option("--input", prof.inputs, "Input as NAME=FILE.npy (repeatable)");
  prof_cmd->add_option("--threads", prof.threads, "Threads for the run")
      ->check(CLI::Range(1, 1024));
  prof_cmd->add_option("--warmup", prof.warmup, "Unprofiled runs first")
      ->check(CLI::Range(0, 1 << 20));
  prof_cmd->add_option("--iters", prof.iters, "Profiled runs (per-op times are their mean)")
      ->check(CLI::Range(1, 1 << 20));
  prof_cmd->add_option("-o,--trace", prof.trace, "Write a Chrome-trace JSON (opens in Perfetto)");
  prof_cmd->add_option("--top", prof.top, "Print only the N slowest nodes (0: all, in run order)")
      ->check(CLI::Range(0, 1 << 20));
  prof_cmd->add_option("--peak-seconds", prof.peak_seconds, "Time spent measuring the FMA peak")
      ->check(CLI::Range(0.0, 60.0));

  CLI11_PARSE(app, argc, argv);
  // Commands report errors as Status; this is the last line of defence (an allocation failing
  // outside a kernel, say), so that nothing ends in an abort.
  try {
    if (*comp_cmd) return kiln::tools::Compile(comp);
    if (*opt_cmd) return kiln::tools::Opt(opt);
    if (*run_cmd) return kiln::tools::RunModel(run);
    if (*inspect_cmd) return kiln::tools::Inspect(inspect_model);
    if (*cls_cmd) return kiln::tools::Classify(cls);
    if (*conf_cmd) return kiln::tools::Conformance(conf);
    if (*bench_cmd) return kiln::tools::Bench(bench);
    if (*prof_cmd) return kiln::tools::Profile(prof);
  } catch (const std::exception& e) {
    std::cerr << "kiln: error: " << e.what() << '\n';
    return 1;
  }
  return 2;
}
