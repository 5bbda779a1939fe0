// Reads the text form that ir/printer.h prints (for `kiln opt` and the golden pass tests):
// print(parse(text)) == text. Blank lines and lines starting with '#' are skipped. A name a
// subgraph uses but never defines becomes an outer-scope value; in the main graph it is an error.
// Errors name the line and column.
#pragma once

#include <memory>
#include <string_view>

#include "ir/graph.h"
#include "support/status.h"

namespace kiln::ir {

Expected<std::unique_ptr<Graph>> ParseGraph(std::string_view text);

}  // namespace kiln::ir
