// The interface between the lowering driver (lower.cc) and the native lowerings, one family
// per file (native_conv.cc, native_gemm.cc, ...), listed explicitly in lower.cc.
#pragma once

#include <functional>
#include <optional>
#include <vector>
#include <span>
#include <string>

#include "ir/graph.h"
#include "kernels/gemm/gemm.h"
#include "runtime/module.h"
#include "support/cpu.h"
#include "support/status.h"

namespace kiln::lower {

// What a native lowering may ask and do while it lowers one node.
class LowerContext {
 public:
  virtual ~LowerContext() = default;
  virtual IsaLevel isa() const = 0;
  // -O3: time the candidate algorithms of a layer once and keep the fastest, instead of the
  // cost model's guess (kernels that have a choice to make).
  virtual bool measure_algorithms() const { return false; }
  // Whether layout planning wants this Conv node on NCHWc (lower/layout.h, ChooseBlockedConvs):
  // its neighbors stay blocked, so a blocked algorithm saves reorders the cost model ignores.
  virtual bool PreferBlocked(const ir::Node& /*node*/) const { return false; }
  // The module value id of IR value `v` (a graph input, a constant or a node's output), made on
  // first use. A constant used this way is copied into a blob; one read only through prepacked
  // blobs is never stored. nullptr (an omitted input) gives -1.
  virtual Expected<int32_t> ValueId(const ir::Value* v) = 0;
  // Copies `bytes` into the module's weights, aligned; returns the blob index.
  virtual int32_t AddBlob(std::span<const std::byte> bytes) = 0;
  virtual void AddStep(runtime::Step step) = 0;
};

// Returns true when it emitted the step(s) for `node`, false to leave the node to a reference
// partition (an op, type, shape or attribute this family does not handle natively). An error
// stops compilation; use it only for a node that is wrong, never for "not supported".
using NativeLowering = Expected<bool> (*)(const ir::Node& node, LowerContext& ctx);

std::span<const NativeLowering> ConvLowerings();     // native_conv.cc
std::span<const NativeLowering> GemmLowerings();     // native_gemm.cc
std::span<const NativeLowering> EltwiseLowerings();  // native_eltwise.cc
std::span<const NativeLowering> PoolLowerings();     // native_pool.cc
std::span<const NativeLowering> TensorLowerings();   // native_tensor.cc

// Static float32 dims of `v`, or nullopt when its type is not float32 with a fully static shape
// (the common precondition of native lowerings).
std::optional<std::vector<int64_t>> StaticFloatDims(const ir::Value* v);
// The activation of a kiln.FusedConv / kiln.FusedGemm node as a GEMM epilogue; nullopt when it
// is not one the kernels fuse (the node then runs in a reference partition).
std::optional<gemm::Epilogue> FusedActivation(const ir::Node& node);

// The same, except that the first dim may be symbolic (-1 then): for kernels that run any batch.
std::optional<std::vector<int64_t>> BatchFreeFloatDims(const ir::Value* v);

}  // namespace kiln::lower
