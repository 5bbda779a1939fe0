// The text form of a graph: what `kiln inspect` and `--print-ir-after` print, and exactly what
// ir/parser.h reads back (print(parse(text)) == text). One line per input, constant, node and
// output; a node's subgraphs follow it, indented four more spaces, in attribute order:
//
//   graph main (opsets ai.onnx=13)
//     input  %x: float32[N,4]
//     const  %w: float32[2,2] = [1,2,3,4]
//     const  %big: float32[64,64] = random(seed=7)
//     %y = Gemm(%x, %w, _) {alpha=1.0, transB=1} : float32[N,2]  # gemm1
//     output %y: float32[N,2]
//
// Constants with at most kInlineElements elements print their values (shortest round-trip form);
// larger ones print a seeded pseudo-random fill marker (RandomFill) so golden files stay small.
// Names made of letters, digits and _ . / - : print bare; any other name prints quoted ("...").
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace kiln::ir {

struct PrintOptions {
  // Every constant prints its values, however large: the text then carries the whole graph
  // (reference partitions in compiled modules), at the cost of size.
  bool full_constants = false;
};
std::string PrintGraph(const Graph& graph, const PrintOptions& options = {});
std::string PrintAttribute(const Attribute& a);
std::string PrintType(const ValueType& type);

// ---- pieces of the text format the parser shares --------------------------------------------

inline constexpr int64_t kInlineElements = 64;

// The tensor `random(seed=S)` stands for: deterministic on every platform (splitmix64, no
// std::distribution). Floats lie in [-1,1] (never 0), signed integers in [-8,8] (never 0),
// unsigned in [0,15], bools 0/1. Elements 0..31 carry bit i of the seed in their sign (low bit
// for unsigned and bool), so the printer recovers the seed from the data: a parsed fill prints
// back as the same marker. Dims must be validated (non-negative, no overflow).
Tensor RandomFill(DType dtype, const std::vector<int64_t>& dims, uint32_t seed);
// The seed to print for a large tensor: the one it was filled from, else a hash of its bytes.
uint32_t FillSeedFor(const Tensor& t);

// "name" bare when every character is a name character (and it does not end with ':'); quoted
// with C escapes otherwise. Words that must not look like numbers also quote a leading digit/'-'.
std::string QuoteName(const std::string& s, bool allow_leading_digit);
bool IsNameChar(char c);

}  // namespace kiln::ir
