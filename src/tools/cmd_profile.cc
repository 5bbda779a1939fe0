// `kiln profile`: per-op wall times of whole-model runs, each op's FLOPs, GFLOP/s and share of
// the machine's FMA peak measured in the same run, and a Chrome-trace JSON that opens in Perfetto
// (ui.perfetto.dev) or chrome://tracing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "frontend/onnx/importer.h"
#include "kernels/peak/peak.h"
#include "tools/commands.h"
#include "tools/engine.h"
#include "tools/inputs.h"
#include "tools/report.h"

namespace kiln::tools {
namespace {

using Clock = std::chrono::steady_clock;

int Fail(const std::string& message) {
  std::cerr << "kiln: error: " << message << '\n';
  return 1;
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// One op run: times in microseconds from the start of profiling.
struct Event {
  size_t step;
  double ts_us;
  double dur_us;
  int iter;
};

struct NodeRow {
  double total_ms = 0;  // over all profiled runs
  double flops = 0;     // per run; -1 unknown
};

struct OpTypeRow {
  int count = 0;  // nodes per run
  double total_ms = 0;
  double flops = 0;     // known flops per run
  double flops_ms = 0;  // time of the nodes whose flops are known
};

// The dims of a step's first output as of the last run.
std::string ShapeOf(Engine& engine, size_t step) {
  const runtime::Step& s = engine.module().steps[step];
  if (s.outputs.empty()) return "-";
  const Tensor* t = engine.session().value(s.outputs[0]);
  return t && t->defined() ? DimsString(t->dims()) : "?";
}

std::string Shorten(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  return "..." + s.substr(s.size() - (width - 3));
}

std::string GflopsCell(double flops, double ms) {
  if (flops < 0) return "?";
  if (flops == 0 || ms <= 0) return "-";
  return Fixed(flops / (ms * 1e6), 2);
}

std::string PeakCell(double flops, double ms, double peak) {
  if (flops <= 0 || ms <= 0 || peak <= 0) return "-";
  return Fixed(100.0 * flops / (ms * 1e6) / peak, 1);
}

Status WriteTrace(const std::string& path, const std::vector<Event>& events,
                  const std::vector<double>& run_ts_us, const std::vector<double>& run_ms,
                  Engine& engine, const std::map<size_t, NodeRow>& rows,
                  double peak_gflops, const std::string& model) {
  std::ofstream f(path);
  if (!f) return Status::Error("cannot write '", path, "'");
  f << "{\"traceEvents\":[\n";
  f << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":"
    << JsonString("kiln " + model) << "}},\n";
  f << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":"
    << JsonString(engine.name()) << "}}";
  for (size_t i = 0; i < run_ms.size(); ++i) {
    f << ",\n{\"name\":\"run\",\"cat\":\"run\",\"ph\":\"X\",\"ts\":" << Fixed(run_ts_us[i], 3)
      << ",\"dur\":" << Fixed(run_ms[i] * 1e3, 3) << ",\"pid\":1,\"tid\":1,\"args\":{\"iter\":" << i
      << "}}";
  }
  for (const Event& e : events) {
    const NodeRow& row = rows.at(e.step);
    const runtime::Step& step = engine.module().steps[e.step];
    const double ms = e.dur_us * 1e-3;
    f << ",\n{\"name\":" << JsonString(step.op)
      << ",\"cat\":\"op\",\"ph\":\"X\",\"ts\":" << Fixed(e.ts_us, 3)
      << ",\"dur\":" << Fixed(e.dur_us, 3)
      << ",\"pid\":1,\"tid\":1,\"args\":{\"node\":" << JsonString(step.name)
      << ",\"kernel\":" << JsonString(engine.KernelFor(e.step))
      << ",\"shape\":" << JsonString(ShapeOf(engine, e.step)) << ",\"iter\":" << e.iter
      << ",\"flops\":" << Fixed(row.flops, 0) << ",\"gflops\":"
      << (row.flops > 0 && ms > 0 ? Fixed(row.flops / (ms * 1e6), 3) : std::string("0")) << "}}";
  }
  double mean_run = 0;
  for (double ms : run_ms) mean_run += ms / static_cast<double>(run_ms.size());
  f << "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"model\":" << JsonString(model)
    << ",\"engine\":" << JsonString(engine.name()) << ",\"threads\":" << engine.threads()
    << ",\"runs\":" << run_ms.size() << ",\"run_ms\":" << Fixed(mean_run, 6)
    << ",\"peak_gflops\":" << Fixed(peak_gflops, 3) << "}}\n";
  f.close();
  if (!f) return Status::Error("cannot write '", path, "'");
  return Status::Ok();
}

}  // namespace

int Profile(const ProfileOptions& opts) {
  EngineOptions eo;
  eo.threads = opts.threads;
  auto opened = Engine::Open(opts.model, eo);
  if (!opened.ok()) return Fail(opened.status().message());
  Engine& engine = **opened;
  auto inputs = MakeInputs(engine.Inputs(), opts.inputs);
  if (!inputs.ok()) return Fail(inputs.status().message());

  // The limit first, while nothing else of ours is running, and again at the end: a fall between
  // the two says the machine got busier during the profile.
  const peak::PeakResult peak_start = peak::MeasureF32Peak(opts.peak_seconds);
  const double peak = peak_start.gflops * engine.threads();

  std::vector<Tensor> outputs;
  // Warm-up takes the profiled path itself (bound inputs, the per-step hook writing events), so
  // the first profiled run pays no first-touch costs the others do not.
  if (Status st = engine.Bind(*inputs); !st.ok()) return Fail(st.message());
  {
    std::vector<Event> scratch;
    scratch.reserve(engine.module().steps.size() * static_cast<size_t>(opts.warmup));
    const auto w0 = Clock::now();
    for (int i = 0; i < opts.warmup; ++i) {
      Status st = engine.RunBound([&](size_t step, double ms) {
        const double end_us = std::chrono::duration<double, std::micro>(Clock::now() - w0).count();
        scratch.push_back({step, end_us - ms * 1e3, ms * 1e3, i});
      });
      if (!st.ok()) return Fail(st.message());
    }
  }
  std::vector<Event> events;
  events.reserve(engine.module().steps.size() * static_cast<size_t>(opts.iters));
  std::vector<double> run_ms, run_ts_us;
  const auto t0 = Clock::now();
  auto us_since_t0 = [&t0] {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  };
  // Inputs are bound: the timed run is the session's, which is what the steps add up to.
  for (int iter = 0; iter < opts.iters; ++iter) {
    const double start_us = us_since_t0();
    Status st = engine.RunBound([&](size_t step, double ms) {
      const double end_us = us_since_t0();
      events.push_back({step, end_us - ms * 1e3, ms * 1e3, iter});
    });
    const double end_us = us_since_t0();
    if (!st.ok()) return Fail(st.message());
    run_ts_us.push_back(start_us);
    run_ms.push_back((end_us - start_us) * 1e-3);
  }
  const peak::PeakResult peak_end = peak::MeasureF32Peak(opts.peak_seconds);

  // Per node, in the order they first ran.
  std::map<size_t, NodeRow> rows;
  std::vector<size_t> order;
  for (const Event& e : events) {
    auto [it, fresh] = rows.try_emplace(e.step);
    if (fresh) {
      it->second.flops = engine.module().steps[e.step].params.FloatOr("flops", -1);
      order.push_back(e.step);
    }
    it->second.total_ms += e.dur_us * 1e-3;
  }
  const double iters = opts.iters;
  const double run_mean = ComputeStats(run_ms).mean;
  double ops_ms = 0, flops = 0;
  bool flops_complete = true;
  std::map<std::string, OpTypeRow> by_type;
  for (size_t n : order) {
    const NodeRow& r = rows[n];
    const double ms = r.total_ms / iters;
    ops_ms += ms;
    OpTypeRow& t = by_type[engine.module().steps[n].op];
    ++t.count;
    t.total_ms += ms;
    if (r.flops >= 0) {
      flops += r.flops;
      t.flops += r.flops;
      t.flops_ms += ms;
    } else {
      flops_complete = false;
    }
  }

  std::cout << "model: " << opts.model << '\n';
  std::cout << "engine: " << engine.name() << ", threads: " << engine.threads() << '\n';
  if (!engine.ThreadsNote().empty()) std::cout << "note: " << engine.ThreadsNote() << '\n';
  std::cout << "peak: " << Fixed(peak_start.gflops, 1) << " GFLOP/s per core (" << peak_start.kernel
            << "), " << Fixed(peak, 1) << " for " << engine.threads() << " thread(s)\n";
  std::cout << "runs: " << opts.warmup << " warm-up, " << opts.iters
            << " profiled (times below are per run, the mean)\n\n";

  std::vector<size_t> shown = order;
  if (opts.top > 0) {
    std::stable_sort(shown.begin(), shown.end(), [&](size_t a, size_t b) {
      return rows[a].total_ms > rows[b].total_ms;
    });
    if (shown.size() > static_cast<size_t>(opts.top)) shown.resize(opts.top);
  }
  std::printf("%4s  %-18s %-28s %-30s %-16s %10s %6s %8s %6s\n", "#", "op", "node", "kernel",
              "shape", "ms", "%", "GFLOP/s", "%peak");
  for (size_t n : shown) {
    const runtime::Step& step = engine.module().steps[n];
    const NodeRow& r = rows[n];
    const double ms = r.total_ms / iters;
    const size_t index =
        static_cast<size_t>(std::find(order.begin(), order.end(), n) - order.begin());
    std::printf("%4zu  %-18s %-28s %-30s %-16s %10.3f %6.1f %8s %6s\n", index,
                Shorten(step.op, 18).c_str(), Shorten(step.name, 28).c_str(),
                Shorten(engine.KernelFor(n), 30).c_str(), ShapeOf(engine, n).c_str(), ms,
                ops_ms > 0 ? 100 * ms / ops_ms : 0.0, GflopsCell(r.flops, ms).c_str(),
                PeakCell(r.flops, ms, peak).c_str());
  }

  std::printf("\nby op type:\n%-18s %6s %10s %6s %8s %6s\n", "op", "nodes", "ms", "%", "GFLOP/s",
              "%peak");
  std::vector<std::pair<std::string, OpTypeRow>> types(by_type.begin(), by_type.end());
  std::stable_sort(types.begin(), types.end(), [](const auto& a, const auto& b) {
    return a.second.total_ms > b.second.total_ms;
  });
  for (const auto& [op, t] : types) {
    std::printf("%-18s %6d %10.3f %6.1f %8s %6s\n", Shorten(op, 18).c_str(), t.count, t.total_ms,
                ops_ms > 0 ? 100 * t.total_ms / ops_ms : 0.0,
                GflopsCell(t.flops, t.flops_ms).c_str(),
                PeakCell(t.flops, t.flops_ms, peak).c_str());
  }

  std::cout << "\nops total: " << Fixed(ops_ms, 3) << " ms; measured run: " << Fixed(run_mean, 3)
            << " ms; ops cover " << Fixed(run_mean > 0 ? 100 * ops_ms / run_mean : 0, 1)
            << "% of the run\n";
  char work[32];
  std::snprintf(work, sizeof work, "%.4g", flops * 1e-9);
  std::cout << "work: " << work << " GFLOP per run"
            << (flops_complete ? "" : " (some shapes not static: those ops not counted)")
            << " (Conv, ConvTranspose, Gemm, MatMul; plain algorithm), "
            << GflopsCell(flops, run_mean) << " GFLOP/s, " << PeakCell(flops, run_mean, peak)
            << "% of peak\n";
  std::cout << "peak at end: " << Fixed(peak_end.gflops, 1) << " GFLOP/s per core"
            << (peak_end.gflops < 0.9 * peak_start.gflops ? " (fell: the machine got busier)" : "")
            << '\n';
  if (!opts.trace.empty()) {
    Status st = WriteTrace(opts.trace, events, run_ts_us, run_ms, engine, rows, peak, opts.model);
    if (!st.ok()) return Fail(st.message());
    std::cout << "trace: " << opts.trace << " (open in ui.perfetto.dev)\n";
  }
  std::cout << "run_ms=" << Fixed(run_mean, 6) << '\n';
  return 0;
}

}  // namespace kiln::tools
