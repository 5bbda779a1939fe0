// Softmax, LogSoftmax, Hardmax, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
#include "kernels/ref/softmax.h"

#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

// Before opset 13 the input is coerced to 2-D at `axis` (default 1) and each row of the
// flattened trailing part is normalized; from 13 on, one axis (default -1) is.
bool IsCoerced2D(const ir::Node& node) { return node.opset < 13; }

Expected<int64_t> ReadSoftmaxAxis(const ir::Node& node) {
  ir::AttrReader reader(node);
  const int64_t axis = reader.Int("axis", IsCoerced2D(node) ? 1 : -1);
  KILN_RETURN_IF_ERROR(reader.status());
  return axis;
}

Status InferSoftmax(ir::Node& node) {
  if (!node.has_input(0)) return Status::Error(node.Where(), "input is missing");
  KILN_ASSIGN_OR_RETURN(int64_t axis, ReadSoftmaxAxis(node));
  const int64_t rank = InputRank(node, 0);
  if (rank >= 0) KILN_RETURN_IF_ERROR(NormalizeAxis(node, axis, rank).status());
  return InferSameAsInput0(node);
}

Status RunSoftmax(RunContext& ctx) {
  const Tensor* x = ctx.input(0);
  if (x == nullptr) return ctx.Error("input is missing");
  KILN_ASSIGN_OR_RETURN(int64_t axis, ReadSoftmaxAxis(ctx.node));
  KILN_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node, axis, x->rank()));
  ref::SoftmaxKind kind = ref::SoftmaxKind::kSoftmax;
  if (ctx.node.op_type == "LogSoftmax") kind = ref::SoftmaxKind::kLogSoftmax;
  if (ctx.node.op_type == "Hardmax") kind = ref::SoftmaxKind::kHardmax;
  // Products of dims only matter for non-empty tensors, where they cannot overflow.
  int64_t outer = 1, len = 1, inner = 1;
  if (x->numel() > 0) {
    for (int64_t i = 0; i < axis; ++i) outer *= x->dim(i);
    if (IsCoerced2D(ctx.node)) {
      for (int64_t i = axis; i < x->rank(); ++i) len *= x->dim(i);
    } else {
      len = x->dim(axis);
      for (int64_t i = axis + 1; i < x->rank(); ++i) inner *= x->dim(i);
    }
  }
  auto y = ref::Softmax(*x, kind, outer, len, inner);
  if (!y.ok()) return y.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(y).value();
  return Status::Ok();
}

Expected<ref::LossParams> ReadLossParams(const ir::Node& node) {
  ir::AttrReader reader(node);
  ref::LossParams p;
  const std::string reduction = reader.String("reduction", "mean");
  if (reader.Has("ignore_index")) p.ignore_index = reader.Int("ignore_index", 0);
  KILN_RETURN_IF_ERROR(reader.status());
  if (reduction == "none") {
    p.reduction = ref::LossReduction::kNone;
  } else if (reduction == "sum") {
    p.reduction = ref::LossReduction::kSum;
  } else if (reduction == "mean") {
    p.reduction = ref::LossReduction::kMean;
  } else {
    return Status::Error(node.Where(), "reduction must be 'none', 'sum' or 'mean', got '",
                         reduction, "'");
  }
  return p;
}

// Both losses: output 0 is [N, d1..dk] (the target's shape) without reduction, else a scalar;
// SoftmaxCrossEntropyLoss's optional output 1 has the scores' type.
Status InferLoss(ir::Node& node) {
  if (!node.has_input(0) || !node.has_input(1))
    return Status::Error(node.Where(), "needs the scores/input and the target/labels inputs");
  KILN_ASSIGN_OR_RETURN(ref::LossParams p, ReadLossParams(node));
  ValueType loss;
  loss.dtype = node.inputs[0]->type.dtype;
  if (p.reduction == ref::LossReduction::kNone) {
    loss.shape = node.inputs[1]->type.shape;
  } else {
    loss.shape = std::vector<Dim>{};
  }
  SetOutputType(node, 0, std::move(loss));
  SetOutputType(node, 1, node.inputs[0]->type);
  return Status::Ok();
}

Status RunNllLoss(RunContext& ctx) {
  if (ctx.input(0) == nullptr || ctx.input(1) == nullptr)
    return ctx.Error("needs the 'input' and 'target' inputs");
  KILN_ASSIGN_OR_RETURN(ref::LossParams p, ReadLossParams(ctx.node));
  auto loss = ref::NllLoss(*ctx.input(0), *ctx.input(1), ctx.input(2), p);
  if (!loss.ok()) return loss.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(loss).value();
  return Status::Ok();
}

Status RunCrossEntropy(RunContext& ctx) {
  if (ctx.input(0) == nullptr || ctx.input(1) == nullptr)
    return ctx.Error("needs the 'scores' and 'labels' inputs");
  KILN_ASSIGN_OR_RETURN(ref::LossParams p, ReadLossParams(ctx.node));
  auto r = ref::SoftmaxCrossEntropy(*ctx.input(0), *ctx.input(1), ctx.input(2), p);
  if (!r.ok()) return r.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(r->loss);
  if (ctx.outputs.size() > 1) ctx.outputs[1] = std::move(r->log_prob);
  return Status::Ok();
}

}  // namespace

std::span<const OpDef> SoftmaxOps() {
  // promote_half: float16/bfloat16 are normalized in float32 (sums in double).
  static const OpDef kOps[] = {
      {"", "Softmax", InferSoftmax, RunSoftmax, 1, true},
      {"", "LogSoftmax", InferSoftmax, RunSoftmax, 1, true},
      {"", "Hardmax", InferSoftmax, RunSoftmax, 1, true},
      {"", "NegativeLogLikelihoodLoss", InferLoss, RunNllLoss, 12, true},
      {"", "SoftmaxCrossEntropyLoss", InferLoss, RunCrossEntropy, 12, true},
  };
  return kOps;
}

}  // namespace kiln::ops
