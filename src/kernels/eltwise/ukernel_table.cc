#include "kernels/eltwise/ukernel_table.h"

#include <algorithm>

#include "kernels/ukernel_select.h"

namespace kiln::eltwise {
namespace {

using namespace ukernels;  // NOLINT: the tables name every kernel

constexpr BinaryUkernel kBinary[] = {
    // name, isa, op, vv, vc, rvc
    {"f32_vbinary_add__scalar", IsaLevel::kScalar, BinaryOp::kAdd, f32_vbinary_add__scalar,
     f32_vbinaryc_add__scalar, f32_vbinaryc_add__scalar},
    {"f32_vbinary_add__avx2", IsaLevel::kAvx2, BinaryOp::kAdd, f32_vbinary_add__avx2,
     f32_vbinaryc_add__avx2, f32_vbinaryc_add__avx2},
    {"f32_vbinary_add__avx512", IsaLevel::kAvx512, BinaryOp::kAdd, f32_vbinary_add__avx512,
     f32_vbinaryc_add__avx512, f32_vbinaryc_add__avx512},
    {"f32_vbinary_sub__scalar", IsaLevel::kScalar, BinaryOp::kSub, f32_vbinary_sub__scalar,
     f32_vbinaryc_sub__scalar, f32_vrbinaryc_sub__scalar},
    {"f32_vbinary_sub__avx2", IsaLevel::kAvx2, BinaryOp::kSub, f32_vbinary_sub__avx2,
     f32_vbinaryc_sub__avx2, f32_vrbinaryc_sub__avx2},
    {"f32_vbinary_sub__avx512", IsaLevel::kAvx512, BinaryOp::kSub, f32_vbinary_sub__avx512,
     f32_vbinaryc_sub__avx512, f32_vrbinaryc_sub__avx512},
    {"f32_vbinary_mul__scalar", IsaLevel::kScalar, BinaryOp::kMul, f32_vbinary_mul__scalar,
     f32_vbinaryc_mul__scalar, f32_vbinaryc_mul__scalar},
    {"f32_vbinary_mul__avx2", IsaLevel::kAvx2, BinaryOp::kMul, f32_vbinary_mul__avx2,
     f32_vbinaryc_mul__avx2, f32_vbinaryc_mul__avx2},
    {"f32_vbinary_mul__avx512", IsaLevel::kAvx512, BinaryOp::kMul, f32_vbinary_mul__avx512,
     f32_vbinaryc_mul__avx512, f32_vbinaryc_mul__avx512},
    {"f32_vbinary_div__scalar", IsaLevel::kScalar, BinaryOp::kDiv, f32_vbinary_div__scalar,
     f32_vbinaryc_div__scalar, f32_vrbinaryc_div__scalar},
    {"f32_vbinary_div__avx2", IsaLevel::kAvx2, BinaryOp::kDiv, f32_vbinary_div__avx2,
     f32_vbinaryc_div__avx2, f32_vrbinaryc_div__avx2},
    {"f32_vbinary_div__avx512", IsaLevel::kAvx512, BinaryOp::kDiv, f32_vbinary_div__avx512,
     f32_vbinaryc_div__avx512, f32_vrbinaryc_div__avx512},
    {"f32_vbinary_max__scalar", IsaLevel::kScalar, BinaryOp::kMax, f32_vbinary_max__scalar,
     f32_vbinaryc_max__scalar, f32_vbinaryc_max__scalar},
    {"f32_vbinary_max__avx2", IsaLevel::kAvx2, BinaryOp::kMax, f32_vbinary_max__avx2,
     f32_vbinaryc_max__avx2, f32_vbinaryc_max__avx2},
    {"f32_vbinary_max__avx512", IsaLevel::kAvx512, BinaryOp::kMax, f32_vbinary_max__avx512,
     f32_vbinaryc_max__avx512, f32_vbinaryc_max__avx512},
    {"f32_vbinary_min__scalar", IsaLevel::kScalar, BinaryOp::kMin, f32_vbinary_min__scalar,
     f32_vbinaryc_min__scalar, f32_vbinaryc_min__scalar},
    {"f32_vbinary_min__avx2", IsaLevel::kAvx2, BinaryOp::kMin, f32_vbinary_min__avx2,
     f32_vbinaryc_min__avx2, f32_vbinaryc_min__avx2},
    {"f32_vbinary_min__avx512", IsaLevel::kAvx512, BinaryOp::kMin, f32_vbinary_min__avx512,
     f32_vbinaryc_min__avx512, f32_vbinaryc_min__avx512},
};

constexpr UnaryUkernel kUnary[] = {
    // name, isa, op, fn
    {"f32_vrelu__scalar", IsaLevel::kScalar, UnaryOp::kRelu, f32_vrelu__scalar},
    {"f32_vrelu__avx2", IsaLevel::kAvx2, UnaryOp::kRelu, f32_vrelu__avx2},
    {"f32_vrelu__avx512", IsaLevel::kAvx512, UnaryOp::kRelu, f32_vrelu__avx512},
    {"f32_vclip__scalar", IsaLevel::kScalar, UnaryOp::kClip, f32_vclip__scalar},
    {"f32_vclip__avx2", IsaLevel::kAvx2, UnaryOp::kClip, f32_vclip__avx2},
    {"f32_vclip__avx512", IsaLevel::kAvx512, UnaryOp::kClip, f32_vclip__avx512},
    {"f32_vsigmoid__scalar", IsaLevel::kScalar, UnaryOp::kSigmoid, f32_vsigmoid__scalar},
    {"f32_vsigmoid__avx2", IsaLevel::kAvx2, UnaryOp::kSigmoid, f32_vsigmoid__avx2},
    {"f32_vsigmoid__avx512", IsaLevel::kAvx512, UnaryOp::kSigmoid, f32_vsigmoid__avx512},
    {"f32_vtanh__scalar", IsaLevel::kScalar, UnaryOp::kTanh, f32_vtanh__scalar},
    {"f32_vtanh__avx2", IsaLevel::kAvx2, UnaryOp::kTanh, f32_vtanh__avx2},
    {"f32_vtanh__avx512", IsaLevel::kAvx512, UnaryOp::kTanh, f32_vtanh__avx512},
    {"f32_vsilu__scalar", IsaLevel::kScalar, UnaryOp::kSilu, f32_vsilu__scalar},
    {"f32_vsilu__avx2", IsaLevel::kAvx2, UnaryOp::kSilu, f32_vsilu__avx2},
    {"f32_vsilu__avx512", IsaLevel::kAvx512, UnaryOp::kSilu, f32_vsilu__avx512},
    {"f32_vhswish__scalar", IsaLevel::kScalar, UnaryOp::kHardSwish, f32_vhswish__scalar},
    {"f32_vhswish__avx2", IsaLevel::kAvx2, UnaryOp::kHardSwish, f32_vhswish__avx2},
    {"f32_vhswish__avx512", IsaLevel::kAvx512, UnaryOp::kHardSwish, f32_vhswish__avx512},
    {"f32_vhsigmoid__scalar", IsaLevel::kScalar, UnaryOp::kHardSigmoid, f32_vhsigmoid__scalar},
    {"f32_vhsigmoid__avx2", IsaLevel::kAvx2, UnaryOp::kHardSigmoid, f32_vhsigmoid__avx2},
    {"f32_vhsigmoid__avx512", IsaLevel::kAvx512, UnaryOp::kHardSigmoid, f32_vhsigmoid__avx512},
    {"f32_vgelu__scalar", IsaLevel::kScalar, UnaryOp::kGelu, f32_vgelu__scalar},
    {"f32_vgelu__avx2", IsaLevel::kAvx2, UnaryOp::kGelu, f32_vgelu__avx2},
    {"f32_vgelu__avx512", IsaLevel::kAvx512, UnaryOp::kGelu, f32_vgelu__avx512},
    {"f32_vexp__scalar", IsaLevel::kScalar, UnaryOp::kExp, f32_vexp__scalar},
    {"f32_vexp__avx2", IsaLevel::kAvx2, UnaryOp::kExp, f32_vexp__avx2},
    {"f32_vexp__avx512", IsaLevel::kAvx512, UnaryOp::kExp, f32_vexp__avx512},
    {"f32_vlrelu__scalar", IsaLevel::kScalar, UnaryOp::kLeakyRelu, f32_vlrelu__scalar},
    {"f32_vlrelu__avx2", IsaLevel::kAvx2, UnaryOp::kLeakyRelu, f32_vlrelu__avx2},
    {"f32_vlrelu__avx512", IsaLevel::kAvx512, UnaryOp::kLeakyRelu, f32_vlrelu__avx512},
};

// Each op's rows are contiguous and go oldest ISA first, starting at scalar.
template <class Row, size_t N>
constexpr bool OpRowsAreOrdered(const Row (&rows)[N]) {
  for (size_t i = 0; i < N; ++i) {
    const bool first_of_op = i == 0 || rows[i].op != rows[i - 1].op;
    if (first_of_op && rows[i].isa != IsaLevel::kScalar) return false;
    if (!first_of_op && rows[i].isa <= rows[i - 1].isa) return false;
  }
  return true;
}
static_assert(OpRowsAreOrdered(kBinary), "binary rows: per op, oldest ISA first, from scalar");
static_assert(OpRowsAreOrdered(kUnary), "unary rows: per op, oldest ISA first, from scalar");
static_assert(std::size(kBinary) == 3 * kBinaryOpCount, "every binary op at every ISA");
static_assert(std::size(kUnary) == 3 * kUnaryOpCount, "every unary op at every ISA");

constexpr ChannelScaleUkernel kChannelScale[] = {
    {"f32_vchannelscale_nchwc__scalar", IsaLevel::kScalar, f32_vchannelscale_nchwc__scalar},
    {"f32_vchannelscale_nchwc__avx2", IsaLevel::kAvx2, f32_vchannelscale_nchwc__avx2},
    {"f32_vchannelscale_nchwc__avx512", IsaLevel::kAvx512, f32_vchannelscale_nchwc__avx512},
};
static_assert(kernels::IsaRowsAreOrdered(kChannelScale),
              "rows go oldest ISA first, and start at scalar");

template <class Row, class Op>
const Row& Select(std::span<const Row> rows, Op op, IsaLevel cap) {
  cap = std::min(cap, ActiveIsa());
  const Row* best = nullptr;
  for (const Row& row : rows) {
    if (row.op == op && (best == nullptr || row.isa <= cap)) best = &row;
  }
  return *best;  // the static_asserts above guarantee a scalar row per op
}

}  // namespace

std::span<const BinaryUkernel> BinaryUkernels() { return kBinary; }
std::span<const UnaryUkernel> UnaryUkernels() { return kUnary; }

const BinaryUkernel& SelectBinaryUkernel(BinaryOp op, IsaLevel cap) {
  return Select(BinaryUkernels(), op, cap);
}
const UnaryUkernel& SelectUnaryUkernel(UnaryOp op, IsaLevel cap) {
  return Select(UnaryUkernels(), op, cap);
}
const ChannelScaleUkernel& SelectChannelScaleUkernel(IsaLevel cap) {
  return kernels::SelectByIsa<ChannelScaleUkernel>(kChannelScale, cap);
}

}  // namespace kiln::eltwise
