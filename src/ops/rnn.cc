// RNN, GRU, LSTM: attributes (activations with their alpha/beta, direction, layout, clip),
// checks, shape inference and the binding to kernels/ref/rnn.h.
#include <algorithm>
#include <cctype>

#include "kernels/ref/rnn.h"
#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

using ref::RnnActivation;
using ref::RnnCell;

RnnCell CellOf(const ir::Node& node) {
  return node.op_type == "GRU" ? RnnCell::kGru
                               : node.op_type == "LSTM" ? RnnCell::kLstm : RnnCell::kRnn;
}

struct ActivationInfo {
  const char* name;
  RnnActivation::Kind kind;
  bool uses_alpha, uses_beta;
  double alpha, beta;  // defaults
};

constexpr ActivationInfo kActivations[] = {
    {"relu", RnnActivation::Kind::kRelu, false, false, 0, 0},
    {"tanh", RnnActivation::Kind::kTanh, false, false, 0, 0},
    {"sigmoid", RnnActivation::Kind::kSigmoid, false, false, 0, 0},
    {"affine", RnnActivation::Kind::kAffine, true, true, 1.0, 0.0},
    {"leakyrelu", RnnActivation::Kind::kLeakyRelu, true, false, 0.01, 0},
    {"thresholdedrelu", RnnActivation::Kind::kThresholdedRelu, true, false, 1.0, 0},
    {"scaledtanh", RnnActivation::Kind::kScaledTanh, true, true, 1.0, 1.0},
    {"hardsigmoid", RnnActivation::Kind::kHardSigmoid, true, true, 0.2, 0.5},
    {"elu", RnnActivation::Kind::kElu, true, false, 1.0, 0},
    {"softsign", RnnActivation::Kind::kSoftsign, false, false, 0, 0},
    {"softplus", RnnActivation::Kind::kSoftplus, false, false, 0, 0},
};

Expected<ref::RnnOptions> ReadRnnOptions(const ir::Node& node) {
  ir::AttrReader r(node);
  ref::RnnOptions o;
  o.cell = CellOf(node);
  o.hidden = r.Int("hidden_size", 0);
  const std::string direction = r.String("direction", "forward");
  o.batch_first = r.Int("layout", 0) != 0;
  const bool has_clip = r.Has("clip");
  o.clip = r.Float("clip", 0.0f);
  o.linear_before_reset = r.Int("linear_before_reset", 0) != 0;
  o.input_forget = r.Int("input_forget", 0) != 0;
  std::vector<std::string> names = r.Strings("activations");
  const std::vector<float> alphas = r.Floats("activation_alpha");
  const std::vector<float> betas = r.Floats("activation_beta");
  KILN_RETURN_IF_ERROR(r.status());

  if (direction == "forward" || direction == "reverse") {
    o.num_directions = 1;
    o.reverse = direction == "reverse";
  } else if (direction == "bidirectional") {
    o.num_directions = 2;
  } else {
    return Status::Error(node.Where(), "attribute direction='", direction,
                         "' is not one of forward, reverse, bidirectional");
  }
  if (has_clip && !(o.clip > 0))
    return Status::Error(node.Where(), "attribute clip must be positive, got ", o.clip);

  const int per_dir = ref::RnnActivationsPerDirection(o.cell);
  const size_t total = static_cast<size_t>(per_dir * o.num_directions);
  if (names.empty()) {
    const std::vector<std::string> defaults =
        o.cell == RnnCell::kRnn ? std::vector<std::string>{"Tanh"}
        : o.cell == RnnCell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                  : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    for (int d = 0; d < o.num_directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() == static_cast<size_t>(per_dir) && o.num_directions == 2) {
    // Exporters sometimes list one direction's activations for both.
    std::vector<std::string> twice = names;
    names.insert(names.end(), twice.begin(), twice.end());
  }
  if (names.size() != total)
    return Status::Error(node.Where(), "attribute activations has ", names.size(),
                         " entries, expected ", total);
  // alpha/beta lists either pair with the activations one to one, or (shorter) are consumed in
  // order by the activations that take a parameter.
  size_t next_alpha = 0, next_beta = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string lower = names[i];
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    const ActivationInfo* info = nullptr;
    for (const ActivationInfo& a : kActivations)
      if (lower == a.name) info = &a;
    if (info == nullptr)
      return Status::Error(node.Where(), "activation '", names[i], "' is not supported");
    RnnActivation act{info->kind, info->alpha, info->beta};
    if (alphas.size() == names.size()) {
      if (info->uses_alpha) act.alpha = alphas[i];
    } else if (info->uses_alpha && next_alpha < alphas.size()) {
      act.alpha = alphas[next_alpha++];
    }
    if (betas.size() == names.size()) {
      if (info->uses_beta) act.beta = betas[i];
    } else if (info->uses_beta && next_beta < betas.size()) {
      act.beta = betas[next_beta++];
    }
    o.activations.push_back(act);
  }
  return o;
}

// Input indices: X, W, R, B, sequence_lens, initial_h, then LSTM's initial_c and P.
constexpr size_t kX = 0, kW = 1, kR = 2, kB = 3, kSeqLens = 4, kInitialH = 5, kInitialC = 6,
                 kP = 7;

Status InferRnn(ir::Node& node) {
  KILN_ASSIGN_OR_RETURN(ref::RnnOptions o, ReadRnnOptions(node));
  if (!node.has_input(kX) || !node.has_input(kW) || !node.has_input(kR))
    return Status::Error(node.Where(), "inputs 'X', 'W' and 'R' are required");
  const ValueType& x = node.inputs[kX]->type;
  Dim hidden = o.hidden > 0 ? Dim::Static(o.hidden) : Dim::Unknown();
  const ValueType& rt = node.inputs[kR]->type;
  if (o.hidden <= 0 && rt.shape && rt.shape->size() == 3) hidden = (*rt.shape)[2];
  Dim seq = Dim::Unknown(), batch = Dim::Unknown();
  if (x.shape && x.shape->size() == 3) {
    seq = (*x.shape)[o.batch_first ? 1 : 0];
    batch = (*x.shape)[o.batch_first ? 0 : 1];
  }
  const Dim dirs = Dim::Static(o.num_directions);
  ValueType y{x.dtype, o.batch_first ? std::vector<Dim>{batch, seq, dirs, hidden}
                                     : std::vector<Dim>{seq, dirs, batch, hidden}};
  ValueType state{x.dtype, o.batch_first ? std::vector<Dim>{batch, dirs, hidden}
                                         : std::vector<Dim>{dirs, batch, hidden}};
  SetOutputType(node, 0, y);
  SetOutputType(node, 1, state);
  if (o.cell == RnnCell::kLstm) SetOutputType(node, 2, state);
  return Status::Ok();
}

Status RunRnnOp(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(ref::RnnOptions o, ReadRnnOptions(ctx.node));
  ref::RnnInputs in;
  in.x = ctx.input(kX);
  in.w = ctx.input(kW);
  in.r = ctx.input(kR);
  if (in.x == nullptr || in.w == nullptr || in.r == nullptr)
    return ctx.Error("inputs 'X', 'W' and 'R' are required");
  // A zero-sized optional input is how some exporters write "absent".
  auto optional = [&](size_t i) {
    const Tensor* t = ctx.input(i);
    return t != nullptr && t->numel() > 0 ? t : nullptr;
  };
  in.b = optional(kB);
  in.initial_h = optional(kInitialH);
  if (o.cell == RnnCell::kLstm) {
    in.initial_c = optional(kInitialC);
    in.p = optional(kP);
  }
  if (o.hidden <= 0) {
    if (in.r->rank() != 3)
      return ctx.Error("hidden_size is not given and 'R' ", DescribeTensor(*in.r), " is not 3-D");
    o.hidden = in.r->dim(2);
  }
  if (const Tensor* lens = optional(kSeqLens)) {
    if (lens->rank() != 1)
      return ctx.Error("'sequence_lens' must be 1-D, got ", DescribeTensor(*lens));
    KILN_ASSIGN_OR_RETURN(in.seq_lens, lens->ToInt64Vector("'sequence_lens'"));
  }
  ref::RnnOutputs out;
  KILN_RETURN_IF_ERROR(ref::RunRnn(o, in, &out).WithContext(ctx.node.Where()));
  Tensor* results[] = {&out.y, &out.y_h, &out.y_c};
  for (size_t i = 0; i < ctx.outputs.size() && i < 3; ++i) ctx.outputs[i] = std::move(*results[i]);
  return Status::Ok();
}

constexpr OpDef kRnnOps[] = {
    {"", "RNN", InferRnn, RunRnnOp, 7, true},
    {"", "GRU", InferRnn, RunRnnOp, 7, true},
    {"", "LSTM", InferRnn, RunRnnOp, 7, true},
};

}  // namespace

std::span<const OpDef> RnnOps() { return kRnnOps; }

}  // namespace kiln::ops
