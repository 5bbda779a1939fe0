// CPU features and cache sizes, read once from cpuinfo. The ISA level that kernels dispatch on is
// chosen here, once, and can be capped with KILN_ISA=scalar|avx2|avx512 so that one machine can
// test every level.
#pragma once

#include <cstddef>
#include <string_view>

#include "support/status.h"

namespace kiln {

// Ordered: a level implies every level below it.
enum class IsaLevel : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

const char* IsaName(IsaLevel isa);
Expected<IsaLevel> ParseIsa(std::string_view name);

// Microarchitectures where a kernel's measured tuning differs from the default one.
enum class Uarch {
  kOther,
  kZen3,  // AMD family 0x19 without AVX-512 (32 KiB L1d)
  kZen4,  // AMD family 0x19 with AVX-512: each 512-bit FMA runs as two 256-bit halves
  kZen5,  // AMD family 0x1A: two full-width 512-bit FMA pipes
  // Intel with AVX-512. Tuned on a Sapphire Rapids-class Xeon (two 512-bit FMA ports, 48 KiB
  // L1d, 2 MiB L2), the only Intel part measured; a VM's model number cannot be trusted to
  // tell the generations apart.
  kIntelAvx512,
};

struct CpuInfo {
  IsaLevel hardware_isa = IsaLevel::kScalar;  // the best level the CPU and OS support
  IsaLevel isa = IsaLevel::kScalar;           // hardware_isa capped by KILN_ISA
  // Bad KILN_ISA values are reported here (and on stderr once) and otherwise ignored.
  Status env_status;
  // Per-core data caches and the shared last level, in bytes (conservative defaults when unknown).
  size_t l1d_bytes = 32 * 1024;
  size_t l2_bytes = 512 * 1024;
  size_t l3_bytes = 8 * 1024 * 1024;
  size_t cores = 1;
  Uarch uarch = Uarch::kOther;
};

// Computed on first call (thread-safe), then constant for the life of the process.
const CpuInfo& GetCpuInfo();

// The level kernels use: GetCpuInfo().isa.
inline IsaLevel ActiveIsa() { return GetCpuInfo().isa; }

}  // namespace kiln
