// The readable text form of a graph (`kiln inspect`): one line per node with its outputs, op,
// inputs, attributes and output types.
#pragma once

#include <string>

#include "ir/graph.h"

namespace kiln::ir {

std::string PrintGraph(const Graph& graph);
std::string PrintAttribute(const Attribute& a);

}  // namespace kiln::ir
