// `kiln bench`: latency of whole-model runs after warm-up, reported the way onnxruntime_perf_test
// and benchncnn users know (min, median, p90, max, throughput). The last line, median_ms=X, is
// for scripts; --json writes every iteration's time (bench/compare.py reads it).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "frontend/onnx/importer.h"
#include "tools/commands.h"
#include "tools/engine.h"
#include "tools/inputs.h"
#include "tools/report.h"

namespace kiln::tools {
namespace {

int Fail(const std::string& message) {
  std::cerr << "kiln: error: " << message << '\n';
  return 1;
}

std::string Fixed(double v, int digits = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

Status WriteJson(const std::string& path, const BenchOptions& opts, const Engine& engine,
                 const std::vector<double>& ms, const LatencyStats& s, double per_s) {
  std::ofstream f(path);
  if (!f) return Status::Error("cannot write '", path, "'");
  f << "{\n  \"model\": " << JsonString(opts.model)
    << ",\n  \"engine\": " << JsonString(engine.name()) << ",\n  \"threads\": " << engine.threads()
    << ",\n  \"requested_threads\": " << opts.threads << ",\n  \"warmup\": " << opts.warmup
    << ",\n  \"iters\": " << opts.iters << ",\n  \"iters_ms\": [";
  for (size_t i = 0; i < ms.size(); ++i) f << (i ? ", " : "") << Fixed(ms[i], 6);
  f << "],\n  \"min_ms\": " << Fixed(s.min, 6) << ",\n  \"median_ms\": " << Fixed(s.median, 6)
    << ",\n  \"p90_ms\": " << Fixed(s.p90, 6) << ",\n  \"max_ms\": " << Fixed(s.max, 6)
    << ",\n  \"mean_ms\": " << Fixed(s.mean, 6) << ",\n  \"throughput_per_s\": " << Fixed(per_s, 6)
    << "\n}\n";
  f.close();
  if (!f) return Status::Error("cannot write '", path, "'");
  return Status::Ok();
}

}  // namespace

int Bench(const BenchOptions& opts) {
  EngineOptions eo;
  eo.threads = opts.threads;
  auto opened = Engine::Open(opts.model, eo);
  if (!opened.ok()) return Fail(opened.status().message());
  Engine& engine = **opened;
  auto inputs = MakeInputs(engine.Inputs(), opts.inputs);
  if (!inputs.ok()) return Fail(inputs.status().message());

  std::cout << "model: " << opts.model << '\n';
  std::cout << "engine: " << engine.name() << ", threads: " << engine.threads() << '\n';
  if (!engine.ThreadsNote().empty()) std::cout << "note: " << engine.ThreadsNote() << '\n';
  for (const auto& [name, t] : *inputs)
    std::cout << "input " << name << ": " << DescribeTensor(t)
              << (opts.inputs.empty() ? " (random, seed 42)" : "") << '\n';
  std::cout << "warmup: " << opts.warmup << ", iterations: " << opts.iters << '\n';

  std::vector<Tensor> outputs;
  for (int i = 0; i < opts.warmup; ++i) {
    Status st = engine.Run(*inputs, &outputs);
    if (!st.ok()) return Fail(st.message());
  }
  std::vector<double> ms;
  ms.reserve(opts.iters);
  const auto all_start = std::chrono::steady_clock::now();
  for (int i = 0; i < opts.iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    Status st = engine.Run(*inputs, &outputs);
    const auto end = std::chrono::steady_clock::now();
    if (!st.ok()) return Fail(st.message());
    ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  }
  const double total_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - all_start).count();
  const LatencyStats s = ComputeStats(ms);
  const double per_s = total_s > 0 ? opts.iters / total_s : 0;

  std::cout << "latency (ms): min " << Fixed(s.min) << "  median " << Fixed(s.median) << "  p90 "
            << Fixed(s.p90) << "  max " << Fixed(s.max) << "  mean " << Fixed(s.mean) << '\n';
  const double spread = s.median > 0 ? (s.max - s.min) / s.median : 0;
  // A wide spread on a shared machine means someone else had the core (BENCHMARKING.md, rule 2).
  if (spread > 0.2)
    std::cout << "warning: max-min spread is " << Fixed(100 * spread, 0)
              << "% of the median; the machine may be busy, run again\n";
  std::cout << "throughput: " << Fixed(per_s, 2) << " runs/s (" << opts.iters << " runs in "
            << Fixed(total_s, 3) << " s, one after another)\n";
  if (!opts.json.empty()) {
    Status st = WriteJson(opts.json, opts, engine, ms, s, per_s);
    if (!st.ok()) return Fail(st.message());
  }
  std::cout << "median_ms=" << Fixed(s.median, 6) << '\n';
  return 0;
}

}  // namespace kiln::tools
