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
// It runs on the lowered module, after the native lowerings chose each conv's algorithm at the
// target ISA with the conv cost model: the plan follows those choices and never changes them.
#pragma once

#include <cstddef>

#include "runtime/module.h"
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

}  // namespace kiln::lower
