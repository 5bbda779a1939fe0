// DFT, STFT, Hann/Hamming/Blackman windows, MelWeightMatrix: attributes, checks, inference and
// the binding to kernels/ref/signal.h.
#include "kernels/ref/signal.h"
#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

// An optional scalar integer input; `def` when absent.
Expected<int64_t> ScalarInt(const RunContext& ctx, size_t i, const char* what, int64_t def) {
  const Tensor* t = ctx.input(i);
  if (t == nullptr) return def;
  if (t->numel() != 1 || !IsInteger(t->dtype()))
    return ctx.Error("'", what, "' must be one integer, got ", DescribeTensor(*t));
  return t->AsInt64(0);
}

Expected<double> ScalarFloat(const RunContext& ctx, size_t i, const char* what) {
  const Tensor* t = ctx.input(i);
  if (t == nullptr || t->numel() != 1 || t->dtype() == DType::kString || t->dtype() == DType::kBool)
    return ctx.Error("'", what, "' must be one number");
  return t->AsDouble(0);
}

Status InferRankOfInput0(ir::Node& node) {
  if (!node.has_input(0)) return Status::Error(node.Where(), "input 0 is missing");
  ValueType t;
  t.dtype = node.inputs[0]->type.dtype;
  if (node.inputs[0]->type.shape)
    t.shape = std::vector<Dim>(node.inputs[0]->type.shape->size(), Dim::Unknown());
  SetOutputType(node, 0, t);
  return Status::Ok();
}

Status RunDft(RunContext& ctx) {
  ir::AttrReader r(ctx.node);
  const bool opset20 = ctx.node.opset >= 20;
  int64_t axis = opset20 ? -2 : r.Int("axis", 1);
  const bool inverse = r.Int("inverse", 0) != 0;
  const bool onesided = r.Int("onesided", 0) != 0;
  KILN_RETURN_IF_ERROR(r.status());
  const Tensor* x = ctx.input(0);
  if (x == nullptr) return ctx.Error("input 'input' is missing");
  if (opset20) {
    KILN_ASSIGN_OR_RETURN(axis, ScalarInt(ctx, 2, "axis", -2));
  }
  KILN_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node, axis, x->rank()));
  if (axis == x->rank() - 1)
    return ctx.Error("axis ", axis, " is the real/imaginary dim of ", DescribeTensor(*x));
  const int64_t n = x->dim(axis);
  KILN_ASSIGN_OR_RETURN(int64_t length,
                        ScalarInt(ctx, 1, "dft_length", inverse && onesided ? 2 * (n - 1) : n));
  return ref::Dft(*x, axis, length, inverse, onesided, &ctx.outputs[0])
      .WithContext(ctx.node.Where());
}

Status InferStft(ir::Node& node) {
  if (!node.has_input(0)) return Status::Error(node.Where(), "input 'signal' is missing");
  ValueType t;
  t.dtype = node.inputs[0]->type.dtype;
  t.shape = std::vector<Dim>(4, Dim::Unknown());
  (*t.shape)[3] = Dim::Static(2);
  SetOutputType(node, 0, t);
  return Status::Ok();
}

Status RunStft(RunContext& ctx) {
  ir::AttrReader r(ctx.node);
  const bool onesided = r.Int("onesided", 1) != 0;
  KILN_RETURN_IF_ERROR(r.status());
  const Tensor* signal = ctx.input(0);
  if (signal == nullptr || ctx.input(1) == nullptr)
    return ctx.Error("inputs 'signal' and 'frame_step' are required");
  KILN_ASSIGN_OR_RETURN(int64_t step, ScalarInt(ctx, 1, "frame_step", 0));
  KILN_ASSIGN_OR_RETURN(int64_t frame_length, ScalarInt(ctx, 3, "frame_length", -1));
  const Tensor* window = ctx.input(2);
  if (window == nullptr && frame_length < 0)
    return ctx.Error("one of 'window' and 'frame_length' is required");
  return ref::Stft(*signal, step, window, frame_length, onesided, &ctx.outputs[0])
      .WithContext(ctx.node.Where());
}

Expected<DType> OutputType(const ir::Node& node) {
  ir::AttrReader r(node);
  const int64_t t = r.Int("output_datatype", 1);
  KILN_RETURN_IF_ERROR(r.status());
  if (t < 0 || t > 16 || !IsKnownDType(static_cast<int32_t>(t)) ||
      static_cast<DType>(t) == DType::kString || static_cast<DType>(t) == DType::kBool)
    return Status::Error(node.Where(), "output_datatype ", t, " is not a numeric type");
  return static_cast<DType>(t);
}

Status InferWindow(ir::Node& node) {
  KILN_ASSIGN_OR_RETURN(DType t, OutputType(node));
  ValueType out;
  out.dtype = t;
  out.shape = std::vector<Dim>{Dim::Unknown()};
  if (const Tensor* size = ConstantInput(node, 0); size != nullptr && size->numel() == 1 &&
                                                   IsInteger(size->dtype()) && size->AsInt64(0) >= 0)
    (*out.shape)[0] = Dim::Static(size->AsInt64(0));
  if (node.op_type == "MelWeightMatrix") out.shape.reset();
  SetOutputType(node, 0, out);
  return Status::Ok();
}

template <ref::WindowKind kKind>
Status RunWindow(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(DType t, OutputType(ctx.node));
  ir::AttrReader r(ctx.node);
  const bool periodic = r.Int("periodic", 1) != 0;
  KILN_RETURN_IF_ERROR(r.status());
  if (ctx.input(0) == nullptr) return ctx.Error("input 'size' is missing");
  KILN_ASSIGN_OR_RETURN(int64_t size, ScalarInt(ctx, 0, "size", 0));
  return ref::Window(kKind, size, periodic, t, &ctx.outputs[0]).WithContext(ctx.node.Where());
}

Status RunMel(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(DType t, OutputType(ctx.node));
  for (size_t i = 0; i < 5; ++i)
    if (ctx.input(i) == nullptr) return ctx.Error("all five inputs are required");
  KILN_ASSIGN_OR_RETURN(int64_t bins, ScalarInt(ctx, 0, "num_mel_bins", 0));
  KILN_ASSIGN_OR_RETURN(int64_t dft_length, ScalarInt(ctx, 1, "dft_length", 0));
  KILN_ASSIGN_OR_RETURN(int64_t rate, ScalarInt(ctx, 2, "sample_rate", 0));
  KILN_ASSIGN_OR_RETURN(double lower, ScalarFloat(ctx, 3, "lower_edge_hertz"));
  KILN_ASSIGN_OR_RETURN(double upper, ScalarFloat(ctx, 4, "upper_edge_hertz"));
  return ref::MelWeightMatrix(bins, dft_length, rate, lower, upper, t, &ctx.outputs[0])
      .WithContext(ctx.node.Where());
}

constexpr OpDef kSignalOps[] = {
    {"", "DFT", InferRankOfInput0, RunDft, 17, true},
    {"", "STFT", InferStft, RunStft, 17, true},
    {"", "HannWindow", InferWindow, RunWindow<ref::WindowKind::kHann>, 17, false},
    {"", "HammingWindow", InferWindow, RunWindow<ref::WindowKind::kHamming>, 17, false},
    {"", "BlackmanWindow", InferWindow, RunWindow<ref::WindowKind::kBlackman>, 17, false},
    {"", "MelWeightMatrix", InferWindow, RunMel, 17, false},
};

}  // namespace

std::span<const OpDef> SignalOps() { return kSignalOps; }

}  // namespace kiln::ops
