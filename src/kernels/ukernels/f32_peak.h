// Declarations of the f32 FMA-throughput microkernels: the machine's limit, measured on the spot so
// that kernels and layers can be reported as a fraction of it (BENCHMARKING.md, rule 3). The table
// in kernels/peak/peak.h lists them; nothing else should call them by name.
//
// The microkernel contract (DESIGN.md): no allocation, no OS calls, no globals, no CPU queries.
// The driver times the calls.
#pragma once

#include <cstddef>

namespace kiln::ukernels {

// Runs `iters` rounds of independent multiply-add chains (enough chains to keep two FMA pipes of
// latency 4 busy) and stores one lane-sum per chain group into sink[0] so that nothing is elided.
// Each kernel's flops per round are in the table (lanes * chains * 2).
using F32FmaPeakFn = void (*)(size_t iters, float* sink);

void f32_fma_peak__scalar(size_t iters, float* sink);
void f32_fma_peak__avx2_fma(size_t iters, float* sink);
void f32_fma_peak__avx512f(size_t iters, float* sink);

}  // namespace kiln::ukernels
