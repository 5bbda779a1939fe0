// The runtime's two objects, in the phases of ../shared/DESIGN.md:
//   CompiledModel  a Module with a prepared kernel per step. Immutable; share it between threads.
//   Session        one run context: its own thread pool (exactly `threads` threads), the arena
//                  planned for the current input shapes, and the tensors bound into it. One
//                  thread uses a session at a time; run many sessions of one model at once.
// Session::Run re-plans only when an input's dims differ from the last run's. At unchanged
// shapes a run binds pointers and calls kernels: no heap allocation (reference partitions
// excepted: the interpreter allocates what it computes).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/memory_plan.h"
#include "runtime/module.h"
#include "runtime/step_kernel.h"
#include "support/status.h"
#include "support/tensor.h"
#include "support/thread_pool.h"

namespace kiln::runtime {

class CompiledModel {
 public:
  // Validates the module, checks the CPU has module.isa, prepares every step's kernel.
  static Expected<std::shared_ptr<const CompiledModel>> Create(std::shared_ptr<const Module> module);

  const Module& module() const { return *module_; }
  const StepKernel& kernel(size_t step) const { return *kernels_[step]; }
  size_t num_steps() const { return kernels_.size(); }

 private:
  CompiledModel() = default;
  std::shared_ptr<const Module> module_;
  std::vector<std::unique_ptr<StepKernel>> kernels_;
};

struct SessionOptions {
  int threads = 1;  // exactly this many, the caller included
  // Off only for test data known to contradict its own model's declared dims (some ONNX
  // backend cases); element types are always checked, and every kernel checks what it reads.
  bool check_input_dims = true;
};

// Called after each step with its wall time; for profilers. Costs one clock read per step.
using StepTimeFn = std::function<void(size_t step, double ms)>;

struct MemoryReport {
  size_t arena_bytes = 0;         // the planned arena
  size_t intermediate_bytes = 0;  // every planned activation, without reuse
  size_t workspace_bytes = 0;     // the largest step scratch
  size_t dynamic_values = 0;      // activations whose dims only a run tells
};

class Session {
 public:
  static Expected<std::unique_ptr<Session>> Create(std::shared_ptr<const CompiledModel> model,
                                                   const SessionOptions& options = {});
  ~Session();

  // inputs[i] binds module().inputs[i]; dtypes must match and dims fit the declared ones
  // (static dims equal, symbolic dims any size). The tensors must stay alive during the call.
  Status Run(std::span<const Tensor* const> inputs, const StepTimeFn& on_step = {});
  // Output i of the last run: a view valid until the next Run or the session's end.
  const Tensor& output(size_t i) const;
  size_t num_outputs() const;
  // Value `id` of the module as of the last run (nullptr if none): profilers read step shapes.
  const Tensor* value(int32_t id) const;
  size_t threads() const;
  // Plans for `input_dims` (as Run would) without running; for reports.
  Status Reshape(const std::vector<Dims>& input_dims);
  MemoryReport memory() const;

 private:
  struct State;
  Session();
  Status Plan(const std::vector<const Dims*>& input_dims);
  Status RunStep(size_t s);
  // Makes concat inputs views of the concat's output where the plan allows (session.cc).
  void PlaceConcatInputs(const std::vector<int32_t>& request_of,
                         std::vector<BufferRequest>& requests) const;
  std::shared_ptr<const CompiledModel> model_;
  SessionOptions options_;
  std::unique_ptr<State> state_;
};

}  // namespace kiln::runtime
