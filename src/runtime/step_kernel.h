// StepKernel: a runtime kernel prepared for one step of a module. Prepared once when a model is
// loaded (binding prepacked weights in place), then shared by every session of that model, so
// it is immutable after creation and Run may be called from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/module.h"
#include "support/status.h"
#include "support/tensor.h"
#include "support/thread_pool.h"

namespace kiln::runtime {

using Dims = std::vector<int64_t>;

struct StepArgs {
  // In step.inputs order; nullptr for an omitted optional input.
  std::span<const Tensor* const> inputs;
  // In step.outputs order. A planned output is a view of the arena with the dims InferShapes
  // gave: the kernel writes its bytes. An output InferShapes left unknown is undefined: the
  // kernel assigns a tensor it made (only such kernels allocate during a run).
  std::span<Tensor* const> outputs;
  std::byte* workspace = nullptr;  // WorkspaceBytes(...) bytes, 64-byte aligned
  size_t workspace_bytes = 0;
  ThreadPool* pool = nullptr;      // never null in a session; threads() is the session's count
};

class StepKernel {
 public:
  virtual ~StepKernel() = default;
  // Output dims from input dims (nullptr for an omitted input), called when a session's input
  // shapes change. std::nullopt for an output whose dims only the run can tell. An input that
  // does not fit the step (a wrong channel count, say) is an error naming the step.
  virtual Status InferShapes(std::span<const Dims* const> inputs,
                             std::vector<std::optional<Dims>>* outputs) const = 0;
  // Scratch bytes Run needs for these input dims and thread count.
  virtual size_t WorkspaceBytes(std::span<const Dims* const> inputs, size_t threads) const {
    (void)inputs;
    (void)threads;
    return 0;
  }
  // Pairs (output, input) whose buffers may be the same: the kernel reads each element of the
  // input before writing the same element of the output. The planner shares them when the
  // input is an activation that no later step reads and the byte sizes agree.
  virtual std::vector<std::pair<int, int>> InPlace() const { return {}; }
  // For a step that only copies each input into one contiguous byte range of output 0 (a
  // channel concat of one image): those ranges' byte offsets, one per input, for these input
  // dims; empty otherwise. The planner may then make an input's buffer that range of the
  // output's, so its producer writes it in place, and Run must skip a copy whose source already
  // is its destination.
  virtual std::vector<size_t> InputRangesInOutput(std::span<const Dims* const> inputs) const {
    (void)inputs;
    return {};
  }
  virtual Status Run(const StepArgs& args) const = 0;
  // What really runs, for profiles: "conv2d direct_nchwc16 avx512".
  virtual std::string Describe() const = 0;
};

// Prepares the kernel for `step`; errors name the step. The module outlives the kernel.
using KernelFactory = Expected<std::unique_ptr<StepKernel>> (*)(const Step& step,
                                                                const Module& module);

}  // namespace kiln::runtime
