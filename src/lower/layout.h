// Layout planning: which module values are held channel-blocked (NCHWc) instead of NCHW.
//
// A conv step whose prepared algorithm is kDirectNchwc convolves on NCHWc; on its own it
// reorders its input and output through its workspace on every run. This plan keeps whole
// chains blocked instead: a value is blocked when it belongs to a group of values joined by
// layout-agnostic steps (unary eltwise; binary eltwise over operands of one shape) and that
// group touches such convs, with every channel count a multiple of the block (no padded
// channels). Blocked values get the 5-D dims [N, C/c, H, W, c], so the eltwise kernels, which
// walk flat same-shape buffers, run on them unchanged; the conv steps say which of their sides
// are blocked in params ("layout_in"/"layout_out" = c). Where a blocked group meets a step that
// needs NCHW (pools, gemm, other convs, graph outputs, reference partitions), one explicit
// "layout_reorder" step per value is inserted, shared by all its NCHW readers.
//
// It runs on the lowered module and follows the algorithms the native lowerings chose. Those
// choices are layout-aware: before lowering, ChooseBlockedConvs runs the same grouping on the IR
// graph with every conv that could run on NCHWc counted as one (1x1 and other dense convs whose
// input channels fill whole blocks, depthwise convs with dwconv's blocked windows), and names
// the convs that touch a group worth blocking. Lowering prepares those as kDirectNchwc or
// blocked kDepthwise (LowerContext::PreferBlocked), so whole depthwise-separable chains
// (1x1 expand, depthwise, 1x1 project, residual Add) stay NCHWc; the cost model picks the rest.
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
