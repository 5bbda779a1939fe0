// Rewrites nodes of older opsets into the newest form, so each op is implemented once:
// attributes that later opsets turned into inputs (Split's split, Squeeze/Unsqueeze/Reduce*'s
// axes, Pad's pads and value, Clip's min and max, Slice's starts/ends/axes, Upsample's scales,
// TopK's k) become constant inputs. node.opset keeps the model's version for ops whose
// semantics (not just form) changed.
#pragma once

#include "ir/graph.h"
#include "support/status.h"

namespace kiln::onnx {

Status NormalizeOpsets(ir::Graph& graph);

}  // namespace kiln::onnx
