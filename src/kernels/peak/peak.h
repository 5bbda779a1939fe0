// The machine's f32 FMA peak, measured on the spot with the ISA's own microkernel, so that
// kernels and layers can be reported as a fraction of what the core can do (BENCHMARKING.md,
// rule 3). A fall in the figure between two measurements says the machine, not the code, slowed.
#pragma once

#include <cstddef>
#include <span>

#include "kernels/ukernels/f32_peak.h"
#include "support/cpu.h"

namespace kiln::peak {

struct PeakUkernel {
  const char* name;
  IsaLevel isa;
  double flops_per_iter;
  ukernels::F32FmaPeakFn fn;
};

// Rows from the oldest ISA to the newest.
std::span<const PeakUkernel> PeakUkernels();

// The newest row whose ISA is at most `cap` (and at most ActiveIsa()).
const PeakUkernel& SelectPeakUkernel(IsaLevel cap);
inline const PeakUkernel& SelectPeakUkernel() { return SelectPeakUkernel(ActiveIsa()); }

struct PeakResult {
  double gflops = 0;        // one core, the best short window seen
  const char* kernel = "";  // the microkernel that reached it
};

// Runs the selected microkernel on the calling thread for about `seconds` in short windows and
// keeps the best window's rate: another process taking the core for a moment lowers some windows,
// not the figure. Multiply by the thread count for a machine-wide peak (cores are alike here).
PeakResult MeasureF32Peak(double seconds = 0.2, IsaLevel cap = ActiveIsa());

}  // namespace kiln::peak
