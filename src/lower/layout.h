// Layout planning: which module values are held channel-blocked (NCHWc) instead of NCHW.
//
// A conv step whose prepared algorithm is kDirectNchwc or a blocked kDepthwise convolves on
// NCHWc; on its own it reorders its input and output through its workspace on every run. An
// image stem's kStemNchwc reads NCHW and writes NCHWc: only its output side can be blocked. This
// plan keeps whole chains blocked instead: a value is blocked when it belongs to a group of values
// joined by layout-agnostic steps (unary eltwise; binary eltwise over operands of one shape; a
// per-channel Mul by an [N, C, 1, 1] scale, which becomes "channel_scale_nchwc") and that group
// touches such convs. Blocked values get the 5-D dims [N, ceil(C/c), H, W, c]: a last block may
// be padded by up to a third of C when every step in the group keeps the padding lanes finite
// (the next conv's zero weights cancel them). The eltwise kernels, which walk flat same-shape
// buffers, run on them unchanged; the conv steps say which of their sides are blocked in params
// ("layout_in"/"layout_out" = c), and a global average pool may read a blocked input
// ("layout_in", "channels"). Where a blocked group meets a step that needs NCHW (other pools,
// gemm, other convs, graph outputs, reference partitions), one explicit "layout_reorder" step per
// value is inserted, shared by all its NCHW readers.
//
// It runs on the lowered module and follows the algorithms the native lowerings chose. Those
// choices are layout-aware: before lowering, ChooseBlockedConvs runs the same grouping on the IR
// graph with every conv that could gain from NCHWc counted as one (1x1 convs, windows the cost
// model gives the direct kernel, depthwise convs within dwconv's blocked windows, image stems),
// drops those that would not pay (a 1x1 needs both sides blocked, a depthwise conv one, a stem its
// output) until stable, and names the rest. Lowering prepares those as kDirectNchwc, blocked
// kDepthwise or kStemNchwc (LowerContext::PreferBlocked), so whole depthwise-separable chains
// (1x1 expand, depthwise, squeeze-and-excitation, 1x1 project, residual Add) and the image stem
// before them stay NCHWc; the cost model picks the rest.
#pragma once

#include <cstddef>
#include <unordered_set>

#include "ir/graph.h"
#include "runtime/module.h"
#include "support/cpu.h"
#include "support/status.h"

namespace kiln::lower {

// False when the environment sets KILN_LAYOUT=0 (to compare with and without the plan).
bool LayoutPlanningEnabled();

struct LayoutReport {
  size_t blocked_values = 0;  // values now held NCHWc
  size_t reorders = 0;        // layout_reorder steps inserted
};

// Rewrites `module`'s steps and values in place. A group is blocked only when it needs fewer
// reorder steps than the in-step reorders of its convs it saves (so a lone conv keeps its own).
Status PlanBlockedLayout(runtime::Module& module, LayoutReport* report = nullptr);

// The Conv / kiln.FusedConv nodes of `graph` that should run on NCHWc at `isa` (none below
// AVX2, where the NCHWc kernels are scalar).
std::unordered_set<const ir::Node*> ChooseBlockedConvs(const ir::Graph& graph, IsaLevel isa);

}  // namespace kiln::lower
