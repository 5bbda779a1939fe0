// Native lowering of float products with a constant right-hand side: Gemm, kiln.FusedGemm (Gemm +
// an activation) and MatMul with a 2-D constant B.
//
// B is packed here, once, by gemm::PackB at the module's ISA, with Gemm's alpha folded into it,
// and only the packed panels are stored (B itself never gets a value id, so it is not stored
// twice). Gemm's beta * C becomes a per-column bias when C is one row ([N], [1, N] or a scalar);
// any other C, or a computed B, stays on the reference. The runtime kernel
// (runtime/kernels/gemm.cc) views the panels in place from the step's params.
#include <optional>
#include <string>
#include <vector>

#include "kernels/gemm/gemm.h"
#include "lower/native.h"

namespace kiln::lower {
namespace {

// What the two ops have in common once their operands are checked.
struct Product {
  size_t k = 0, n = 0;
  bool trans_a = false;
  std::vector<float> bias;  // N values, or empty
  gemm::Epilogue ep;
};

std::span<const std::byte> Bytes(const float* p, size_t floats) {
  return {reinterpret_cast<const std::byte*>(p), floats * sizeof(float)};
}

// Packs b (K x N, or N x K with trans_b) and emits the "gemm" step. Y = act(A * B + bias).
Expected<bool> Emit(const ir::Node& node, LowerContext& ctx, const Product& pr, const float* b,
                    bool trans_b, const std::string& op) {
  KILN_ASSIGN_OR_RETURN(gemm::PackedMatrix packed,
                        gemm::PackB(pr.k, pr.n, b, trans_b ? pr.k : pr.n, trans_b, ctx.isa()));
  runtime::Step step;
  step.kernel = "gemm";
  step.name = node.name;
  step.op = op;
  KILN_ASSIGN_OR_RETURN(int32_t a_id, ctx.ValueId(node.inputs[0]));
  KILN_ASSIGN_OR_RETURN(int32_t y_id, ctx.ValueId(node.outputs[0]));
  step.inputs = {a_id};
  step.outputs = {y_id};
  runtime::StepParams& sp = step.params;
  sp.ints = {{"k", static_cast<int64_t>(pr.k)},
             {"n", static_cast<int64_t>(pr.n)},
             {"trans_a", pr.trans_a ? 1 : 0},
             {"panel", static_cast<int64_t>(packed.panel_width())},
             {"has_bias", pr.bias.empty() ? 0 : 1}};
  sp.strings = {{"isa", IsaName(packed.isa())},
                {"activation", gemm::ActivationName(pr.ep.activation)}};
  sp.floats = {{"clip_min", pr.ep.clip_min}, {"clip_max", pr.ep.clip_max}};
  step.blobs.push_back(ctx.AddBlob(Bytes(packed.data(), packed.size_bytes() / sizeof(float))));
  if (!pr.bias.empty()) step.blobs.push_back(ctx.AddBlob(Bytes(pr.bias.data(), pr.n)));
  ctx.AddStep(std::move(step));
  return true;
}

const Tensor* ConstantFloat(const ir::Value* v) {
  return v && v->constant && v->constant->dtype() == DType::kFloat32 ? &*v->constant : nullptr;
}

Expected<bool> LowerGemm(const ir::Node& node, LowerContext& ctx) {
  const bool fused = node.domain == "kiln" && node.op_type == "FusedGemm";
  if (!fused && !(node.domain.empty() && node.op_type == "Gemm")) return false;
  if (!node.has_input(0) || !node.has_input(1) || node.inputs.size() > 3 ||
      node.outputs.size() != 1 || !node.has_output(0)) {
    return false;
  }
  // M (the batch of a classifier head) may be symbolic: the kernel runs any M.
  auto a = BatchFreeFloatDims(node.inputs[0]);
  const auto bd = StaticFloatDims(node.inputs[1]);
  auto y = BatchFreeFloatDims(node.outputs[0]);
  const Tensor* b = ConstantFloat(node.inputs[1]);
  if (!a || !bd || !y || !b || a->size() != 2 || bd->size() != 2 || b->dims() != *bd) return false;
  ir::AttrReader r(node);
  const float alpha = r.Float("alpha", 1.0f), beta = r.Float("beta", 1.0f);
  const bool trans_a = r.Int("transA", 0) != 0, trans_b = r.Int("transB", 0) != 0;
  KILN_RETURN_IF_ERROR(r.status().WithContext(node.Where()));
  if (((*a)[0] < 0) != ((*y)[0] < 0) || ((*a)[0] < 0 && trans_a)) return false;
  if ((*a)[0] < 0) (*a)[0] = (*y)[0] = 1;
  Product pr;
  if (fused) {
    auto act = FusedActivation(node);
    if (!act) return false;
    pr.ep = *act;
  }
  const int64_t m = trans_a ? (*a)[1] : (*a)[0], k = trans_a ? (*a)[0] : (*a)[1];
  const int64_t kb = trans_b ? (*bd)[1] : (*bd)[0], n = trans_b ? (*bd)[0] : (*bd)[1];
  if (k != kb || *y != std::vector<int64_t>{m, n}) {
    return Status::Error(node.Where(), "A ", DimsToString(*a), " and B ", DimsToString(*bd),
                         " (transA=", trans_a, ", transB=", trans_b,
                         ") do not give the declared output ", DimsToString(*y));
  }
  if (k == 0 || n == 0) return false;  // nothing to pack; the reference handles it
  pr.k = static_cast<size_t>(k);
  pr.n = static_cast<size_t>(n);
  pr.trans_a = trans_a;
  if (node.has_input(2) && beta != 0.0f) {
    // One row of C broadcast down the rows is a per-column bias; anything else is not.
    const Tensor* c = ConstantFloat(node.inputs[2]);
    if (!c || c->rank() > 2 || (c->rank() == 2 && c->dim(0) != 1)) return false;
    if (c->numel() != n && c->numel() != 1) return false;
    pr.bias.resize(pr.n);
    for (size_t j = 0; j < pr.n; ++j) pr.bias[j] = beta * c->data<float>()[c->numel() == 1 ? 0 : j];
  }
  const float* b_data = b->data<float>();
  std::vector<float> scaled;
  if (alpha != 1.0f) {
    // alpha (A B) == A (alpha B): folding it into the packed B costs nothing at run time.
    scaled.assign(b_data, b_data + b->numel());
    for (float& v : scaled) v *= alpha;
    b_data = scaled.data();
  }
  return Emit(node, ctx, pr, b_data, trans_b,
              fused ? StrCat("Gemm+", r.String("activation", "")) : std::string("Gemm"));
}

Expected<bool> LowerMatMul(const ir::Node& node, LowerContext& ctx) {
  if (!node.domain.empty() || node.op_type != "MatMul") return false;
  if (node.inputs.size() != 2 || !node.has_input(0) || !node.has_input(1) ||
      node.outputs.size() != 1 || !node.has_output(0)) {
    return false;
  }
  auto a = BatchFreeFloatDims(node.inputs[0]);
  const auto bd = StaticFloatDims(node.inputs[1]);
  auto y = BatchFreeFloatDims(node.outputs[0]);
  const Tensor* b = ConstantFloat(node.inputs[1]);
  if (!a || !y || ((*a)[0] < 0) != ((*y)[0] < 0)) return false;
  if ((*a)[0] < 0) (*a)[0] = (*y)[0] = 1;  // a symbolic batch: the kernel runs any
  // A of rank >= 2 is viewed as [prod(leading dims), K]; a batched or 1-D B is not a single
  // packed matrix, so those stay on the reference.
  if (!a || !bd || !y || !b || a->size() < 2 || bd->size() != 2 || b->dims() != *bd) return false;
  const int64_t k = a->back(), n = (*bd)[1];
  std::vector<int64_t> want(a->begin(), a->end() - 1);
  want.push_back(n);
  if (k != (*bd)[0] || *y != want) {
    return Status::Error(node.Where(), "A ", DimsToString(*a), " and B ", DimsToString(*bd),
                         " do not give the declared output ", DimsToString(*y));
  }
  if (k == 0 || n == 0) return false;
  Product pr;
  pr.k = static_cast<size_t>(k);
  pr.n = static_cast<size_t>(n);
  return Emit(node, ctx, pr, b->data<float>(), /*trans_b=*/false, "MatMul");
}

constexpr NativeLowering kGemmLowerings[] = {LowerGemm, LowerMatMul};

}  // namespace

std::span<const NativeLowering> GemmLowerings() { return kGemmLowerings; }

}  // namespace kiln::lower
