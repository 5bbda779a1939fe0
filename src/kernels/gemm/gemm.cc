// The GEMM entry points: they check the arguments, set up a Problem (problem.h) from the
// operands and options, and hand it to the driver (run.cc); and the orientation model shared
// with the operand packers.
#include "kernels/gemm/gemm.h"

#include <algorithm>

#include "kernels/gemm/driver.h"
#include "kernels/gemm/epilogue.h"
#include "kernels/gemm/panel_gemv.h"
#include "kernels/gemm/problem.h"
#include "kernels/gemm/ukernel_table.h"

namespace kiln::gemm {

const char* ActivationName(Activation act) {
  switch (act) {
    case Activation::kNone:
      return "none";
    case Activation::kRelu:
      return "relu";
    case Activation::kClip:
      return "clip";
    case Activation::kSilu:
      return "silu";
    case Activation::kHardSwish:
      return "hardswish";
    case Activation::kGelu:
      return "gelu";
  }
  return "unknown";
}

// Whether C^T = B^T * A^T should run instead of C = A * B. Lanes (at vector granularity) each
// keeps busy, the transposed tile store costing about uk.trans_k k steps per tile; row edges
// cost no lanes either way. (On Zen 4 a masked zmm FMA costs a whole one, so this holds for its
// double-pumped AVX-512 too.) b_rows_plain: B is plain with contiguous rows, so the normal
// product packs it panel by panel, each panel serving only M rows (about kPackB / M of the
// work), while the transposed one reads it in place when M <= kInPlaceMaxColumns but packs
// A^T (uk.trans_pack_a lanes per element of A, fitted per ISA in ukernel_table.cc), and at
// some ISAs reads B^T badly where B's rows alias in L1 (uk.trans_alias_bytes). Measured,
// 1 thread: 1x1 convolutions with 32..128 output channels over 14x14..56x56 pixels ran 10-15%
// faster transposed (bench_conv 192to32@28 0.83 -> 0.98 of oneDNN, 384to64@14 0.84 -> 0.99),
// and 16x12544x32 73 -> 88 GFLOP/s; 96x12544x16 was no faster (its short K pays the stores).
// Otherwise a clear gain is asked for, as plain operands then pack differently each way, except
// for a prepacked A (a 1x1 convolution's weights), packed once either way: any gain goes. There
// 14x14 maps (N = 196: 13 vectors for 12.25) turn from K ~ 130 up, not only from K ~ 510;
// measured, 1 thread, with ReLU and a residual: 256->1024@14 107 -> 112 GFLOP/s (104 -> 108
// with cold weights), and forced the other way 512->1024@28 s2 112 -> 107.
bool PreferTransposed(const GemmUkernel& uk, size_t m, size_t n, size_t k, bool b_rows_plain,
                      bool a_prepacked) {
  if (uk.vec == 0 || m == 0 || n == 0 || k == 0) return false;
  constexpr double kPackB = 8.0;
  auto lanes = [&](size_t x) { return static_cast<double>((x + uk.vec - 1) / uk.vec * uk.vec); };
  const double normal = static_cast<double>(m) * lanes(n);
  const double trans = static_cast<double>(n) * lanes(m) *
                       (1.0 + static_cast<double>(uk.trans_k) / static_cast<double>(k));
  // A B from memory read in place by the normal product arrives spread over the tiles (run.cc,
  // NextPanelShare); the transposed one reads it as its A, a tile's 14 floats a row, and waits
  // on it: 1 thread, 64x3136x2304 202 -> 227 GFLOP/s normal, 2 threads 375 -> 446, 128x12544x576
  // at 2 threads 395 -> 425.
  if (b_rows_plain && !a_prepacked && BFromMemory(k, n) &&
      LongRowsInPlace(uk, n * sizeof(float))) {
    return false;
  }
  // Of plain A, the transposed product packs A^T through the transposing packer, where the
  // normal one reads A's rows in place or packs them on its first tiles (run.cc, RowsInPlace
  // and FusesPackA).
  const double pack_at = static_cast<double>(uk.trans_pack_a) * static_cast<double>(m);
  if (b_rows_plain && TransposedReadsInPlace(uk.nr, m)) {
    if (!a_prepacked && uk.trans_alias_bytes != 0 &&
        n * sizeof(float) % uk.trans_alias_bytes == 0) {
      return false;
    }
    // B's rows a page or more apart: the transposed tile reads each k step's row of B^T from its
    // own page, and lost to the normal product at some ISAs (uk.trans_far_rows_bytes).
    if (!a_prepacked && uk.trans_far_rows_bytes != 0 &&
        n * sizeof(float) >= uk.trans_far_rows_bytes) {
      return false;
    }
    // Of plain A, the normal product is not charged for packing B where it reads B in place
    // (run.cc's ReadBInPlace) and the transposed tile would run one vector wide: one row of
    // tiles (M <= MR), or long rows of whole lines under M <= one vector. Charging it there sent
    // those products to the transposed one, whose one-vector tile read rows of B a page or more
    // apart. Zen 5, 1 thread, median of 11 interleaved rounds, transposed -> normal: AVX-512
    // 9x768x768 100 -> 149 GFLOP/s, 14x768x768 158 -> 226, 12x3072x768 75 -> 166, 16x768x768
    // 179 -> 215; AVX2 4x768x768 36 -> 87. With more rows the charge stays: 24x768x768 level,
    // 32x1024x1024 and (bench_gemm) 64x3136x576 faster transposed.
    const bool packs_b =
        a_prepacked ||
        (m > uk.mr && !(uk.b_in_place && m <= uk.vec && LongRowsInPlace(uk, n * sizeof(float))));
    // A tie (K = M: 64->64@56, 128->128@56) goes to the transposed product under a prepacked A:
    // 1 thread, with ReLU and a residual, 128->128@56 104 -> 108 GFLOP/s, 64->64@56 95 -> 99.
    const double normal_cost =
        normal * (1.0 + (packs_b ? kPackB / static_cast<double>(m) : 0.0));
    return a_prepacked ? trans <= normal_cost
                       : trans * (1.0 + uk.trans_in_place_extra) + pack_at < normal_cost;
  }
  return a_prepacked ? trans < normal : trans + pack_at < 0.96 * normal;
}

Status CheckLd(const char* what, size_t ld, size_t need) {
  if (ld < need) {
    return Status::Error("sgemm: leading dimension ", what, " = ", ld, " is less than ", need);
  }
  return Status::Ok();
}

const GemmUkernel& KernelFor(const std::optional<IsaLevel>& isa) {
  return isa ? SelectGemmUkernel(*isa) : SelectGemmUkernel();
}

Expected<EpilogueOps> ResolveEpilogue(const Epilogue& ep, const GemmUkernel& uk, const char* who) {
  EpilogueOps ops;
  switch (ep.activation) {
    case Activation::kNone:
      break;
    case Activation::kRelu:
      ops.min = 0.0f;
      break;
    case Activation::kClip:
      if (!(ep.clip_min <= ep.clip_max)) {
        return Status::Error(who, ": clip bounds are [", ep.clip_min, ", ", ep.clip_max,
                             "]; min must not exceed max");
      }
      ops.min = ep.clip_min;
      ops.max = ep.clip_max;
      break;
    case Activation::kSilu:
      ops.act = uk.silu;
      break;
    case Activation::kHardSwish:
      ops.act = uk.hswish;
      break;
    case Activation::kGelu:
      ops.act = uk.gelu;
      break;
  }
  return ops;
}

namespace {

// Fills everything but the operands from the options; validates the epilogue and C.
Status Prepare(Problem& pb, const GemmUkernel& uk, float* c, size_t ldc, const Options& o) {
  pb.uk = &uk;
  pb.c = c;
  pb.ldc = ldc;
  pb.accumulate = o.accumulate;
  if (pb.m == 0 || pb.n == 0) return Status::Ok();
  if (!c) return Status::Error("sgemm: C is null for a ", pb.m, " x ", pb.n, " product");
  KILN_RETURN_IF_ERROR(CheckLd("ldc", ldc, pb.n));
  const Epilogue& ep = o.epilogue;
  if (ep.bias_kind != BiasKind::kNone && !ep.bias) {
    return Status::Error("sgemm: a bias is requested but the bias pointer is null");
  }
  if (ep.bias_kind == BiasKind::kPerRow) pb.bias_m = ep.bias;
  if (ep.bias_kind == BiasKind::kPerColumn) pb.bias_n = ep.bias;
  auto ops = ResolveEpilogue(ep, uk, "sgemm");
  if (!ops.ok()) return ops.status();
  pb.min = ops->min;
  pb.max = ops->max;
  pb.act = ops->act;
  return Status::Ok();
}

Status SetUnpackedA(Problem& pb, const float* a, size_t lda, bool trans) {
  if (pb.m == 0 || pb.k == 0) return Status::Ok();
  if (!a) return Status::Error("sgemm: A is null for a ", pb.m, " x ", pb.k, " operand");
  KILN_RETURN_IF_ERROR(CheckLd("lda", lda, trans ? pb.m : pb.k));
  pb.a.p = a;
  pb.a.rs = trans ? 1 : lda;
  pb.a.cs = trans ? lda : 1;
  return Status::Ok();
}

Status SetUnpackedB(Problem& pb, const float* b, size_t ldb, bool trans) {
  if (pb.n == 0 || pb.k == 0) return Status::Ok();
  if (!b) return Status::Error("sgemm: B is null for a ", pb.k, " x ", pb.n, " operand");
  KILN_RETURN_IF_ERROR(CheckLd("ldb", ldb, trans ? pb.k : pb.n));
  pb.b.p = b;
  pb.b.rs = trans ? 1 : ldb;
  pb.b.cs = trans ? ldb : 1;
  return Status::Ok();
}

Status CheckPacked(const PackedMatrix& p, bool want_a) {
  if (p.panel_width() == 0) return Status::Error("sgemm: the packed operand is empty (not packed)");
  if (PackedMatrixAccess::IsA(p) != want_a) {
    return Status::Error("sgemm: a packed ", want_a ? "B" : "A", " was passed where a packed ",
                         want_a ? "A" : "B", " is expected");
  }
  if (p.isa() > ActiveIsa()) {
    return Status::Error("sgemm: the operand was packed for ", IsaName(p.isa()),
                         " but this process runs at most ", IsaName(ActiveIsa()));
  }
  return Status::Ok();
}

// A product with one row or one column over a packed operand: a matrix-vector product over its
// panels (panel_gemv.h). bias: one per output; bias0: the other side's single bias value.
PanelGemvArgs PanelGemvFor(const Problem& pb, size_t panel, const float* panels, size_t cols,
                           const float* x, size_t x_stride, size_t y_stride, const float* bias,
                           const float* bias0) {
  PanelGemvArgs g;
  g.cols = cols;
  g.k = pb.k;
  g.panel = panel;
  g.panels = panels;
  g.x = x;
  g.x_stride = x_stride;
  g.y = pb.c;
  g.y_stride = y_stride;
  g.accumulate = pb.accumulate;
  g.bias = bias;
  g.bias0 = bias0 ? bias0[0] : 0.0f;
  g.min = pb.min;
  g.max = pb.max;
  g.act = pb.act;
  g.isa = pb.uk->isa;
  return g;
}

}  // namespace

Status Sgemm(size_t m, size_t n, size_t k, const float* a, size_t lda, const float* b,
             size_t ldb, float* c, size_t ldc, const Options& options) {
  Problem pb;
  pb.m = m;
  pb.n = n;
  pb.k = k;
  const GemmUkernel& uk = KernelFor(options.isa);
  KILN_RETURN_IF_ERROR(Prepare(pb, uk, c, ldc, options));
  if (m == 0 || n == 0) return Status::Ok();
  KILN_RETURN_IF_ERROR(SetUnpackedA(pb, a, lda, options.trans_a));
  KILN_RETURN_IF_ERROR(SetUnpackedB(pb, b, ldb, options.trans_b));
  Run(pb, options.pool, options.blocking, options.orientation);
  return Status::Ok();
}

Status SgemmPackedA(const PackedMatrix& a, size_t n, const float* b, size_t ldb, float* c,
                    size_t ldc, const Options& options) {
  KILN_RETURN_IF_ERROR(CheckPacked(a, /*want_a=*/true));
  Problem pb;
  pb.m = a.rows();
  pb.n = n;
  pb.k = a.cols();
  KILN_RETURN_IF_ERROR(Prepare(pb, SelectGemmUkernel(a.isa()), c, ldc, options));
  if (pb.m == 0 || n == 0) return Status::Ok();
  pb.a.packed = a.data();
  KILN_RETURN_IF_ERROR(SetUnpackedB(pb, b, ldb, options.trans_b));
  if (n == 1 && pb.k > 0) {  // either panel width: the same k-major panels of A's rows
    RunPanelGemv(PanelGemvFor(pb, a.panel_width(), pb.a.packed, pb.m, pb.b.p, pb.b.rs, pb.ldc,
                              pb.bias_m, pb.bias_n),
                 options.pool);
    return Status::Ok();
  }
  // NR-row panels (PackA's n_hint) serve only as the packed B of the transposed product.
  if (a.panel_width() != pb.uk->mr) Transpose(pb);
  Run(pb, options.pool, options.blocking, options.orientation);
  return Status::Ok();
}

Status SgemmPackedB(size_t m, const float* a, size_t lda, const PackedMatrix& b, float* c,
                    size_t ldc, const Options& options) {
  KILN_RETURN_IF_ERROR(CheckPacked(b, /*want_a=*/false));
  Problem pb;
  pb.m = m;
  pb.n = b.cols();
  pb.k = b.rows();
  KILN_RETURN_IF_ERROR(Prepare(pb, SelectGemmUkernel(b.isa()), c, ldc, options));
  if (m == 0 || pb.n == 0) return Status::Ok();
  pb.b.packed = b.data();
  KILN_RETURN_IF_ERROR(SetUnpackedA(pb, a, lda, options.trans_a));
  if (m == 1 && pb.k > 0) {
    RunPanelGemv(PanelGemvFor(pb, b.panel_width(), pb.b.packed, pb.n, pb.a.p, pb.a.cs, 1,
                              pb.bias_n, pb.bias_m),
                 options.pool);
    return Status::Ok();
  }
  Run(pb, options.pool, options.blocking, options.orientation);
  return Status::Ok();
}

}  // namespace kiln::gemm
