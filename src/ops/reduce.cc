// Reduce* (axes as an optional input; the frontend turns the pre-13/18 attribute into one),
// ArgMax and ArgMin.
#include "kernels/ref/reduce.h"

#include <algorithm>
#include <optional>

#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

using ref::ReduceKind;

ReduceKind KindOf(const std::string& op_type) {
  if (op_type == "ReduceSum") return ReduceKind::kSum;
  if (op_type == "ReduceMean") return ReduceKind::kMean;
  if (op_type == "ReduceMax") return ReduceKind::kMax;
  if (op_type == "ReduceMin") return ReduceKind::kMin;
  if (op_type == "ReduceProd") return ReduceKind::kProd;
  if (op_type == "ReduceL1") return ReduceKind::kL1;
  if (op_type == "ReduceL2") return ReduceKind::kL2;
  if (op_type == "ReduceLogSum") return ReduceKind::kLogSum;
  if (op_type == "ReduceLogSumExp") return ReduceKind::kLogSumExp;
  return ReduceKind::kSumSquare;
}

struct ReduceAttrs {
  bool keepdims = true;
  bool noop_with_empty_axes = false;
  std::vector<int64_t> attr_axes;  // only when a graph still carries the old attribute
};

Expected<ReduceAttrs> ReadReduceAttrs(const ir::Node& node) {
  ir::AttrReader reader(node);
  ReduceAttrs a;
  a.keepdims = reader.Int("keepdims", 1) != 0;
  a.noop_with_empty_axes = reader.Int("noop_with_empty_axes", 0) != 0;
  a.attr_axes = reader.Ints("axes");
  KILN_RETURN_IF_ERROR(reader.status());
  if (node.has_input(1) && reader.Has("axes"))
    return Status::Error(node.Where(), "axes are given both as an attribute and as an input");
  return a;
}

// Normalizes axes against `rank`, refusing out-of-range and repeated axes; sorted on return.
Expected<std::vector<int64_t>> NormalizeAxes(const ir::Node& node, std::vector<int64_t> axes,
                                             int64_t rank) {
  for (int64_t& a : axes) {
    KILN_ASSIGN_OR_RETURN(a, NormalizeAxis(node, a, rank));
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return Status::Error(node.Where(), "axes repeat an axis");
  return axes;
}

// The axes to reduce, or nullopt when they are only known at run time. An empty list with
// noop_with_empty_axes means "no reduction"; without it, every axis.
Expected<std::optional<std::vector<int64_t>>> StaticAxes(const ir::Node& node,
                                                         const ReduceAttrs& a) {
  if (!node.has_input(1)) return std::optional<std::vector<int64_t>>(a.attr_axes);
  const Tensor* t = ConstantInput(node, 1);
  if (t == nullptr) return std::optional<std::vector<int64_t>>();
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, t->ToInt64Vector(node.Where() + "input 'axes'"));
  return std::optional<std::vector<int64_t>>(std::move(axes));
}

Status InferReduce(ir::Node& node) {
  if (!node.has_input(0)) return Status::Error(node.Where(), "input 'data' is missing");
  KILN_ASSIGN_OR_RETURN(ReduceAttrs a, ReadReduceAttrs(node));
  const ValueType& in = node.inputs[0]->type;
  ValueType out;
  out.dtype = in.dtype;
  KILN_ASSIGN_OR_RETURN(auto axes, StaticAxes(node, a));
  if (in.shape && axes) {
    const auto& shape = *in.shape;
    const int64_t rank = static_cast<int64_t>(shape.size());
    if (axes->empty() && a.noop_with_empty_axes) {
      out.shape = shape;
    } else {
      std::vector<int64_t> all(rank);
      for (int64_t i = 0; i < rank; ++i) all[i] = i;
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> norm,
                            NormalizeAxes(node, axes->empty() ? all : *axes, rank));
      std::vector<Dim> dims;
      for (int64_t i = 0; i < rank; ++i) {
        const bool reduced = std::binary_search(norm.begin(), norm.end(), i);
        if (!reduced)
          dims.push_back(shape[i]);
        else if (a.keepdims)
          dims.push_back(Dim::Static(1));
      }
      out.shape = std::move(dims);
    }
  } else if (in.shape && a.keepdims) {
    out.shape = std::vector<Dim>(in.shape->size(), Dim::Unknown());  // rank is kept
  }
  SetOutputType(node, 0, std::move(out));
  return Status::Ok();
}

Status RunReduce(RunContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor* data = ctx.input(0);
  if (data == nullptr) return ctx.Error("input 'data' is missing");
  KILN_ASSIGN_OR_RETURN(ReduceAttrs a, ReadReduceAttrs(node));
  std::vector<int64_t> axes = a.attr_axes;
  if (const Tensor* t = ctx.input(1)) {
    if (t->rank() > 1) return ctx.Error("input 'axes' must be 1-D, got ", DescribeTensor(*t));
    KILN_ASSIGN_OR_RETURN(axes, t->ToInt64Vector(node.Where() + "input 'axes'"));
  }
  if (axes.empty()) {
    if (a.noop_with_empty_axes) {
      ctx.outputs[0] = *data;
      return Status::Ok();
    }
    for (int64_t i = 0; i < data->rank(); ++i) axes.push_back(i);
  }
  KILN_ASSIGN_OR_RETURN(axes, NormalizeAxes(node, axes, data->rank()));
  auto out = ref::Reduce(*data, KindOf(node.op_type), axes, a.keepdims);
  if (!out.ok()) return out.status().WithContext(node.Where());
  ctx.outputs[0] = std::move(out).value();
  return Status::Ok();
}

struct ArgAttrs {
  int64_t axis = 0;
  bool keepdims = true;
  bool select_last_index = false;
};

Expected<ArgAttrs> ReadArgAttrs(const ir::Node& node) {
  ir::AttrReader reader(node);
  ArgAttrs a;
  a.axis = reader.Int("axis", 0);
  a.keepdims = reader.Int("keepdims", 1) != 0;
  a.select_last_index = reader.Int("select_last_index", 0) != 0;
  KILN_RETURN_IF_ERROR(reader.status());
  return a;
}

Status InferArg(ir::Node& node) {
  if (!node.has_input(0)) return Status::Error(node.Where(), "input 'data' is missing");
  KILN_ASSIGN_OR_RETURN(ArgAttrs a, ReadArgAttrs(node));
  const ValueType& in = node.inputs[0]->type;
  ValueType out;
  out.dtype = DType::kInt64;
  if (in.shape) {
    const int64_t rank = static_cast<int64_t>(in.shape->size());
    KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, a.axis, rank));
    std::vector<Dim> dims;
    for (int64_t i = 0; i < rank; ++i) {
      if (i != axis)
        dims.push_back((*in.shape)[i]);
      else if (a.keepdims)
        dims.push_back(Dim::Static(1));
    }
    out.shape = std::move(dims);
  }
  SetOutputType(node, 0, std::move(out));
  return Status::Ok();
}

Status RunArg(RunContext& ctx) {
  const Tensor* data = ctx.input(0);
  if (data == nullptr) return ctx.Error("input 'data' is missing");
  KILN_ASSIGN_OR_RETURN(ArgAttrs a, ReadArgAttrs(ctx.node));
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.node, a.axis, data->rank()));
  auto out =
      ref::ArgReduce(*data, ctx.node.op_type == "ArgMax", axis, a.keepdims, a.select_last_index);
  if (!out.ok()) return out.status().WithContext(ctx.node.Where());
  ctx.outputs[0] = std::move(out).value();
  return Status::Ok();
}

}  // namespace

std::span<const OpDef> ReduceOps() {
  // promote_half: float16/bfloat16 reduce in float32 (and in double inside the kernel).
  static const OpDef kOps[] = {
      {"", "ReduceSum", InferReduce, RunReduce, 1, true},
      {"", "ReduceMean", InferReduce, RunReduce, 1, true},
      {"", "ReduceMax", InferReduce, RunReduce, 1, true},
      {"", "ReduceMin", InferReduce, RunReduce, 1, true},
      {"", "ReduceProd", InferReduce, RunReduce, 1, true},
      {"", "ReduceL1", InferReduce, RunReduce, 1, true},
      {"", "ReduceL2", InferReduce, RunReduce, 1, true},
      {"", "ReduceLogSum", InferReduce, RunReduce, 1, true},
      {"", "ReduceLogSumExp", InferReduce, RunReduce, 1, true},
      {"", "ReduceSumSquare", InferReduce, RunReduce, 1, true},
      {"", "ArgMax", InferArg, RunArg, 1, true},
      {"", "ArgMin", InferArg, RunArg, 1, true},
  };
  return kOps;
}

}  // namespace kiln::ops
