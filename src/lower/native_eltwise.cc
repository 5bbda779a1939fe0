// Native lowering of elementwise nodes: unary activations (ONNX and the kiln domain, fused
// chains included) to "eltwise_unary", Add/Sub/Mul/Div to "eltwise_binary", Softmax and
// LogSoftmax (opset 13 and later) to "softmax", and inference BatchNormalization (alone, or
// kiln.FusedBatchNorm with its activation) with constant statistics to "batchnorm". The kernels
// (runtime/kernels/eltwise.cc, batchnorm.cc) compute output dims at run time, so symbolic dims
// are fine: float32 with a known rank is all these need.
#include <cmath>
#include <cstring>
#include <limits>

#include "lower/native_util.h"

namespace kiln::lower {
namespace {

using native_util::EmitStep;
using native_util::FloatRankKnown;
using native_util::OnlyOutputs;

// A unary chain: runtime op names and their parameters, in order.
struct Chain {
  std::string ops;
  std::vector<double> params;
  void Add(const char* op, std::initializer_list<double> p = {}) {
    ops += ops.empty() ? op : StrCat(",", op);
    params.insert(params.end(), p.begin(), p.end());
  }
};

// The chain of FusedElementwise's `ops`/`params` (src/ops/kiln_ops.cc defines the encoding);
// nullopt for a name or count this lowering does not know (the reference then reports it).
std::optional<Chain> FusedChain(const ir::Node& node) {
  ir::AttrReader r(node);
  const std::vector<std::string> ops = r.Strings("ops");
  const std::vector<float> params = r.Floats("params");
  if (!r.status().ok() || ops.empty()) return std::nullopt;
  struct Def {
    const char* onnx;
    const char* runtime;
    size_t params;
  };
  static constexpr Def kDefs[] = {
      {"Relu", "relu", 0},
      {"Sigmoid", "sigmoid", 0},
      {"Tanh", "tanh", 0},
      {"Exp", "exp", 0},
      {"Neg", "neg", 0},
      {"Abs", "abs", 0},
      {"Sqrt", "sqrt", 0},
      {"Erf", "erf", 0},
      {"Silu", "silu", 0},
      {"HardSwish", "hardswish", 0},
      {"Gelu", "gelu", 0},
      {"LeakyRelu", "leakyrelu", 1},
      {"MulScalar", "mulscalar", 1},
      {"AddScalar", "addscalar", 1},
      {"Clip", "clip", 2},
      {"HardSigmoid", "hardsigmoid", 2},
  };
  Chain c;
  size_t next = 0;
  for (const std::string& op : ops) {
    const Def* def = nullptr;
    for (const Def& d : kDefs)
      if (op == d.onnx) def = &d;
    if (def == nullptr || next + def->params > params.size()) return std::nullopt;
    c.ops += c.ops.empty() ? def->runtime : StrCat(",", def->runtime);
    for (size_t i = 0; i < def->params; ++i) c.params.push_back(params[next++]);
  }
  if (next != params.size()) return std::nullopt;
  return c;
}

// The chain one unary node runs, or nullopt when it is not a unary this family handles.
std::optional<Chain> UnaryChain(const ir::Node& node) {
  ir::AttrReader r(node);
  Chain c;
  const std::string& op = node.op_type;
  if (node.domain == "kiln") {
    if (op == "Silu") {
      c.Add("silu");
    } else if (op == "HardSwish") {
      c.Add("hardswish");
    } else if (op == "Gelu") {
      const std::string a = r.String("approximate", "none");
      if (a != "none" && a != "tanh") return std::nullopt;
      c.Add(a == "none" ? "gelu" : "gelu_tanh");
    } else if (op == "FusedElementwise") {
      return FusedChain(node);
    } else {
      return std::nullopt;
    }
    return r.status().ok() ? std::optional<Chain>(c) : std::nullopt;
  }
  if (!node.domain.empty() && node.domain != "ai.onnx") return std::nullopt;
  static constexpr std::pair<const char*, const char*> kPlain[] = {
      {"Relu", "relu"}, {"Sigmoid", "sigmoid"},
      {"Tanh", "tanh"}, {"Exp", "exp"},
      {"Log", "log"},   {"Neg", "neg"},
      {"Abs", "abs"},   {"Sqrt", "sqrt"},
      {"Erf", "erf"},   {"HardSwish", "hardswish"},
  };
  for (const auto& [onnx, name] : kPlain)
    if (op == onnx) {
      c.Add(name);
      return c;
    }
  if (op == "LeakyRelu") {
    c.Add("leakyrelu", {r.Float("alpha", 0.01f)});
  } else if (op == "HardSigmoid") {
    c.Add("hardsigmoid", {r.Float("alpha", 0.2f), r.Float("beta", 0.5f)});
  } else if (op == "Gelu") {
    const std::string a = r.String("approximate", "none");
    if (a != "none" && a != "tanh") return std::nullopt;
    c.Add(a == "none" ? "gelu" : "gelu_tanh");
  } else if (op == "Clip") {
    // Bounds: constant inputs 1 and 2 (opset 11+), or the old float attributes.
    double lo = -std::numeric_limits<double>::infinity();
    double hi = std::numeric_limits<double>::infinity();
    for (size_t i = 1; i <= 2; ++i) {
      if (node.has_input(i)) {
        const auto v = native_util::ConstFloat(node.inputs[i]);
        if (!v) return std::nullopt;
        (i == 1 ? lo : hi) = *v;
      } else if (r.Has(i == 1 ? "min" : "max")) {
        (i == 1 ? lo : hi) = r.Float(i == 1 ? "min" : "max", 0);
      }
    }
    if (std::isnan(lo) || std::isnan(hi)) return std::nullopt;
    c.Add("clip", {lo, hi});
  } else {
    return std::nullopt;
  }
  return r.status().ok() ? std::optional<Chain>(c) : std::nullopt;
}

Expected<bool> LowerUnary(const ir::Node& node, LowerContext& ctx) {
  if (!node.has_input(0) || !OnlyOutputs(node, 1)) return false;
  if (!FloatRankKnown(node.inputs[0]) || !FloatRankKnown(node.outputs[0])) return false;
  const auto chain = UnaryChain(node);
  if (!chain) return false;
  runtime::StepParams p;
  p.strings["ops"] = chain->ops;
  for (size_t i = 0; i < chain->params.size(); ++i) p.floats[StrCat("p", i)] = chain->params[i];
  KILN_RETURN_IF_ERROR(EmitStep(node, ctx, "eltwise_unary", {node.inputs[0]}, 1, std::move(p)));
  return true;
}

Expected<bool> LowerBinary(const ir::Node& node, LowerContext& ctx) {
  static constexpr std::pair<const char*, const char*> kOps[] = {
      {"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"}};
  if (!node.domain.empty() && node.domain != "ai.onnx") return false;
  const char* op = nullptr;
  for (const auto& [onnx, name] : kOps)
    if (node.op_type == onnx) op = name;
  if (op == nullptr || node.inputs.size() != 2 || !node.has_input(0) || !node.has_input(1) ||
      !OnlyOutputs(node, 1))
    return false;
  if (!FloatRankKnown(node.inputs[0]) || !FloatRankKnown(node.inputs[1]) ||
      !FloatRankKnown(node.outputs[0]))
    return false;
  if (std::max(*native_util::RankOf(node.inputs[0]), *native_util::RankOf(node.inputs[1])) > 16)
    return false;
  runtime::StepParams p;
  p.strings["op"] = op;
  KILN_RETURN_IF_ERROR(
      EmitStep(node, ctx, "eltwise_binary", {node.inputs[0], node.inputs[1]}, 1, std::move(p)));
  return true;
}

Expected<bool> LowerSoftmax(const ir::Node& node, LowerContext& ctx) {
  if (!node.domain.empty() || (node.op_type != "Softmax" && node.op_type != "LogSoftmax"))
    return false;
  // Before opset 13 the op flattens to 2-D around `axis`: other semantics, left to the reference.
  if (node.opset < 13 || !node.has_input(0) || !OnlyOutputs(node, 1)) return false;
  if (!FloatRankKnown(node.inputs[0]) || !FloatRankKnown(node.outputs[0])) return false;
  ir::AttrReader r(node);
  const int64_t axis = r.Int("axis", -1);
  const auto rank = static_cast<int64_t>(*native_util::RankOf(node.inputs[0]));
  if (!r.status().ok() || axis < -rank || axis >= rank || rank > 16) return false;
  runtime::StepParams p;
  p.ints["axis"] = axis < 0 ? axis + rank : axis;
  p.ints["log"] = node.op_type == "LogSoftmax" ? 1 : 0;
  KILN_RETURN_IF_ERROR(EmitStep(node, ctx, "softmax", {node.inputs[0]}, 1, std::move(p)));
  return true;
}

// Inference BatchNormalization with constant scale, bias, mean and variance, folded into one
// scale and shift per channel (the passes usually fold it into a Conv; this is what survives),
// and kiln.FusedBatchNorm: the same with the activation after it in the same step.
Expected<bool> LowerBatchNorm(const ir::Node& node, LowerContext& ctx) {
  const bool fused = node.domain == "kiln" && node.op_type == "FusedBatchNorm";
  if (!fused && (!node.domain.empty() || node.op_type != "BatchNormalization")) return false;
  if (node.inputs.size() != 5 || !OnlyOutputs(node, 1)) return false;
  std::optional<gemm::Epilogue> ep;
  if (fused) {
    ep = FusedActivation(node);
    if (!ep) return false;
  }
  if (!FloatRankKnown(node.inputs[0]) || !FloatRankKnown(node.outputs[0])) return false;
  if (*native_util::RankOf(node.inputs[0]) < 2) return false;
  ir::AttrReader r(node);
  const float epsilon = r.Float("epsilon", 1e-5f);
  const int64_t training = r.Int("training_mode", 0);
  if (!r.status().ok() || training != 0) return false;
  const Tensor* params[4];
  int64_t channels = -1;
  for (size_t i = 0; i < 4; ++i) {
    const ir::Value* v = node.inputs[i + 1];
    if (v == nullptr || !v->constant || v->constant->dtype() != DType::kFloat32 ||
        v->constant->rank() != 1)
      return false;
    if (channels >= 0 && v->constant->numel() != channels) return false;
    channels = v->constant->numel();
    params[i] = &*v->constant;
  }
  const ir::Dim& c_dim = (*node.inputs[0]->type.shape)[1];
  if (c_dim.is_static() && c_dim.value != channels) return false;
  std::vector<float> scale_shift(static_cast<size_t>(2 * channels));
  for (int64_t c = 0; c < channels; ++c) {
    const double s = static_cast<double>(params[0]->data<float>()[c]) /
                     std::sqrt(static_cast<double>(params[3]->data<float>()[c]) + epsilon);
    scale_shift[c] = static_cast<float>(s);
    scale_shift[channels + c] =
        static_cast<float>(static_cast<double>(params[1]->data<float>()[c]) -
                           static_cast<double>(params[2]->data<float>()[c]) * s);
  }
  const int32_t blob = ctx.AddBlob(std::as_bytes(std::span<const float>(scale_shift)));
  runtime::StepParams p;
  p.ints["channels"] = channels;
  if (ep) {
    p.strings["activation"] = gemm::ActivationName(ep->activation);
    p.floats["clip_min"] = ep->clip_min;
    p.floats["clip_max"] = ep->clip_max;
  }
  // Named like a fused conv's ("Conv+Relu"), so profiles group it by what it computes.
  runtime::Step step;
  step.kernel = "batchnorm";
  step.name = node.name;
  step.op = fused ? StrCat("BatchNormalization+", r.String("activation", "")) : node.op_type;
  KILN_ASSIGN_OR_RETURN(int32_t in, ctx.ValueId(node.inputs[0]));
  KILN_ASSIGN_OR_RETURN(int32_t out, ctx.ValueId(node.outputs[0]));
  step.inputs = {in};
  step.outputs = {out};
  step.blobs = {blob};
  step.params = std::move(p);
  ctx.AddStep(std::move(step));
  return true;
}

constexpr NativeLowering kLowerings[] = {LowerUnary, LowerBinary, LowerSoftmax, LowerBatchNorm};

}  // namespace

std::span<const NativeLowering> EltwiseLowerings() { return kLowerings; }

}  // namespace kiln::lower
