// Runs passes in order over a graph: the verifier after each (always in debug builds, and when
// asked), IR printed after the passes asked for, and a record of what each pass did and took.
#pragma once

#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace kiln::passes {

#ifdef NDEBUG
inline constexpr bool kVerifyByDefault = false;
#else
inline constexpr bool kVerifyByDefault = true;
#endif

struct PassManagerOptions {
  std::string print_ir_after;      // "", "all", or a pass name
  std::set<std::string> disabled;  // pass names to skip
  bool verify = kVerifyByDefault;
  std::ostream* ir_out = nullptr;  // where printed IR goes (required when print_ir_after is set)
};

struct PassRecord {
  std::string name;
  bool changed = false;
  double ms = 0;
  size_t nodes_after = 0;  // subgraphs included
};

class PassManager {
 public:
  explicit PassManager(PassManagerOptions options) : options_(std::move(options)) {}
  void Add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  // Errors name the pass that failed or left a graph the verifier refuses.
  Status Run(ir::Graph& graph);
  const std::vector<PassRecord>& records() const { return records_; }
  // One line per pass run: time, whether it changed the graph, nodes after; and the total.
  std::string TimingReport() const;

 private:
  PassManagerOptions options_;
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<PassRecord> records_;
};

size_t CountNodes(const ir::Graph& graph);

}  // namespace kiln::passes
