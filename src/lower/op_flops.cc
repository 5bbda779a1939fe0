#include "lower/op_flops.h"

#include <optional>
#include <vector>

namespace kiln::lower {
namespace {

std::optional<std::vector<int64_t>> StaticDims(const ir::Value* v) {
  if (v == nullptr || !v->type.has_static_shape()) return std::nullopt;
  return v->type.static_dims();
}

double Numel(const std::vector<int64_t>& dims) {
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(d);
  return n;
}

// Both convolutions: 2 * numel(big side) * prod(W dims after the first). Conv's weight is
// [M, C/g, k...] and every output element takes C/g * prod(k) multiply-adds; ConvTranspose's
// is [C, M/g, k...] and every input element scatters M/g * prod(k) of them.
double ConvFlops(const ir::Node& node, bool transpose) {
  const auto w = StaticDims(node.has_input(1) ? node.inputs[1] : nullptr);
  const auto big = StaticDims(transpose ? (node.has_input(0) ? node.inputs[0] : nullptr)
                                        : (node.has_output(0) ? node.outputs[0] : nullptr));
  if (!w || !big || w->empty()) return -1;
  return 2.0 * Numel(*big) * Numel(std::vector<int64_t>(w->begin() + 1, w->end()));
}

// 2 * numel(Y) * K, with K the reduced dim of A.
double GemmFlops(const ir::Node& node, bool is_gemm) {
  const auto a = StaticDims(node.has_input(0) ? node.inputs[0] : nullptr);
  const auto y = StaticDims(node.has_output(0) ? node.outputs[0] : nullptr);
  if (!a || !y || a->empty()) return -1;
  int64_t k = a->back();
  if (is_gemm) {
    const ir::Attribute* trans_a = node.attr("transA");
    if (a->size() != 2) return -1;
    if (trans_a != nullptr && trans_a->i != 0) k = (*a)[0];
  }
  return 2.0 * Numel(*y) * static_cast<double>(k);
}

}  // namespace

double NodeFlops(const ir::Node& node) {
  // kiln's fused ops count as the Conv or Gemm inside them (the activation is not counted).
  if (node.domain == "kiln" && node.op_type == "FusedConv") return ConvFlops(node, false);
  if (node.domain == "kiln" && node.op_type == "FusedGemm") return GemmFlops(node, true);
  if (!node.domain.empty() && node.domain != "ai.onnx") return 0;
  if (node.op_type == "Conv") return ConvFlops(node, false);
  if (node.op_type == "ConvTranspose") return ConvFlops(node, true);
  if (node.op_type == "Gemm") return GemmFlops(node, true);
  if (node.op_type == "MatMul") return GemmFlops(node, false);
  return 0;
}

}  // namespace kiln::lower
