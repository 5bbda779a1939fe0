// The "gemm" step kernel: Y = act(A * B + bias) with B packed by lower/native_gemm.cc (Gemm,
// kiln.FusedGemm, MatMul with a constant B).
//
// The packed B is a view of the module's blob (no copy; the weights may be an mmap of a .kiln
// file), checked against the step's params first, since a module file may be hostile. A is read
// in place: [M, K] for MatMul (any leading dims, flattened into M) and Gemm, or [K, M] for Gemm
// with transA. Nothing but K ties the step to a shape, so any M runs.
#include "kernels/gemm/gemm.h"

#include <algorithm>
#include <cstdint>

#include "kernels/gemm/ukernel_table.h"
#include "runtime/kernels/families.h"
#include "runtime/kernels/prepacked_params.h"

namespace kiln::runtime {
namespace {

using prepacked::ReadActivation;
using prepacked::SizeParam;
using prepacked::StepBlob;

class GemmKernel final : public StepKernel {
 public:
  GemmKernel(std::string name, gemm::PackedMatrix b, bool trans_a, gemm::Epilogue ep)
      : name_(std::move(name)), b_(std::move(b)), trans_a_(trans_a), ep_(ep) {}

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    if (inputs.size() != 1 || !inputs[0]) {
      return Status::Error("step '", name_, "' (gemm) takes one input, A");
    }
    const Dims& a = *inputs[0];
    const int64_t k = static_cast<int64_t>(b_.rows()), n = static_cast<int64_t>(b_.cols());
    const bool fits = trans_a_ ? a.size() == 2 && a[0] == k : a.size() >= 2 && a.back() == k;
    if (!fits) {
      return Status::Error("step '", name_, "' (gemm): input A is ", DimsToString(a),
                           " but the step multiplies ",
                           trans_a_ ? StrCat("A^T with A of shape [", k, ",M]")
                                    : StrCat("A of shape [...,", k, "] (rank >= 2)"),
                           " by a constant B of ", k, " x ", n);
    }
    KILN_RETURN_IF_ERROR(CheckedNumel(a, StrCat("input A of step '", name_, "'")).status());
    Dims y = trans_a_ ? Dims{a[1]} : Dims(a.begin(), a.end() - 1);
    y.push_back(n);
    outputs->assign(1, std::move(y));
    return Status::Ok();
  }

  Status Run(const StepArgs& args) const override {
    if (args.inputs.size() != 1 || args.outputs.size() != 1 || !args.inputs[0] ||
        !args.outputs[0]) {
      return Status::Error("step '", name_, "' (gemm) takes one input and one output");
    }
    const Tensor& a = *args.inputs[0];
    Tensor& y = *args.outputs[0];
    // Checked without building dims (a run at a planned shape must not allocate); InferShapes
    // builds the message when something is wrong.
    const Dims& ad = a.dims();
    const int64_t k = static_cast<int64_t>(b_.rows()), n = static_cast<int64_t>(b_.cols());
    const Dims& yd = y.dims();
    const bool fits =
        trans_a_ ? ad.size() == 2 && ad[0] == k && yd.size() == 2 && yd[0] == ad[1] && yd[1] == n
                 : ad.size() >= 2 && ad.back() == k && yd.size() == ad.size() &&
                       std::equal(ad.begin(), ad.end() - 1, yd.begin()) && yd.back() == n;
    if (!fits || a.dtype() != DType::kFloat32 || y.dtype() != DType::kFloat32) {
      const Dims* in[] = {&ad};
      std::vector<std::optional<Dims>> out;
      KILN_RETURN_IF_ERROR(InferShapes(in, &out));
      return Status::Error("step '", name_, "' (gemm): got A ", DescribeTensor(a), " and Y ",
                           DescribeTensor(y), ", expected float32 and Y ", DimsToString(*out[0]));
    }
    const size_t m = trans_a_ ? static_cast<size_t>(ad[1])
                              : static_cast<size_t>(a.numel()) / static_cast<size_t>(k);
    gemm::Options o;
    o.trans_a = trans_a_;
    o.epilogue = ep_;
    o.pool = args.pool;
    Status s = gemm::SgemmPackedB(m, a.data<float>(), trans_a_ ? m : b_.rows(), b_, y.data<float>(),
                                  b_.cols(), o);
    if (!s.ok()) return s.WithContext(StrCat("step '", name_, "' (gemm): "));
    return Status::Ok();
  }

  // One row of A (a batch-1 classifier) runs as a matrix-vector product over B's panels
  // (SgemmPackedB), not through the tile microkernel: the label names both.
  std::string Describe() const override {
    return StrCat("gemm packed_b ", gemm::SelectGemmUkernel(b_.isa()).name, " (1 row: panel gemv) ",
                  IsaName(b_.isa()));
  }

 private:
  std::string name_;
  gemm::PackedMatrix b_;  // K x N, a view of the module's weights
  bool trans_a_ = false;
  gemm::Epilogue ep_;  // bias points into the module's weights
};

Expected<std::unique_ptr<StepKernel>> CreateGemm(const Step& step, const Module& module) {
  const StepParams& sp = step.params;
  constexpr int64_t kMax = int64_t{1} << 32;  // PackedMatrix::View's bound
  KILN_ASSIGN_OR_RETURN(size_t k, SizeParam(sp, "k", 1, kMax));
  KILN_ASSIGN_OR_RETURN(size_t n, SizeParam(sp, "n", 1, kMax));
  KILN_ASSIGN_OR_RETURN(size_t trans_a, SizeParam(sp, "trans_a", 0, 1));
  KILN_ASSIGN_OR_RETURN(size_t panel, SizeParam(sp, "panel", 1, 64));
  KILN_ASSIGN_OR_RETURN(size_t has_bias, SizeParam(sp, "has_bias", 0, 1));
  KILN_ASSIGN_OR_RETURN(std::string isa_name, sp.String("isa"));
  KILN_ASSIGN_OR_RETURN(IsaLevel isa, ParseIsa(isa_name));
  if (step.blobs.size() != 1 + has_bias || step.inputs.size() != 1 || step.outputs.size() != 1) {
    return Status::Error("gemm takes one input, one output and ", 1 + has_bias,
                         " blobs (packed B, bias); the step has ", step.inputs.size(), ", ",
                         step.outputs.size(), " and ", step.blobs.size());
  }
  gemm::Epilogue ep;
  KILN_RETURN_IF_ERROR(ReadActivation(sp, &ep));
  KILN_ASSIGN_OR_RETURN(std::span<const std::byte> b, StepBlob(step, module, 0));
  KILN_ASSIGN_OR_RETURN(
      gemm::PackedMatrix packed,
      gemm::PackedMatrix::View(false, k, n, panel, isa, reinterpret_cast<const float*>(b.data()),
                               b.size(), module.weights_owner));
  if (has_bias) {
    KILN_ASSIGN_OR_RETURN(std::span<const std::byte> bias, StepBlob(step, module, 1));
    if (bias.size() != n * sizeof(float) ||
        reinterpret_cast<uintptr_t>(bias.data()) % alignof(float) != 0) {
      return Status::Error("the bias blob has ", bias.size(), " bytes; ", n, " columns need ",
                           n * sizeof(float));
    }
    ep.bias_kind = gemm::BiasKind::kPerColumn;
    ep.bias = reinterpret_cast<const float*>(bias.data());
  }
  return std::unique_ptr<StepKernel>(
      new GemmKernel(step.name, std::move(packed), trans_a != 0, ep));
}

constexpr KernelEntry kGemmKernels[] = {{"gemm", CreateGemm}};

}  // namespace

std::span<const KernelEntry> GemmKernels() { return kGemmKernels; }

}  // namespace kiln::runtime
