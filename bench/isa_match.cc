// The oneDNN cap that matches kiln's KILN_ISA (refs.h); here, apart from ref_onednn.cc, which
// includes no kiln header.
#include "refs.h"
#include "support/cpu.h"

namespace kiln::bench {

std::string OnednnMatchKilnIsa() {
  const CpuInfo& cpu = GetCpuInfo();
  if (cpu.isa == cpu.hardware_isa) return OnednnCapIsa(OnednnIsa::kNone);
  return OnednnCapIsa(cpu.isa == IsaLevel::kAvx2 ? OnednnIsa::kAvx2 : OnednnIsa::kSse41);
}

}  // namespace kiln::bench
