// If, Loop, Scan: the ops that run subgraphs. They have no kernel; the interpreter's
// run_subgraph callback runs each body, and this file slices and stacks tensors around it.
// Bodies may carry sequences and optionals as loop-carried values; scans stack tensors only.
#include <algorithm>
#include <cstring>

#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

// A Loop stops with an error after this many iterations. Without it, a Loop with neither a trip
// count nor a condition (or a trip count like 2^62) would hang the caller; no inference model
// we know of iterates more than a few thousand times.
constexpr int64_t kMaxLoopIterations = int64_t{1} << 20;

// Subgraphs nest (a Loop in an If in a Scan...). The depth is fixed by the file, but a hostile
// file could nest deep enough to exhaust the stack, so running bodies deeper than this fails.
constexpr int kMaxNesting = 64;
thread_local int nesting = 0;

Status RunBody(RunContext& ctx, const ir::Graph& body, const std::vector<Tensor>& inputs,
               std::vector<Tensor>* outputs) {
  if (nesting >= kMaxNesting)
    return ctx.Error("subgraphs nest deeper than kiln's limit of ", kMaxNesting);
  if (inputs.size() != body.inputs.size())
    return ctx.Error("body '", body.name, "' takes ", body.inputs.size(), " inputs, the op binds ",
                     inputs.size());
  ++nesting;
  Status st = ctx.run_subgraph(body, inputs, outputs);
  --nesting;
  return st;
}

Status CheckSliceable(const RunContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() == DType::kString || DTypeSize(t.dtype()) == 0)
    return ctx.Error(what, " of type ", DTypeName(t.dtype()), " cannot be sliced or stacked");
  return Status::Ok();
}

// The sub-tensor at `index` along `axis`, with that axis removed.
Tensor SliceAxis(const Tensor& t, int64_t axis, int64_t index) {
  std::vector<int64_t> dims = t.dims();
  int64_t outer = 1, inner = DTypeSize(t.dtype());
  for (int64_t i = 0; i < axis; ++i) outer *= dims[i];
  for (int64_t i = axis + 1; i < t.rank(); ++i) inner *= dims[i];
  const int64_t n = dims[axis];
  dims.erase(dims.begin() + axis);
  Tensor out(t.dtype(), dims);
  const char* src = static_cast<const char*>(t.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + o * inner, src + (o * n + index) * inner, inner);
  return out;
}

// Stacks equal-shaped tensors along a new `axis`. `empty_elem` gives the type and element shape
// when `parts` is empty (a loop that ran zero times).
Expected<Tensor> Stack(const RunContext& ctx, const std::vector<Tensor>& parts, int64_t axis,
                       const Tensor& empty_elem, const char* what) {
  const Tensor& first = parts.empty() ? empty_elem : parts[0];
  KILN_RETURN_IF_ERROR(CheckSliceable(ctx, first, what));
  for (const Tensor& p : parts)
    if (p.dtype() != first.dtype() || p.dims() != first.dims())
      return ctx.Error(what, " changes from ", DescribeTensor(first), " to ", DescribeTensor(p),
                       " between iterations; it cannot be stacked");
  std::vector<int64_t> dims = first.dims();
  if (axis < 0 || axis > first.rank())
    return ctx.Error(what, ": axis ", axis, " is out of range for rank ", first.rank() + 1);
  dims.insert(dims.begin() + axis, static_cast<int64_t>(parts.size()));
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Make(first.dtype(), dims, what));
  int64_t outer = 1, inner = DTypeSize(first.dtype());
  for (int64_t i = 0; i < axis; ++i) outer *= first.dim(i);
  for (int64_t i = axis; i < first.rank(); ++i) inner *= first.dim(i);
  const int64_t n = static_cast<int64_t>(parts.size());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t k = 0; k < n; ++k) {
    const char* src = static_cast<const char*>(parts[k].raw());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + (o * n + k) * inner, src + o * inner, inner);
  }
  return out;
}

// An empty element for stacking zero iterations: the body output's declared dtype and static
// dims (dims that are not static become 0).
Expected<Tensor> EmptyElement(const RunContext& ctx, const ir::Value& v) {
  std::vector<int64_t> dims;
  if (v.type.shape)
    for (const Dim& d : *v.type.shape) dims.push_back(d.is_static() ? d.value : 0);
  if (v.type.dtype == DType::kUndefined)
    return ctx.Error("body output '", v.name, "' has no declared type; a zero-iteration scan "
                     "output cannot be built");
  return Tensor::Make(v.type.dtype, dims, v.name);
}

Expected<bool> ReadCond(const RunContext& ctx, const Tensor& t, const char* what) {
  if (t.numel() != 1 || t.dtype() == DType::kString)
    return ctx.Error(what, " must hold exactly one boolean, got ", DescribeTensor(t));
  return t.AsDouble(0) != 0;
}

// If -----------------------------------------------------------------------------------------

// Merges two branch types: the dtype if they agree, dims where both agree.
ValueType MergeBranch(const ValueType& a, const ValueType& b) {
  ValueType out;
  out.dtype = a.dtype == b.dtype ? a.dtype : DType::kUndefined;
  if (a.shape && b.shape && a.shape->size() == b.shape->size()) {
    out.shape.emplace();
    for (size_t i = 0; i < a.shape->size(); ++i)
      out.shape->push_back((*a.shape)[i] == (*b.shape)[i] ? (*a.shape)[i] : Dim::Unknown());
  }
  return out;
}

Status InferIf(ir::Node& node) {
  ir::AttrReader r(node);
  const ir::Graph* then_g = r.GraphAttr("then_branch");
  const ir::Graph* else_g = r.GraphAttr("else_branch");
  KILN_RETURN_IF_ERROR(r.status());
  if (then_g == nullptr || else_g == nullptr)
    return Status::Error(node.Where(), "needs graph attributes then_branch and else_branch");
  if (then_g->outputs.size() != node.outputs.size() ||
      else_g->outputs.size() != node.outputs.size())
    return Status::Error(node.Where(), "then_branch has ", then_g->outputs.size(),
                         " outputs and else_branch ", else_g->outputs.size(), ", the node ",
                         node.outputs.size());
  for (size_t i = 0; i < node.outputs.size(); ++i)
    SetOutputType(node, i, MergeBranch(then_g->outputs[i]->type, else_g->outputs[i]->type));
  return Status::Ok();
}

Status RunIf(RunContext& ctx) {
  ir::AttrReader r(ctx.node);
  const ir::Graph* then_g = r.GraphAttr("then_branch");
  const ir::Graph* else_g = r.GraphAttr("else_branch");
  KILN_RETURN_IF_ERROR(r.status());
  if (then_g == nullptr || else_g == nullptr)
    return ctx.Error("needs graph attributes then_branch and else_branch");
  if (ctx.input(0) == nullptr) return ctx.Error("input 'cond' is missing");
  KILN_ASSIGN_OR_RETURN(bool cond, ReadCond(ctx, *ctx.input(0), "'cond'"));
  const ir::Graph& branch = cond ? *then_g : *else_g;
  std::vector<Tensor> outs;
  KILN_RETURN_IF_ERROR(RunBody(ctx, branch, {}, &outs));
  if (outs.size() != ctx.outputs.size())
    return ctx.Error("branch '", branch.name, "' produced ", outs.size(), " outputs, the node has ",
                     ctx.outputs.size());
  for (size_t i = 0; i < outs.size(); ++i) ctx.outputs[i] = std::move(outs[i]);
  return Status::Ok();
}

// Loop ---------------------------------------------------------------------------------------

Expected<const ir::Graph*> LoopBody(const ir::Node& node) {
  ir::AttrReader r(node);
  const ir::Graph* body = r.GraphAttr("body");
  KILN_RETURN_IF_ERROR(r.status());
  if (body == nullptr) return Status::Error(node.Where(), "needs graph attribute 'body'");
  const size_t carried = node.inputs.size() < 2 ? 0 : node.inputs.size() - 2;
  if (body->inputs.size() != carried + 2)
    return Status::Error(node.Where(), "body takes ", body->inputs.size(), " inputs; with ",
                         carried, " loop-carried values it must take ", carried + 2);
  if (body->outputs.size() < carried + 1 || node.outputs.size() != body->outputs.size() - 1)
    return Status::Error(node.Where(), "body has ", body->outputs.size(),
                         " outputs; the node has ", node.outputs.size(), " and ", carried,
                         " loop-carried values");
  return body;
}

Status InferLoop(ir::Node& node) {
  KILN_ASSIGN_OR_RETURN(const ir::Graph* body, LoopBody(node));
  const size_t carried = node.inputs.size() < 2 ? 0 : node.inputs.size() - 2;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    ValueType t;
    if (i < carried) {
      // The carried value may change shape between iterations; its type is the initial one's.
      t.dtype = node.has_input(i + 2) ? node.inputs[i + 2]->type.dtype : DType::kUndefined;
      // A sequence/optional is what the body makes it: an optional may go in (empty) and a
      // sequence come out (opset 16's loop over an optional sequence).
      if (body->outputs[i + 1]->type.is_container()) t = body->outputs[i + 1]->type;
    } else {
      const ValueType& elem = body->outputs[i + 1]->type;
      t.dtype = elem.dtype;
      if (elem.shape) {
        t.shape = std::vector<Dim>{Dim::Unknown()};
        t.shape->insert(t.shape->end(), elem.shape->begin(), elem.shape->end());
      }
    }
    SetOutputType(node, i, t);
  }
  return Status::Ok();
}

Status RunLoop(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const ir::Graph* body, LoopBody(ctx.node));
  const size_t carried = ctx.num_inputs() < 2 ? 0 : ctx.num_inputs() - 2;
  const size_t scans = ctx.outputs.size() - carried;
  int64_t trip_count = -1;  // -1: none
  if (const Tensor* m = ctx.input(0)) {
    if (m->numel() != 1 || !IsInteger(m->dtype()))
      return ctx.Error("'M' must be one integer, got ", DescribeTensor(*m));
    trip_count = std::max<int64_t>(m->AsInt64(0), 0);
  }
  bool cond = true;
  if (const Tensor* c = ctx.input(1)) {
    KILN_ASSIGN_OR_RETURN(cond, ReadCond(ctx, *c, "'cond'"));
  }
  std::vector<Tensor> state;
  for (size_t i = 0; i < carried; ++i) {
    if (ctx.input(i + 2) == nullptr)
      return ctx.Error("loop-carried input ", i + 2, " is missing");
    state.push_back(*ctx.input(i + 2));
  }
  std::vector<std::vector<Tensor>> scan_parts(scans);
  std::vector<Tensor> outs;
  for (int64_t iter = 0; cond && (trip_count < 0 || iter < trip_count); ++iter) {
    if (iter >= kMaxLoopIterations)
      return ctx.Error("stopped after ", kMaxLoopIterations,
                       " iterations (kiln's limit; the loop's trip count and condition allow "
                       "more)");
    std::vector<Tensor> in = {Tensor::Scalar<int64_t>(iter), Tensor::Scalar<bool>(cond)};
    in.insert(in.end(), state.begin(), state.end());
    KILN_RETURN_IF_ERROR(RunBody(ctx, *body, in, &outs));
    if (outs.size() != 1 + carried + scans)
      return ctx.Error("body produced ", outs.size(), " outputs, expected ", 1 + carried + scans);
    KILN_ASSIGN_OR_RETURN(cond, ReadCond(ctx, outs[0], "the body's condition output"));
    for (size_t i = 0; i < carried; ++i) state[i] = std::move(outs[1 + i]);
    for (size_t k = 0; k < scans; ++k) scan_parts[k].push_back(std::move(outs[1 + carried + k]));
  }
  for (size_t i = 0; i < carried; ++i) ctx.outputs[i] = std::move(state[i]);
  for (size_t k = 0; k < scans; ++k) {
    Tensor empty;
    if (scan_parts[k].empty()) {
      KILN_ASSIGN_OR_RETURN(empty, EmptyElement(ctx, *body->outputs[1 + carried + k]));
    }
    const std::string what = StrCat("scan output ", k);
    KILN_ASSIGN_OR_RETURN(ctx.outputs[carried + k],
                          Stack(ctx, scan_parts[k], 0, empty, what.c_str()));
  }
  return Status::Ok();
}

// Scan -----------------------------------------------------------------------------------------

struct ScanAttrs {
  const ir::Graph* body = nullptr;
  size_t num_states = 0, num_scan_in = 0, num_scan_out = 0;
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
  bool batched = false;  // opset 8: a leading sequence_lens input and a batch axis everywhere
};

Expected<ScanAttrs> ReadScan(const ir::Node& node) {
  ir::AttrReader r(node);
  ScanAttrs a;
  a.body = r.GraphAttr("body");
  const int64_t m = r.Int("num_scan_inputs", -1);
  a.batched = node.opset < 9;
  a.in_dirs = r.Ints(a.batched ? "directions" : "scan_input_directions");
  a.in_axes = r.Ints("scan_input_axes");
  a.out_axes = r.Ints("scan_output_axes");
  a.out_dirs = r.Ints("scan_output_directions");
  KILN_RETURN_IF_ERROR(r.status());
  if (a.body == nullptr) return Status::Error(node.Where(), "needs graph attribute 'body'");
  const size_t inputs = node.inputs.size() - (a.batched && !node.inputs.empty() ? 1 : 0);
  if (m < 1 || static_cast<size_t>(m) > inputs)
    return Status::Error(node.Where(), "num_scan_inputs must be in [1, ", inputs, "], got ", m);
  a.num_scan_in = static_cast<size_t>(m);
  a.num_states = inputs - a.num_scan_in;
  if (a.body->inputs.size() != inputs || a.body->outputs.size() != node.outputs.size() ||
      node.outputs.size() < a.num_states)
    return Status::Error(node.Where(), "body takes ", a.body->inputs.size(), " inputs and gives ",
                         a.body->outputs.size(), " outputs; the node has ", inputs,
                         " inputs and ", node.outputs.size(), " outputs");
  a.num_scan_out = node.outputs.size() - a.num_states;
  auto fill = [&](std::vector<int64_t>* v, size_t n, const char* name) -> Status {
    if (v->empty()) v->assign(n, 0);
    if (v->size() != n)
      return Status::Error(node.Where(), "attribute ", name, " has ", v->size(),
                           " values, expected ", n);
    return Status::Ok();
  };
  KILN_RETURN_IF_ERROR(fill(&a.in_dirs, a.num_scan_in, "scan_input_directions"));
  KILN_RETURN_IF_ERROR(fill(&a.in_axes, a.num_scan_in, "scan_input_axes"));
  KILN_RETURN_IF_ERROR(fill(&a.out_axes, a.num_scan_out, "scan_output_axes"));
  KILN_RETURN_IF_ERROR(fill(&a.out_dirs, a.num_scan_out, "scan_output_directions"));
  if (a.batched && (!a.in_axes.empty() && r.Has("scan_input_axes")))
    return Status::Error(node.Where(), "scan_input_axes needs Scan opset 9 or newer");
  return a;
}

// One scan over unbatched tensors: `states` then `scans` in, states then scan outputs out.
Status ScanOnce(RunContext& ctx, const ScanAttrs& a, std::vector<Tensor> states,
                const std::vector<const Tensor*>& scans, std::vector<Tensor>* results) {
  int64_t steps = -1;
  std::vector<int64_t> axes(a.num_scan_in);
  for (size_t j = 0; j < a.num_scan_in; ++j) {
    const Tensor& t = *scans[j];
    KILN_RETURN_IF_ERROR(CheckSliceable(ctx, t, "a scan input"));
    KILN_ASSIGN_OR_RETURN(axes[j], NormalizeAxis(ctx.node, a.in_axes[j], t.rank()));
    const int64_t len = t.dim(axes[j]);
    if (steps >= 0 && len != steps)
      return ctx.Error("scan inputs have different lengths along their scan axes: ", steps,
                       " and ", len, " (", DescribeTensor(t), ")");
    steps = len;
  }
  std::vector<std::vector<Tensor>> parts(a.num_scan_out);
  std::vector<Tensor> outs;
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<Tensor> in = states;
    for (size_t j = 0; j < a.num_scan_in; ++j)
      in.push_back(SliceAxis(*scans[j], axes[j], a.in_dirs[j] ? steps - 1 - t : t));
    KILN_RETURN_IF_ERROR(RunBody(ctx, *a.body, in, &outs));
    if (outs.size() != a.num_states + a.num_scan_out)
      return ctx.Error("body produced ", outs.size(), " outputs, expected ",
                       a.num_states + a.num_scan_out);
    for (size_t i = 0; i < a.num_states; ++i) states[i] = std::move(outs[i]);
    for (size_t k = 0; k < a.num_scan_out; ++k) parts[k].push_back(std::move(outs[a.num_states + k]));
  }
  results->assign(states.begin(), states.end());
  for (size_t k = 0; k < a.num_scan_out; ++k) {
    Tensor empty;
    if (parts[k].empty()) {
      KILN_ASSIGN_OR_RETURN(empty, EmptyElement(ctx, *a.body->outputs[a.num_states + k]));
    }
    if (a.out_dirs[k]) std::reverse(parts[k].begin(), parts[k].end());
    const int64_t elem_rank = parts[k].empty() ? empty.rank() : parts[k][0].rank();
    KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.node, a.out_axes[k], elem_rank + 1));
    const std::string what = StrCat("scan output ", k);
    KILN_ASSIGN_OR_RETURN(Tensor stacked, Stack(ctx, parts[k], axis, empty, what.c_str()));
    results->push_back(std::move(stacked));
  }
  return Status::Ok();
}

Status RunScan(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(ScanAttrs a, ReadScan(ctx.node));
  const size_t first = a.batched ? 1 : 0;
  for (size_t i = first; i < ctx.num_inputs(); ++i)
    if (ctx.input(i) == nullptr) return ctx.Error("input ", i, " is missing");
  auto input = [&](size_t i) { return ctx.input(first + i); };
  if (!a.batched) {
    std::vector<Tensor> states;
    std::vector<const Tensor*> scans;
    for (size_t i = 0; i < a.num_states; ++i) states.push_back(*input(i));
    for (size_t j = 0; j < a.num_scan_in; ++j) scans.push_back(input(a.num_states + j));
    std::vector<Tensor> results;
    KILN_RETURN_IF_ERROR(ScanOnce(ctx, a, std::move(states), scans, &results));
    for (size_t i = 0; i < results.size(); ++i) ctx.outputs[i] = std::move(results[i]);
    return Status::Ok();
  }
  // Opset 8: every input has a leading batch axis and the scan axis is axis 1; each batch entry
  // is scanned on its own and the results are stacked back along axis 0.
  const int64_t batch = input(0)->rank() > 0 ? input(0)->dim(0) : -1;
  if (batch < 1) return ctx.Error("opset-8 Scan needs a batch of at least 1");
  for (size_t i = 0; i < a.num_states + a.num_scan_in; ++i) {
    const Tensor& t = *input(i);
    KILN_RETURN_IF_ERROR(CheckSliceable(ctx, t, "a Scan input"));
    const int64_t min_rank = i < a.num_states ? 1 : 2;
    if (t.rank() < min_rank || t.dim(0) != batch)
      return ctx.Error("input ", first + i, " ", DescribeTensor(t),
                       " must have the batch size ", batch, " as its first dim");
  }
  std::vector<int64_t> seq_lens;
  if (const Tensor* lens = ctx.input(0)) {
    KILN_ASSIGN_OR_RETURN(seq_lens, lens->ToInt64Vector("sequence_lens"));
  }
  ScanAttrs inner = a;
  inner.in_axes.assign(a.num_scan_in, 0);
  std::vector<std::vector<Tensor>> per_batch(ctx.outputs.size());
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> states;
    std::vector<Tensor> scan_store;
    for (size_t i = 0; i < a.num_states; ++i) states.push_back(SliceAxis(*input(i), 0, b));
    for (size_t j = 0; j < a.num_scan_in; ++j) {
      scan_store.push_back(SliceAxis(*input(a.num_states + j), 0, b));
      // Shorter sequences would need per-entry padding of the outputs; kiln does not do that.
      if (!seq_lens.empty() &&
          (static_cast<int64_t>(seq_lens.size()) != batch || seq_lens[b] != scan_store.back().dim(0)))
        return ctx.Error("sequence_lens shorter than the scan inputs are not supported");
    }
    std::vector<const Tensor*> scans;
    for (const Tensor& t : scan_store) scans.push_back(&t);
    std::vector<Tensor> results;
    KILN_RETURN_IF_ERROR(ScanOnce(ctx, inner, std::move(states), scans, &results));
    for (size_t i = 0; i < results.size(); ++i) per_batch[i].push_back(std::move(results[i]));
  }
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    const std::string what = StrCat("Scan output ", i);
    KILN_ASSIGN_OR_RETURN(ctx.outputs[i], Stack(ctx, per_batch[i], 0, Tensor(DType::kFloat32, {0}),
                                                what.c_str()));
  }
  return Status::Ok();
}

Status InferScan(ir::Node& node) {
  KILN_ASSIGN_OR_RETURN(ScanAttrs a, ReadScan(node));
  const size_t first = a.batched ? 1 : 0;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    ValueType t;
    if (i < a.num_states) {
      if (node.has_input(first + i)) t = node.inputs[first + i]->type;
    } else {
      t.dtype = a.body->outputs[i]->type.dtype;
    }
    SetOutputType(node, i, t);
  }
  return Status::Ok();
}

constexpr OpDef kControlFlowOps[] = {
    {"", "If", InferIf, RunIf, 1, false},
    {"", "Loop", InferLoop, RunLoop, 1, false},
    {"", "Scan", InferScan, RunScan, 8, false},
};

}  // namespace

std::span<const OpDef> ControlFlowOps() { return kControlFlowOps; }

}  // namespace kiln::ops
