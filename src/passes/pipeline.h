// The one place that orders passes: a fixed list per optimization level, and the table of
// passes by name (for `kiln opt --passes` and `--disable-pass`).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "passes/pass.h"
#include "support/status.h"

namespace kiln::passes {

inline constexpr int kMaxOptLevel = 3;

// -O0: nothing (reference kernels only); -O1: simplification and shape inference; -O2: -O1
// plus folding into Conv/Gemm, activation recognition and fusion (lowering then picks native
// kernels); -O3: the -O2 passes, and lowering measures convolution algorithms.
std::vector<std::unique_ptr<Pass>> BuildPipeline(int opt_level);
Expected<std::unique_ptr<Pass>> CreatePassByName(std::string_view name);
std::vector<std::string> PassNames();

}  // namespace kiln::passes
