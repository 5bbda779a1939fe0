// Direct convolution on NCHW8c, portable scalar: one output column and up to two output channel
// blocks (16 accumulators) at a time. A correctness baseline for KILN_ISA=scalar, not a fast path.
#include "kernels/ukernels/f32_conv.h"

namespace kiln::ukernels {

void f32_conv_nchwc8__scalar(const F32ConvNchwcParams* p) {
  constexpr size_t c = 8;
  // A stem's 1..4 channel planes in_ci_stride apart, or c contiguous channels.
  const size_t cin = p->in_c != 0 ? p->in_c : c;
  const size_t cs = p->in_c != 0 ? p->in_ci_stride : 1;
  for (size_t j = 0; j < p->ow; ++j) {
    const float* in_j = p->input + j * p->in_ow_stride;
    for (size_t ob = 0; ob < p->oc_blocks; ++ob) {
      float acc[c] = {};
      // Partial last blocks: only the real channels (the other weights are zero).
      const size_t nco = ob + 1 == p->oc_blocks && p->oc_last != 0 ? p->oc_last : c;
      for (size_t cb = 0; cb < p->ic_blocks; ++cb) {
        const bool part = cb + 1 == p->ic_blocks && p->in_c == 0 && p->ic_last != 0;
        const size_t nci = part ? p->ic_last : cin;
        for (size_t kh = 0; kh < p->kh; ++kh) {
          for (size_t kw = 0; kw < p->kw; ++kw) {
            const float* x =
                in_j + cb * p->in_cb_stride + kh * p->in_kh_stride + kw * p->in_kw_stride;
            const float* w = p->weights + ob * p->w_ob_stride + cb * p->w_cb_stride +
                             kh * p->w_kh_stride + kw * cin * c;
            for (size_t ci = 0; ci < nci; ++ci) {
              const float xv = x[ci * cs];
              for (size_t co = 0; co < nco; ++co) acc[co] += xv * w[ci * c + co];
            }
          }
        }
      }
      float* out = p->output + ob * p->out_ob_stride + j * c;
      for (size_t co = 0; co < c; ++co) {
        float v = acc[co];
        if (p->accumulate) v += out[co];
        if (p->bias) v += p->bias[ob * c + co];
        v = v < p->min ? p->min : v;
        v = v > p->max ? p->max : v;
        out[co] = v;
      }
    }
  }
}

}  // namespace kiln::ukernels
