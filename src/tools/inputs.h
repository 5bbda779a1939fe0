// Model inputs for the CLI's commands: NAME=FILE.npy specs, or deterministic random tensors.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "interp/interpreter.h"
#include "ir/graph.h"
#include "support/status.h"
#include "support/tensor.h"
#include "tools/engine.h"

namespace kiln::tools {

// A deterministic random tensor for graph input `v`: symbolic dims become 1; floats are N(0, 1),
// integers and bools small (0..2). Refuses strings and shapes above 1 GiB.
Expected<Tensor> RandomInput(const ir::Value& v, std::mt19937& rng);
// The same for a value known by name, type and dims (-1: symbolic).
Expected<Tensor> RandomInput(const std::string& name, DType dtype, std::vector<int64_t> dims,
                             std::mt19937& rng);

// Inputs from `specs` (NAME=FILE.npy); with no specs, random inputs (seed 42) for every graph
// input, as `kiln run` makes them.
Expected<interp::NamedTensors> MakeInputs(const ir::Graph& graph,
                                          const std::vector<std::string>& specs);
Expected<interp::NamedTensors> MakeInputs(const std::vector<InputInfo>& model_inputs,
                                          const std::vector<std::string>& specs);

}  // namespace kiln::tools
