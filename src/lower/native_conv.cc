// Native lowering of 2-D float convolutions: Conv and kiln.FusedConv (Conv + an activation).
//
// The weights are prepared here, once, by conv::PrepareConv at the module's ISA with the cost
// model's algorithm (or a blocked one where layout planning asks, LowerContext::PreferBlocked;
// Winograd always blocked on SIMD ISAs), and only the prepared form is stored: one blob with the
// packed A of every group (kGemm1x1, kIm2colGemm) or the 36 U matrices of every transform point
// (kWinograd: packed A, or packed B of U^T when blocked), or the reordered/copied
// weights (kDirectNchwc, kDepthwise, kGroupedDirect, kStemNchwc), and one with the bias. The raw
// W is never given a value id, so it is not stored twice. The runtime kernel
// (runtime/kernels/conv.cc) rebuilds the PreparedConv as a view of those blobs from the step's
// params, which this file and that one must keep in step (kConvKernel's params below).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "kernels/conv/conv.h"
#include "kernels/ref/conv.h"
#include "lower/native.h"

namespace kiln::lower {
namespace {

// A constant float32 tensor of exactly `dims`, or null.
const Tensor* ConstantOf(const ir::Value* v, const std::vector<int64_t>& dims) {
  if (!v || !v->constant || v->constant->dtype() != DType::kFloat32) return nullptr;
  return v->constant->dims() == dims ? &*v->constant : nullptr;
}

std::span<const std::byte> Bytes(const float* p, size_t floats) {
  return {reinterpret_cast<const std::byte*>(p), floats * sizeof(float)};
}

Expected<bool> LowerConv(const ir::Node& node, LowerContext& ctx) {
  const bool fused = node.domain == "kiln" && node.op_type == "FusedConv";
  if (!fused && !(node.domain.empty() && node.op_type == "Conv")) return false;
  if (!node.has_input(0) || !node.has_input(1) || node.inputs.size() > 3 ||
      node.outputs.size() != 1 || !node.has_output(0)) {
    return false;
  }
  // The batch may be symbolic: the weights are prepared for one image and the kernel runs any N
  // an image at a time. Every other dim must be static (the prepared algorithm depends on them).
  auto x = BatchFreeFloatDims(node.inputs[0]);
  auto y = BatchFreeFloatDims(node.outputs[0]);
  const auto wd = StaticFloatDims(node.inputs[1]);
  if (!x || !y || !wd || x->size() != 4 || wd->size() != 4) return false;
  if (((*x)[0] < 0) != ((*y)[0] < 0)) return false;
  if ((*x)[0] < 0) (*x)[0] = (*y)[0] = 1;
  const Tensor* w = ConstantOf(node.inputs[1], *wd);
  const Tensor* b = node.has_input(2) ? ConstantOf(node.inputs[2], {(*wd)[0]}) : nullptr;
  if (!w || (node.has_input(2) && !b)) return false;  // a computed W or B stays on the reference

  gemm::Epilogue ep;
  if (fused) {
    auto act = FusedActivation(node);
    if (!act) return false;
    ep = *act;
  }
  ir::AttrReader r(node);
  ref::WindowSpec spec;
  spec.kernel = r.Ints("kernel_shape", {(*wd)[2], (*wd)[3]});
  spec.strides = r.Ints("strides");
  spec.dilations = r.Ints("dilations");
  spec.pads = r.Ints("pads");
  spec.auto_pad = r.String("auto_pad", "NOTSET");
  const int64_t group = r.Int("group", 1);
  KILN_RETURN_IF_ERROR(r.status().WithContext(node.Where()));
  if (spec.kernel != std::vector<int64_t>{(*wd)[2], (*wd)[3]}) {
    return Status::Error(node.Where(), "kernel_shape ", DimsToString(spec.kernel),
                         " does not match W ", DimsToString(*wd));
  }
  auto out = ref::ResolveWindow({(*x)[2], (*x)[3]}, &spec);
  if (!out.ok()) return out.status().WithContext(node.Where());
  if (group < 1 || group > std::max<int64_t>((*x)[1], 1) || (*x)[1] % group != 0 ||
      (*wd)[1] * group != (*x)[1] ||
      *y != std::vector<int64_t>{(*x)[0], (*wd)[0], (*out)[0], (*out)[1]}) {
    return Status::Error(node.Where(), "X ", DimsToString(*x), ", W ", DimsToString(*wd),
                         " and group ", group, " do not give the declared output ",
                         DimsToString(*y));
  }

  conv::ConvParams p;
  p.n = static_cast<size_t>((*x)[0]);
  p.c = static_cast<size_t>((*x)[1]);
  p.h = static_cast<size_t>((*x)[2]);
  p.w = static_cast<size_t>((*x)[3]);
  p.m = static_cast<size_t>((*wd)[0]);
  p.kh = static_cast<size_t>((*wd)[2]);
  p.kw = static_cast<size_t>((*wd)[3]);
  p.stride_h = static_cast<size_t>(spec.strides[0]);
  p.stride_w = static_cast<size_t>(spec.strides[1]);
  p.dilation_h = static_cast<size_t>(spec.dilations[0]);
  p.dilation_w = static_cast<size_t>(spec.dilations[1]);
  p.pad_top = static_cast<size_t>(spec.pads[0]);
  p.pad_left = static_cast<size_t>(spec.pads[1]);
  p.pad_bottom = static_cast<size_t>(spec.pads[2]);
  p.pad_right = static_cast<size_t>(spec.pads[3]);
  p.groups = static_cast<size_t>(group);
  // Empty tensors and sizes past the drivers' limits are legal ONNX: the reference runs them.
  if (!conv::ValidateParams(p).ok()) return false;

  conv::PrepareOptions options;
  options.isa = ctx.isa();
  if (ctx.isa() >= IsaLevel::kAvx2 &&
      conv::ChooseAlgorithm(p, ctx.isa()) == conv::Algorithm::kWinograd) {
    // Winograd runs NCHWc on a SIMD ISA, in a blocked chain or, between NCHW neighbours,
    // reordering its input and output in its own step: the blocked form runs 1.2-2.1x the NCHW
    // one (conv::Run, 1 thread: DenseNet's 128->32 at 56x56 367 -> 646 GFLOP/s, SqueezeNet's
    // 64->64 at 55x55 450 -> 648), which pays for the two transposes. kiln profile, 1 thread:
    // DenseNet-121 20.9 -> 18.4 ms, SqueezeNet 1.1 2.86 -> 2.50, GoogLeNet's 64->192 at 56x56
    // 1.20 -> 1.00.
    options.algorithm = conv::Algorithm::kWinograd;
    options.layout = conv::Layout::kNchwc;
  } else if (ctx.PreferBlocked(node)) {
    // Layout planning keeps this conv's neighbors NCHWc (lower/layout.h): run it there too.
    if (conv::SupportsBlocked(conv::Algorithm::kDepthwise, p, ctx.isa())) {
      options.algorithm = conv::Algorithm::kDepthwise;
      options.layout = conv::Layout::kNchwc;
    } else if (conv::Supports(conv::Algorithm::kStemNchwc, p)) {
      options.algorithm = conv::Algorithm::kStemNchwc;  // an image stem: NCHW in, NCHWc out
    } else if (p.groups == 1) {
      options.algorithm = conv::Algorithm::kDirectNchwc;
    }
  }
  if (ctx.measure_algorithms() && options.algorithm == conv::Algorithm::kAuto) {
    // Timed once per distinct layer (MeasureAlgorithm caches by shape, ISA and threads).
    auto measured = conv::MeasureAlgorithm(p, nullptr, ctx.isa());
    if (measured.ok()) options.algorithm = *measured;
  }
  KILN_ASSIGN_OR_RETURN(conv::PreparedConv prepared,
                        conv::PrepareConv(p, w->data<float>(), options));

  runtime::Step step;
  step.kernel = "conv2d";
  step.name = node.name;
  step.op = fused ? StrCat("Conv+", r.String("activation", "")) : "Conv";
  KILN_ASSIGN_OR_RETURN(int32_t x_id, ctx.ValueId(node.inputs[0]));
  KILN_ASSIGN_OR_RETURN(int32_t y_id, ctx.ValueId(node.outputs[0]));
  step.inputs = {x_id};
  step.outputs = {y_id};
  runtime::StepParams& sp = step.params;
  sp.ints = {{"n", p.n},
             {"c", p.c},
             {"h", p.h},
             {"w", p.w},
             {"m", p.m},
             {"kh", p.kh},
             {"kw", p.kw},
             {"stride_h", p.stride_h},
             {"stride_w", p.stride_w},
             {"pad_top", p.pad_top},
             {"pad_left", p.pad_left},
             {"pad_bottom", p.pad_bottom},
             {"pad_right", p.pad_right},
             {"dilation_h", p.dilation_h},
             {"dilation_w", p.dilation_w},
             {"groups", p.groups},
             {"block", prepared.block()},
             {"has_bias", b ? 1 : 0}};
  sp.strings = {{"algorithm", conv::AlgorithmName(prepared.algorithm())},
                {"isa", IsaName(prepared.isa())},
                {"activation", gemm::ActivationName(ep.activation)}};
  sp.floats = {{"clip_min", ep.clip_min}, {"clip_max", ep.clip_max}};

  // Weights: every group's (or Winograd point's) packed A back to back in one blob (all the same
  // size),
  // or the one weight array of the direct and depthwise algorithms.
  if (!prepared.packed().empty()) {
    const gemm::PackedMatrix& first = prepared.packed().front();
    sp.ints["panel"] = static_cast<int64_t>(first.panel_width());
    sp.strings["packed_isa"] = IsaName(first.isa());
    std::vector<std::byte> all;
    all.reserve(first.size_bytes() * prepared.packed().size());
    for (const gemm::PackedMatrix& pm : prepared.packed()) {
      const auto* bytes = reinterpret_cast<const std::byte*>(pm.data());
      all.insert(all.end(), bytes, bytes + pm.size_bytes());
    }
    step.blobs.push_back(ctx.AddBlob(all));
  } else {
    step.blobs.push_back(ctx.AddBlob(Bytes(prepared.weights(), prepared.weight_floats())));
  }
  if (b) step.blobs.push_back(ctx.AddBlob(Bytes(b->data<float>(), p.m)));
  ctx.AddStep(std::move(step));
  return true;
}

constexpr NativeLowering kConvLowerings[] = {LowerConv};

}  // namespace

std::span<const NativeLowering> ConvLowerings() { return kConvLowerings; }

}  // namespace kiln::lower
