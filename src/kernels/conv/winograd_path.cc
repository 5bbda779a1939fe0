// kWinograd: PreparedConv over winograd::PreparedWinograd (NCHW, or NCHWc when block() > 1).
// The 36 packed U matrices live in PreparedConv::packed_ (so that lowering stores them and
// ViewPreparedConv rebuilds them like the GEMM algorithms' packed weights); winograd_ runs over
// the same matrices.
#include "kernels/conv/drivers.h"
#include "kernels/winograd/winograd.h"

namespace kiln::conv {
namespace {

winograd::WinogradConvParams WinogradParams(const ConvParams& p) {
  winograd::WinogradConvParams w;
  w.n = p.n;
  w.c = p.c;
  w.h = p.h;
  w.w = p.w;
  w.pad_top = p.pad_top;
  w.pad_left = p.pad_left;
  w.pad_bottom = p.pad_bottom;
  w.pad_right = p.pad_right;
  return w;
}

}  // namespace

Status PrepareWinograd(const float* weights, PreparedConv* conv) {
  using A = PreparedConvAccess;
  const ConvParams& p = A::params(*conv);
  KILN_ASSIGN_OR_RETURN(
      winograd::PreparedWinograd pw,
      winograd::PreparedWinograd::Prepare(p.m, p.c, weights, A::isa(*conv), A::block(*conv)));
  A::packed(*conv) = pw.packed();
  A::winograd(*conv) = std::make_shared<const winograd::PreparedWinograd>(std::move(pw));
  return Status::Ok();
}

Status ViewWinograd(PreparedConv* conv) {
  using A = PreparedConvAccess;
  const ConvParams& p = A::params(*conv);
  KILN_ASSIGN_OR_RETURN(
      winograd::PreparedWinograd pw,
      winograd::PreparedWinograd::View(p.m, p.c, A::packed(*conv), A::block(*conv)));
  A::winograd(*conv) = std::make_shared<const winograd::PreparedWinograd>(std::move(pw));
  return Status::Ok();
}

size_t WinogradWorkspace(const PreparedConv& conv, size_t threads) {
  const winograd::PreparedWinograd* pw = PreparedConvAccess::winograd(conv);
  return pw ? pw->WorkspaceFloats(WinogradParams(conv.params()), threads) : 0;
}

Status RunWinograd(const PreparedConv& conv, const float* x, float* y, const RunOptions& o,
                   float* workspace) {
  const winograd::PreparedWinograd* pw = PreparedConvAccess::winograd(conv);
  if (!pw) return Status::Error("conv: the winograd layer was not prepared");
  return pw->Run(WinogradParams(conv.params()), x, nullptr, o.epilogue, y, o.pool, workspace);
}

}  // namespace kiln::conv
