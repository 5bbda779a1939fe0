// kiln.FusedConv / kiln.FusedGemm activations as GEMM epilogues, shared by both lowerings.
#include "lower/native.h"

namespace kiln::lower {

std::optional<gemm::Epilogue> FusedActivation(const ir::Node& node) {
  ir::AttrReader r(node);
  const std::string name = r.String("activation", "");
  const std::vector<float> params = r.Floats("activation_params");
  if (!r.status().ok()) return std::nullopt;
  gemm::Epilogue ep;
  if (name == "Relu") {
    ep.activation = gemm::Activation::kRelu;
  } else if (name == "Clip") {
    if (params.size() != 2 || !(params[0] <= params[1])) return std::nullopt;
    ep.activation = gemm::Activation::kClip;
    ep.clip_min = params[0];
    ep.clip_max = params[1];
  } else if (name == "Silu") {
    ep.activation = gemm::Activation::kSilu;
  } else if (name == "HardSwish") {
    ep.activation = gemm::Activation::kHardSwish;
  } else if (name == "Gelu") {
    ep.activation = gemm::Activation::kGelu;
  } else {
    return std::nullopt;
  }
  return ep;
}

}  // namespace kiln::lower
