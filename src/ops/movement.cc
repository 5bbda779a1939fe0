// Data-movement ops: Transpose, Concat, Split, Slice, Pad, Tile, Expand, DepthToSpace,
// SpaceToDepth, Trilu, ReverseSequence, Compress. Every type moves (strings included where the
// kernel is a plain copy); nothing here does arithmetic, so promote_half stays off.
#include "kernels/ref/movement.h"

#include <algorithm>
#include <optional>

#include "kernels/ref/broadcast.h"
#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

using Dims = std::vector<Dim>;

// The constant int values of input i: nullopt when the input is not constant, an empty vector
// when it is absent.
Expected<std::optional<std::vector<int64_t>>> ConstInts(const ir::Node& node, size_t i,
                                                        const char* what) {
  if (!node.has_input(i)) return std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
  const Tensor* t = ConstantInput(node, i);
  if (t == nullptr) return std::optional<std::vector<int64_t>>();
  auto v = t->ToInt64Vector(what);
  if (!v.ok()) return v.status().WithContext(node.Where());
  return std::optional<std::vector<int64_t>>(std::move(*v));
}

// Input i's int values, or an empty vector when the input is absent.
Expected<std::vector<int64_t>> IntsOf(RunContext& ctx, size_t i, const char* what) {
  const Tensor* t = ctx.input(i);
  if (t == nullptr) return std::vector<int64_t>{};
  auto v = t->ToInt64Vector(what);
  if (!v.ok()) return v.status().WithContext(ctx.node.Where());
  return v;
}

Dims StaticDims(const std::vector<int64_t>& dims) {
  Dims out;
  for (int64_t d : dims) out.push_back(Dim::Static(d));
  return out;
}

Dims UnknownDims(size_t rank) { return Dims(rank, Dim::Unknown()); }

// Wraps a kernel's error with the node's context.
template <class T>
Expected<T> Ctx(const ir::Node& node, Expected<T> r) {
  if (!r.ok()) return r.status().WithContext(node.Where());
  return r;
}

Status SetOutput(RunContext& ctx, Expected<Tensor> r) {
  if (!r.ok()) return r.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(*r);
  return Status::Ok();
}

// ---- Transpose -------------------------------------------------------------------------------

Expected<std::vector<int64_t>> Perm(const ir::Node& node, int64_t rank) {
  ir::AttrReader attrs(node);
  std::vector<int64_t> perm = attrs.Ints("perm");
  KILN_RETURN_IF_ERROR(attrs.status());
  if (!attrs.Has("perm"))
    for (int64_t k = rank; k-- > 0;) perm.push_back(k);
  std::vector<bool> seen(rank, false);
  bool ok = static_cast<int64_t>(perm.size()) == rank;
  for (size_t k = 0; ok && k < perm.size(); ++k) {
    ok = perm[k] >= 0 && perm[k] < rank && !seen[perm[k]];
    if (ok) seen[perm[k]] = true;
  }
  if (!ok)
    return Status::Error(node.Where(), "perm ", DimsToString(perm), " is not a permutation of 0..",
                         rank - 1);
  return perm;
}

Status InferTranspose(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "data"));
  const Dims* in = InputShape(node, 0);
  std::optional<Dims> out;
  if (in) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> perm, Perm(node, in->size()));
    out.emplace();
    for (int64_t p : perm) out->push_back((*in)[p]);
  }
  SetOutputType(node, 0, TypeOf(InputDType(node, 0), out));
  return Status::Ok();
}

Status RunTranspose(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "data"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> perm, Perm(ctx.node, in->rank()));
  return SetOutput(ctx, ref::Transpose(*in, perm));
}

// ---- Concat ----------------------------------------------------------------------------------

Expected<int64_t> ConcatAxis(const ir::Node& node, int64_t rank) {
  ir::AttrReader attrs(node);
  if (!attrs.Has("axis")) return Status::Error(node.Where(), "attribute 'axis' is required");
  const int64_t axis = attrs.Int("axis", 0);
  KILN_RETURN_IF_ERROR(attrs.status());
  return NormalizeAxis(node, axis, rank);
}

Status InferConcat(ir::Node& node) {
  if (node.inputs.empty()) return Status::Error(node.Where(), "needs at least one input");
  for (size_t i = 0; i < node.inputs.size(); ++i) KILN_RETURN_IF_ERROR(RequireInput(node, i, "x"));
  const DType t = InputDType(node, 0);
  const Dims* first = nullptr;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (InputDType(node, i) != t && InputDType(node, i) != DType::kUndefined &&
        t != DType::kUndefined)
      return Status::Error(node.Where(), "inputs '", node.inputs[0]->name, "' and '",
                           node.inputs[i]->name, "' differ in type");
    if (const Dims* s = InputShape(node, i); s && !first) first = s;
  }
  std::optional<Dims> out;
  if (first) {
    KILN_ASSIGN_OR_RETURN(int64_t axis, ConcatAxis(node, first->size()));
    out = *first;
    int64_t sum = 0;
    bool all_known = true;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Dims* s = InputShape(node, i);
      if (!s) {
        all_known = false;
        continue;
      }
      if (s->size() != first->size())
        return Status::Error(node.Where(), "inputs differ in rank: ", node.inputs[i]->name, " is ",
                             node.inputs[i]->type.ToString());
      for (size_t k = 0; k < s->size(); ++k) {
        const Dim& d = (*s)[k];
        if (static_cast<int64_t>(k) == axis) {
          // Declared dims come from the file: a hostile sum must not overflow.
          if (d.is_static() && d.value <= (int64_t{1} << 62) - sum)
            sum += d.value;
          else
            all_known = false;
        } else if (d.is_static()) {
          if ((*out)[k].is_static() && (*out)[k].value != d.value)
            return Status::Error(node.Where(), "inputs differ in dim ", k, ": ",
                                 node.inputs[i]->name, " is ", node.inputs[i]->type.ToString());
          (*out)[k] = d;
        }
      }
    }
    (*out)[axis] = all_known ? Dim::Static(sum) : Dim::Unknown();
  }
  SetOutputType(node, 0, TypeOf(t, out));
  return Status::Ok();
}

Status RunConcat(RunContext& ctx) {
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(const Tensor* t, Input(ctx, i, "x"));
    ins.push_back(t);
  }
  if (ins.empty()) return ctx.Error("needs at least one input");
  KILN_ASSIGN_OR_RETURN(int64_t axis, ConcatAxis(ctx.node, ins[0]->rank()));
  return SetOutput(ctx, ref::Concat(ins, axis));
}

// ---- Split -----------------------------------------------------------------------------------

// Split sizes along an axis of size d: the split input, else num_outputs (opset 18, last chunk
// smaller), else equal parts over the node's outputs.
Expected<std::vector<int64_t>> SplitSizes(const ir::Node& node, int64_t d,
                                          const std::vector<int64_t>& split) {
  const int64_t n = static_cast<int64_t>(node.outputs.size());
  if (!split.empty()) {
    if (static_cast<int64_t>(split.size()) != n)
      return Status::Error(node.Where(), "split ", DimsToString(split), " has ", split.size(),
                           " entries for ", n, " outputs");
    int64_t sum = 0;
    for (int64_t s : split) {
      if (s < 0 || s > d - sum)
        return Status::Error(node.Where(), "split ", DimsToString(split), " does not fit a dim of ",
                             d);
      sum += s;
    }
    if (sum != d)
      return Status::Error(node.Where(), "split ", DimsToString(split), " sums to ", sum,
                           ", not the dim ", d);
    return split;
  }
  ir::AttrReader attrs(node);
  const int64_t num = attrs.Int("num_outputs", 0);
  KILN_RETURN_IF_ERROR(attrs.status());
  if (attrs.Has("num_outputs")) {
    if (num != n || num < 1)
      return Status::Error(node.Where(), "num_outputs ", num, " does not match ", n, " outputs");
    const int64_t chunk = (d + n - 1) / n;
    std::vector<int64_t> sizes(n);
    for (int64_t i = 0; i < n; ++i) sizes[i] = std::clamp<int64_t>(d - i * chunk, 0, chunk);
    return sizes;
  }
  if (n < 1 || d % n != 0)
    return Status::Error(node.Where(), "dim ", d, " does not split into ", n, " equal parts");
  return std::vector<int64_t>(n, d / n);
}

Expected<int64_t> SplitAxis(const ir::Node& node, int64_t rank) {
  ir::AttrReader attrs(node);
  const int64_t axis = attrs.Int("axis", 0);
  KILN_RETURN_IF_ERROR(attrs.status());
  return NormalizeAxis(node, axis, rank);
}

Status InferSplit(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "input"));
  const Dims* in = InputShape(node, 0);
  const DType t = InputDType(node, 0);
  KILN_ASSIGN_OR_RETURN(auto split, ConstInts(node, 1, "split"));
  for (size_t i = 0; i < node.outputs.size(); ++i) SetOutputType(node, i, TypeOf(t, std::nullopt));
  if (!in) return Status::Ok();
  KILN_ASSIGN_OR_RETURN(int64_t axis, SplitAxis(node, in->size()));
  std::optional<std::vector<int64_t>> sizes;
  if ((*in)[axis].is_static() && split) {
    KILN_ASSIGN_OR_RETURN(sizes, SplitSizes(node, (*in)[axis].value, *split));
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    Dims out = *in;
    out[axis] = sizes ? Dim::Static((*sizes)[i]) : Dim::Unknown();
    SetOutputType(node, i, TypeOf(t, out));
  }
  return Status::Ok();
}

Status RunSplit(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "input"));
  KILN_ASSIGN_OR_RETURN(int64_t axis, SplitAxis(ctx.node, in->rank()));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> split, IntsOf(ctx, 1, "split"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, SplitSizes(ctx.node, in->dim(axis), split));
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> parts, Ctx(ctx.node, ref::Split(*in, axis, sizes)));
  for (size_t i = 0; i < parts.size() && i < ctx.outputs.size(); ++i)
    ctx.outputs[i] = std::move(parts[i]);
  return Status::Ok();
}

// ---- Slice -----------------------------------------------------------------------------------


struct SliceArgs {
  std::vector<int64_t> starts, ends, axes, steps;
};

// Checks the argument lengths, normalizes axes (no repeats) and defaults axes and steps.
Status NormalizeSliceArgs(const ir::Node& node, int64_t rank, SliceArgs* a) {
  const size_t n = a->starts.size();
  if (a->ends.size() != n)
    return Status::Error(node.Where(), "starts and ends differ in length (", n, " vs ",
                         a->ends.size(), ")");
  if (a->axes.empty())
    for (size_t k = 0; k < n; ++k) a->axes.push_back(static_cast<int64_t>(k));
  if (a->steps.empty()) a->steps.assign(n, 1);
  if (a->axes.size() != n || a->steps.size() != n)
    return Status::Error(node.Where(), "starts, ends, axes and steps differ in length");
  std::vector<bool> seen(rank, false);
  for (size_t k = 0; k < n; ++k) {
    KILN_ASSIGN_OR_RETURN(a->axes[k], NormalizeAxis(node, a->axes[k], rank));
    if (seen[a->axes[k]]) return Status::Error(node.Where(), "axis ", a->axes[k], " repeats");
    seen[a->axes[k]] = true;
    if (a->steps[k] == 0) return Status::Error(node.Where(), "step 0 on axis ", a->axes[k]);
    // Keeps the ceil arithmetic inside int64; no real dim is larger than 2^62.
    a->steps[k] = std::clamp(a->steps[k], -(int64_t{1} << 62), int64_t{1} << 62);
  }
  return Status::Ok();
}

Status InferSlice(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "data"));
  KILN_RETURN_IF_ERROR(RequireInput(node, 1, "starts"));
  KILN_RETURN_IF_ERROR(RequireInput(node, 2, "ends"));
  const Dims* in = InputShape(node, 0);
  std::optional<Dims> out;
  if (in) out = UnknownDims(in->size());
  KILN_ASSIGN_OR_RETURN(auto starts, ConstInts(node, 1, "starts"));
  KILN_ASSIGN_OR_RETURN(auto ends, ConstInts(node, 2, "ends"));
  KILN_ASSIGN_OR_RETURN(auto axes, ConstInts(node, 3, "axes"));
  KILN_ASSIGN_OR_RETURN(auto steps, ConstInts(node, 4, "steps"));
  if (in && starts && ends && axes && steps) {
    SliceArgs a{*starts, *ends, *axes, *steps};
    KILN_RETURN_IF_ERROR(NormalizeSliceArgs(node, in->size(), &a));
    out = *in;
    for (size_t k = 0; k < a.axes.size(); ++k) {
      const Dim& d = (*in)[a.axes[k]];
      (*out)[a.axes[k]] =
          d.is_static()
              ? Dim::Static(ref::SliceAxis(a.starts[k], a.ends[k], a.steps[k], d.value).second)
              : Dim::Unknown();
    }
  }
  SetOutputType(node, 0, TypeOf(InputDType(node, 0), out));
  return Status::Ok();
}

Status RunSlice(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "data"));
  SliceArgs a;
  KILN_ASSIGN_OR_RETURN(a.starts, IntsOf(ctx, 1, "starts"));
  KILN_ASSIGN_OR_RETURN(a.ends, IntsOf(ctx, 2, "ends"));
  KILN_ASSIGN_OR_RETURN(a.axes, IntsOf(ctx, 3, "axes"));
  KILN_ASSIGN_OR_RETURN(a.steps, IntsOf(ctx, 4, "steps"));
  KILN_RETURN_IF_ERROR(NormalizeSliceArgs(ctx.node, in->rank(), &a));
  ref::SliceParams p;
  p.starts.assign(in->rank(), 0);
  p.steps.assign(in->rank(), 1);
  p.counts = in->dims();
  for (size_t k = 0; k < a.axes.size(); ++k) {
    const int64_t axis = a.axes[k];
    auto [start, count] = ref::SliceAxis(a.starts[k], a.ends[k], a.steps[k], in->dim(axis));
    p.starts[axis] = start;
    p.steps[axis] = a.steps[k];
    p.counts[axis] = count;
  }
  return SetOutput(ctx, ref::Slice(*in, p));
}

// ---- Pad -------------------------------------------------------------------------------------

Expected<ref::PadMode> PadModeOf(const ir::Node& node) {
  ir::AttrReader attrs(node);
  const std::string mode = attrs.String("mode", "constant");
  KILN_RETURN_IF_ERROR(attrs.status());
  if (mode == "constant") return ref::PadMode::kConstant;
  if (mode == "reflect") return ref::PadMode::kReflect;
  if (mode == "edge") return ref::PadMode::kEdge;
  if (mode == "wrap") return ref::PadMode::kWrap;
  return Status::Error(node.Where(), "mode '", mode, "' is not constant, reflect, edge or wrap");
}

// Full-rank [begins..., ends...] from pads over `axes` (all axes when empty).
Expected<std::vector<int64_t>> FullPads(const ir::Node& node, int64_t rank,
                                        const std::vector<int64_t>& pads,
                                        std::vector<int64_t> axes) {
  if (axes.empty())
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  const size_t n = axes.size();
  if (pads.size() != 2 * n)
    return Status::Error(node.Where(), "pads ", DimsToString(pads), " needs ", 2 * n,
                         " entries for rank ", rank);
  std::vector<int64_t> full(2 * rank, 0);
  for (size_t k = 0; k < n; ++k) {
    KILN_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(node, axes[k], rank));
    full[a] = pads[k];
    full[a + rank] = pads[k + n];
  }
  return full;
}

// A pad that cannot overflow a dim sum (std::abs would overflow on INT64_MIN itself).
bool Small(int64_t p) { return p > -(int64_t{1} << 61) && p < (int64_t{1} << 61); }

Status InferPad(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "data"));
  KILN_RETURN_IF_ERROR(RequireInput(node, 1, "pads"));
  KILN_RETURN_IF_ERROR(PadModeOf(node).status());
  const Dims* in = InputShape(node, 0);
  std::optional<Dims> out;
  if (in) out = UnknownDims(in->size());
  KILN_ASSIGN_OR_RETURN(auto pads, ConstInts(node, 1, "pads"));
  KILN_ASSIGN_OR_RETURN(auto axes, ConstInts(node, 3, "axes"));
  if (in && pads && axes) {
    const int64_t rank = in->size();
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> full, FullPads(node, rank, *pads, *axes));
    for (int64_t k = 0; k < rank; ++k) {
      const Dim& d = (*in)[k];
      if (full[k] == 0 && full[k + rank] == 0)
        (*out)[k] = d;
      else if (d.is_static() && Small(full[k]) && Small(full[k + rank]) &&
               d.value + full[k] + full[k + rank] >= 0)
        (*out)[k] = Dim::Static(d.value + full[k] + full[k + rank]);
    }
  }
  SetOutputType(node, 0, TypeOf(InputDType(node, 0), out));
  return Status::Ok();
}

Status RunPad(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "data"));
  KILN_ASSIGN_OR_RETURN(ref::PadMode mode, PadModeOf(ctx.node));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, IntsOf(ctx, 1, "pads"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, IntsOf(ctx, 3, "axes"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> full, FullPads(ctx.node, in->rank(), pads, axes));
  Tensor value;
  if (const Tensor* v = ctx.input(2); v && v->numel() > 0) {
    if (v->numel() != 1)
      return ctx.Error("constant_value must be a scalar, got ", DescribeTensor(*v));
    if (v->dtype() != in->dtype())
      return ctx.Error("constant_value is ", DTypeName(v->dtype()), " but data is ",
                       DTypeName(in->dtype()));
    value = *v;
  }
  return SetOutput(ctx, ref::Pad(*in, full, mode, value));
}

// ---- Tile, Expand ----------------------------------------------------------------------------

Status InferTile(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "input"));
  KILN_RETURN_IF_ERROR(RequireInput(node, 1, "repeats"));
  const Dims* in = InputShape(node, 0);
  std::optional<Dims> out;
  if (in) out = UnknownDims(in->size());
  KILN_ASSIGN_OR_RETURN(auto repeats, ConstInts(node, 1, "repeats"));
  if (in && repeats) {
    if (repeats->size() != in->size())
      return Status::Error(node.Where(), "repeats ", DimsToString(*repeats),
                           " does not match rank ", in->size());
    for (size_t k = 0; k < in->size(); ++k) {
      const int64_t r = (*repeats)[k];
      const Dim& d = (*in)[k];
      if (r < 0)
        return Status::Error(node.Where(), "repeats ", DimsToString(*repeats), " is negative");
      if (r == 1)
        (*out)[k] = d;
      else if (d.is_static() && (d.value == 0 || r <= (int64_t{1} << 62) / d.value))
        (*out)[k] = Dim::Static(d.value * r);
    }
  }
  SetOutputType(node, 0, TypeOf(InputDType(node, 0), out));
  return Status::Ok();
}

Status RunTile(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "input"));
  KILN_ASSIGN_OR_RETURN(const Tensor* r, Input(ctx, 1, "repeats"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, IntsOf(ctx, 1, "repeats"));
  if (r->rank() != 1) return ctx.Error("repeats must be 1-D, got ", DescribeTensor(*r));
  return SetOutput(ctx, ref::Tile(*in, repeats));
}

// Expand's output: the numpy broadcast of the input's dims and the requested shape.
Expected<Dims> ExpandDims(const ir::Node& node, const Dims& in, const std::vector<int64_t>& shape) {
  const size_t rank = std::max(in.size(), shape.size());
  Dims out(rank, Dim::Static(1));
  for (size_t k = 0; k < rank; ++k) {
    const Dim a = k + in.size() >= rank ? in[k + in.size() - rank] : Dim::Static(1);
    const int64_t b = k + shape.size() >= rank ? shape[k + shape.size() - rank] : 1;
    if (b < 0) return Status::Error(node.Where(), "shape ", DimsToString(shape), " is negative");
    if (b == 1)
      out[k] = a;
    else if (!a.is_static())
      out[k] = Dim::Static(b);  // a must be 1 or b
    else if (a.value == 1 || a.value == b)
      out[k] = Dim::Static(b);
    else
      return Status::Error(node.Where(), "input dim ", a.value, " does not broadcast to shape ",
                           DimsToString(shape));
  }
  return out;
}

Status InferExpand(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "input"));
  KILN_RETURN_IF_ERROR(RequireInput(node, 1, "shape"));
  const Dims* in = InputShape(node, 0);
  KILN_ASSIGN_OR_RETURN(auto shape, ConstInts(node, 1, "shape"));
  std::optional<Dims> out;
  if (in && shape) {
    KILN_ASSIGN_OR_RETURN(out, ExpandDims(node, *in, *shape));
  } else if (const Dims* s = InputShape(node, 1);
             in && s && s->size() == 1 && (*s)[0].is_static()) {
    out = UnknownDims(std::max<size_t>(in->size(), (*s)[0].value));
  }
  SetOutputType(node, 0, TypeOf(InputDType(node, 0), out));
  return Status::Ok();
}

Status RunExpand(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "input"));
  KILN_ASSIGN_OR_RETURN(const Tensor* s, Input(ctx, 1, "shape"));
  if (s->rank() != 1) return ctx.Error("shape must be 1-D, got ", DescribeTensor(*s));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, IntsOf(ctx, 1, "shape"));
  KILN_ASSIGN_OR_RETURN(Dims out, ExpandDims(ctx.node, StaticDims(in->dims()), shape));
  std::vector<int64_t> dims;
  for (const Dim& d : out) dims.push_back(d.value);
  return SetOutput(ctx, ref::Expand(*in, dims));
}

// ---- DepthToSpace, SpaceToDepth --------------------------------------------------------------

Expected<int64_t> Blocksize(const ir::Node& node) {
  ir::AttrReader attrs(node);
  const int64_t b = attrs.Int("blocksize", 0);
  KILN_RETURN_IF_ERROR(attrs.status());
  if (b < 1 || b > (int64_t{1} << 20))
    return Status::Error(node.Where(), "blocksize ", b, " must be a positive integer");
  return b;
}

Expected<bool> DepthToSpaceCrd(const ir::Node& node) {
  ir::AttrReader attrs(node);
  const std::string mode = attrs.String("mode", "DCR");
  KILN_RETURN_IF_ERROR(attrs.status());
  if (mode != "DCR" && mode != "CRD")
    return Status::Error(node.Where(), "mode '", mode, "' is not DCR or CRD");
  return mode == "CRD";
}

// Scales dim d by num/den when static and exact; unknown otherwise.
Dim ScaleDim(const Dim& d, int64_t num, int64_t den) {
  if (!d.is_static() || (d.value * num) % den != 0) return Dim::Unknown();
  return Dim::Static(d.value * num / den);
}

Status InferDepthSpace(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "input"));
  KILN_ASSIGN_OR_RETURN(int64_t b, Blocksize(node));
  const bool to_space = node.op_type == "DepthToSpace";
  if (to_space) KILN_RETURN_IF_ERROR(DepthToSpaceCrd(node).status());
  const Dims* in = InputShape(node, 0);
  std::optional<Dims> out;
  if (in) {
    if (in->size() != 4)
      return Status::Error(node.Where(), "input must be 4-D, got ",
                           node.inputs[0]->type.ToString());
    if (to_space)
      out = Dims{(*in)[0], ScaleDim((*in)[1], 1, b * b), ScaleDim((*in)[2], b, 1),
                 ScaleDim((*in)[3], b, 1)};
    else
      out = Dims{(*in)[0], ScaleDim((*in)[1], b * b, 1), ScaleDim((*in)[2], 1, b),
                 ScaleDim((*in)[3], 1, b)};
  }
  SetOutputType(node, 0, TypeOf(InputDType(node, 0), out));
  return Status::Ok();
}

Status RunDepthToSpace(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "input"));
  KILN_ASSIGN_OR_RETURN(int64_t b, Blocksize(ctx.node));
  KILN_ASSIGN_OR_RETURN(bool crd, DepthToSpaceCrd(ctx.node));
  return SetOutput(ctx, ref::DepthToSpace(*in, b, crd));
}

Status RunSpaceToDepth(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "input"));
  KILN_ASSIGN_OR_RETURN(int64_t b, Blocksize(ctx.node));
  return SetOutput(ctx, ref::SpaceToDepth(*in, b));
}

// ---- Trilu, ReverseSequence, Compress --------------------------------------------------------

Status InferTrilu(ir::Node& node) {
  KILN_RETURN_IF_ERROR(InferSameAsInput0(node));
  if (InputRank(node, 0) >= 0 && InputRank(node, 0) < 2)
    return Status::Error(node.Where(), "input must have rank >= 2");
  return Status::Ok();
}

Status RunTrilu(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "input"));
  int64_t k = 0;
  if (const Tensor* kt = ctx.input(1)) {
    if (kt->numel() != 1 || kt->dtype() != DType::kInt64)
      return ctx.Error("k must be an int64 scalar, got ", DescribeTensor(*kt));
    k = kt->AsInt64(0);
  }
  ir::AttrReader attrs(ctx.node);
  const bool upper = attrs.Int("upper", 1) != 0;
  KILN_RETURN_IF_ERROR(attrs.status());
  return SetOutput(ctx, ref::Trilu(*in, k, upper));
}

Status RunReverseSequence(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "input"));
  KILN_ASSIGN_OR_RETURN(const Tensor* lens_t, Input(ctx, 1, "sequence_lens"));
  if (lens_t->rank() != 1)
    return ctx.Error("sequence_lens must be 1-D, got ", DescribeTensor(*lens_t));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> lens, IntsOf(ctx, 1, "sequence_lens"));
  ir::AttrReader attrs(ctx.node);
  const int64_t batch_axis = attrs.Int("batch_axis", 1), time_axis = attrs.Int("time_axis", 0);
  KILN_RETURN_IF_ERROR(attrs.status());
  return SetOutput(ctx, ref::ReverseSequence(*in, lens, batch_axis, time_axis));
}

Status InferCompress(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "input"));
  KILN_RETURN_IF_ERROR(RequireInput(node, 1, "condition"));
  ir::AttrReader attrs(node);
  const int64_t axis = attrs.Int("axis", 0);
  KILN_RETURN_IF_ERROR(attrs.status());
  const Dims* in = InputShape(node, 0);
  std::optional<Dims> out;
  if (!attrs.Has("axis")) {
    out = UnknownDims(1);
  } else if (in) {
    KILN_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(node, axis, in->size()));
    out = *in;
    (*out)[a] = Dim::Unknown();
  }
  SetOutputType(node, 0, TypeOf(InputDType(node, 0), out));
  return Status::Ok();
}

Status RunCompress(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* in, Input(ctx, 0, "input"));
  KILN_ASSIGN_OR_RETURN(const Tensor* cond, Input(ctx, 1, "condition"));
  if (cond->dtype() != DType::kBool || cond->rank() != 1)
    return ctx.Error("condition must be a 1-D bool tensor, got ", DescribeTensor(*cond));
  ir::AttrReader attrs(ctx.node);
  int64_t axis = attrs.Int("axis", 0);
  KILN_RETURN_IF_ERROR(attrs.status());
  if (attrs.Has("axis")) {
    KILN_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node, axis, in->rank()));
  } else {
    axis = -1;
  }
  std::vector<bool> c(cond->numel());
  for (int64_t i = 0; i < cond->numel(); ++i) c[i] = cond->data<bool>()[i];
  return SetOutput(ctx, ref::Compress(*in, c, axis));
}

constexpr OpDef kMovementOps[] = {
    {"", "Transpose", InferTranspose, RunTranspose, 1},
    {"", "Concat", InferConcat, RunConcat, 4},
    {"", "Split", InferSplit, RunSplit, 2},
    {"", "Slice", InferSlice, RunSlice, 1},
    {"", "Pad", InferPad, RunPad, 2},
    {"", "Tile", InferTile, RunTile, 6},
    {"", "Expand", InferExpand, RunExpand, 8},
    {"", "DepthToSpace", InferDepthSpace, RunDepthToSpace, 1},
    {"", "SpaceToDepth", InferDepthSpace, RunSpaceToDepth, 1},
    {"", "Trilu", InferTrilu, RunTrilu, 14},
    {"", "ReverseSequence", InferSameAsInput0, RunReverseSequence, 10},
    {"", "Compress", InferCompress, RunCompress, 9},
};

}  // namespace

std::span<const OpDef> MovementOps() { return kMovementOps; }

}  // namespace kiln::ops
