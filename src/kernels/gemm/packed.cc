// PackedMatrix: operands packed once into microkernel panels (PackA, PackB), or views of panels
// that a compiled module stores (PackedMatrix::View).
#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "kernels/gemm/driver.h"
#include "kernels/gemm/pack.h"

namespace kiln::gemm {
namespace {

constexpr size_t kAlign = 64;

size_t DivUp(size_t a, size_t b) { return (a + b - 1) / b; }
size_t RoundUp(size_t a, size_t b) { return DivUp(a, b) * b; }

std::shared_ptr<const float> AllocPanels(size_t floats) {
  void* p = std::aligned_alloc(kAlign, RoundUp(std::max<size_t>(floats, 1) * 4, kAlign));
  return std::shared_ptr<const float>(static_cast<float*>(p), [](const float* q) {
    std::free(const_cast<float*>(q));
  });
}

}  // namespace

size_t PackedMatrix::size_bytes() const {
  if (panel_ == 0) return 0;
  const size_t outer = is_a_ ? rows_ : cols_;
  const size_t k = is_a_ ? cols_ : rows_;
  return (outer + panel_ - 1) / panel_ * panel_ * k * sizeof(float);
}

Expected<PackedMatrix> PackA(size_t m, size_t k, const float* a, size_t lda, bool trans_a,
                             std::optional<IsaLevel> isa, size_t n_hint) {
  const GemmUkernel& uk = KernelFor(isa);
  if (m * k > 0) {
    if (!a) return Status::Error("PackA: A is null for a ", m, " x ", k, " operand");
    KILN_RETURN_IF_ERROR(CheckLd("lda", lda, trans_a ? m : k));
  }
  // Panels of NR rows are the packed B of the transposed product.
  // B is assumed plain with contiguous rows (a convolution's input or im2col columns).
  const size_t panel =
      n_hint > 1 && PreferTransposed(uk, m, n_hint, k, /*b_rows_plain=*/true, /*a_prepacked=*/true)
          ? uk.nr
          : uk.mr;
  const size_t floats = DivUp(m, panel) * panel * k;
  std::shared_ptr<const float> data = AllocPanels(floats);
  if (!data) return Status::Error("PackA: out of memory for ", floats * 4, " bytes");
  if (m * k > 0) {
    PackAPanels(a, trans_a ? 1 : lda, trans_a ? lda : 1, m, k, panel,
                const_cast<float*>(data.get()), k * panel);
  }
  return PackedMatrixAccess::Make(m, k, panel, uk.isa, /*is_a=*/true, std::move(data));
}

Expected<PackedMatrix> PackB(size_t k, size_t n, const float* b, size_t ldb, bool trans_b,
                             std::optional<IsaLevel> isa) {
  const GemmUkernel& uk = KernelFor(isa);
  if (n * k > 0) {
    if (!b) return Status::Error("PackB: B is null for a ", k, " x ", n, " operand");
    KILN_RETURN_IF_ERROR(CheckLd("ldb", ldb, trans_b ? k : n));
  }
  const size_t floats = DivUp(n, uk.nr) * uk.nr * k;
  std::shared_ptr<const float> data = AllocPanels(floats);
  if (!data) return Status::Error("PackB: out of memory for ", floats * 4, " bytes");
  if (n * k > 0) {
    PackBPanels(b, trans_b ? 1 : ldb, trans_b ? ldb : 1, k, n, uk.nr,
                const_cast<float*>(data.get()), k * uk.nr);
  }
  return PackedMatrixAccess::Make(k, n, uk.nr, uk.isa, /*is_a=*/false, std::move(data));
}

Expected<PackedMatrix> PackedMatrix::View(bool is_a, size_t rows, size_t cols, size_t panel,
                                          IsaLevel isa, const float* data, size_t bytes,
                                          std::shared_ptr<const void> owner) {
  const char* what = is_a ? "packed A" : "packed B";
  // 2^32 per dim keeps the size arithmetic below from wrapping before it is checked.
  constexpr size_t kMaxDim = size_t{1} << 32;
  if (rows == 0 || cols == 0 || rows > kMaxDim || cols > kMaxDim) {
    return Status::Error(what, ": ", rows, " x ", cols, " is not a viewable shape");
  }
  if (static_cast<int>(isa) < static_cast<int>(IsaLevel::kScalar) ||
      static_cast<int>(isa) > static_cast<int>(IsaLevel::kAvx512)) {
    return Status::Error(what, ": unknown ISA level ", static_cast<int>(isa));
  }
  if (isa > ActiveIsa()) {
    return Status::Error(what, ": packed for ", IsaName(isa), " but this process runs at most ",
                         IsaName(ActiveIsa()), " (recompile the model for this machine)");
  }
  const GemmUkernel& uk = SelectGemmUkernel(isa);
  // A: MR-row panels, or NR-row ones for the transposed product; B: NR-column panels.
  const bool panel_ok = panel == uk.nr || (is_a && panel == uk.mr);
  if (uk.isa != isa || !panel_ok) {
    return Status::Error(what, ": panel width ", panel, " for ", IsaName(isa),
                         " does not match the microkernel (", uk.name, " packs ",
                         is_a ? StrCat(uk.mr, " or ", uk.nr) : StrCat(uk.nr), ")");
  }
  // The packers' layout: the outer dim (M for A, N for B) padded to whole panels, times K.
  const size_t outer = is_a ? rows : cols, k = is_a ? cols : rows;
  size_t floats = 0, need = 0;
  if (__builtin_mul_overflow(DivUp(outer, panel) * panel, k, &floats) ||
      __builtin_mul_overflow(floats, sizeof(float), &need)) {
    return Status::Error(what, ": ", rows, " x ", cols, " is too large");
  }
  if (bytes != need) {
    return Status::Error(what, ": ", rows, " x ", cols, " in panels of ", panel, " needs ", need,
                         " bytes, but ", bytes, " were given");
  }
  if (!data || reinterpret_cast<uintptr_t>(data) % alignof(float) != 0) {
    return Status::Error(what, ": the data pointer is null or not aligned to a float");
  }
  // Aliasing constructor: shares `owner`'s lifetime, points at the panels.
  return PackedMatrixAccess::Make(rows, cols, panel, isa, is_a,
                                  std::shared_ptr<const float>(std::move(owner), data));
}

}  // namespace kiln::gemm
