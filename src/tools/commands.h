// The `kiln` CLI's subcommands. Each returns the process exit code and prints its own errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::tools {

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::string output_dir;
  int threads = 1;
  int opt_level = 2;  // ONNX models are compiled in memory at this level
};
int RunModel(const RunOptions& opts);

int Inspect(const std::string& model);

struct ClassifyOptions {
  std::string model;
  std::string input;   // .npy batch [N, ...]
  std::string labels;  // optional .npy of N integer labels
  int64_t show = 16;   // samples to print one line each
};
int Classify(const ClassifyOptions& opts);

struct ConformanceOptions {
  std::vector<std::string> dirs;
  std::string filter;
  double rtol = 1e-3;
  double atol = 1e-7;
  bool verbose = false;
  bool compiled = false;  // compile at -O2 and run on the runtime
};
int Conformance(const ConformanceOptions& opts);

struct CompileOptions {
  std::string model;
  std::string output;  // .kiln path; empty: report only
  int opt_level = 2;
  std::string print_ir_after;               // "all" or a pass name
  std::vector<std::string> disabled_passes;
  bool time_passes = false;
  bool verify = false;  // the verifier after every pass (always on in debug builds)
};
int Compile(const CompileOptions& opts);

struct OptOptions {
  std::string input;   // IR text file, "-" for stdin
  std::string passes;  // comma-separated pass names, run in order
  bool verify = false;
  bool time_passes = false;
};
int Opt(const OptOptions& opts);

struct BenchOptions {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE.npy; random when empty
  int threads = 1;
  int warmup = 2;
  int iters = 10;
  std::string json;  // optional: every iteration's time and the statistics
};
int Bench(const BenchOptions& opts);

struct ProfileOptions {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE.npy; random when empty
  int threads = 1;
  int warmup = 1;
  int iters = 1;      // profiled runs; per-op times are their mean
  std::string trace;  // Chrome-trace JSON (opens in Perfetto)
  int top = 0;        // print only the N slowest nodes (0: every node, in run order)
  double peak_seconds = 0.2;
};
int Profile(const ProfileOptions& opts);

}  // namespace kiln::tools
