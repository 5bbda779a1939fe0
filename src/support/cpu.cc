#include "support/cpu.h"

#include <cpuinfo.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace kiln {

const char* IsaName(IsaLevel isa) {
  switch (isa) {
    case IsaLevel::kScalar:
      return "scalar";
    case IsaLevel::kAvx2:
      return "avx2";
    case IsaLevel::kAvx512:
      return "avx512";
  }
  return "unknown";
}

Expected<IsaLevel> ParseIsa(std::string_view name) {
  if (name == "scalar") return IsaLevel::kScalar;
  if (name == "avx2") return IsaLevel::kAvx2;
  if (name == "avx512") return IsaLevel::kAvx512;
  return Status::Error("unknown ISA level '", name, "' (expected scalar, avx2 or avx512)");
}

namespace {

CpuInfo Detect() {
  CpuInfo info;
  if (!cpuinfo_initialize()) {
    info.env_status = Status::Error("cpuinfo failed to initialize; using scalar kernels");
    std::fprintf(stderr, "kiln: %s\n", info.env_status.message().c_str());
    return info;
  }
  // cpuinfo checks OS support (XSAVE state) as well as the CPUID bits.
  if (cpuinfo_has_x86_avx2() && cpuinfo_has_x86_fma3()) info.hardware_isa = IsaLevel::kAvx2;
  if (info.hardware_isa == IsaLevel::kAvx2 && cpuinfo_has_x86_avx512f() &&
      cpuinfo_has_x86_avx512bw() && cpuinfo_has_x86_avx512dq() && cpuinfo_has_x86_avx512vl()) {
    info.hardware_isa = IsaLevel::kAvx512;
  }
  info.isa = info.hardware_isa;
  if (const cpuinfo_cache* c = cpuinfo_get_l1d_cache(0); c && c->size) info.l1d_bytes = c->size;
  if (const cpuinfo_cache* c = cpuinfo_get_l2_cache(0); c && c->size) info.l2_bytes = c->size;
  if (const cpuinfo_cache* c = cpuinfo_get_l3_cache(0); c && c->size) info.l3_bytes = c->size;
  info.cores = cpuinfo_get_cores_count() ? cpuinfo_get_cores_count() : 1;
  // The family from cpuinfo's copy of CPUID leaf 1 (base family + extended family): this
  // cpuinfo release predates Zen 4 and names no uarch for it.
  if (const cpuinfo_core* core = cpuinfo_get_core(0);
      core && core->vendor == cpuinfo_vendor_amd && info.hardware_isa >= IsaLevel::kAvx2) {
    constexpr uint32_t kZen34Family = 0x19, kZen5Family = 0x1A;
    const uint32_t family = ((core->cpuid >> 8) & 0xF) + ((core->cpuid >> 20) & 0xFF);
    const bool avx512 = info.hardware_isa == IsaLevel::kAvx512;
    if (family == kZen34Family) info.uarch = avx512 ? Uarch::kZen4 : Uarch::kZen3;
    if (family == kZen5Family && avx512) info.uarch = Uarch::kZen5;
  }
  if (const cpuinfo_core* core = cpuinfo_get_core(0);
      core && core->vendor == cpuinfo_vendor_intel && info.hardware_isa == IsaLevel::kAvx512) {
    info.uarch = Uarch::kIntelAvx512;
  }

  if (const char* env = std::getenv("KILN_ISA"); env && *env) {
    Expected<IsaLevel> cap = ParseIsa(env);
    if (!cap.ok()) {
      info.env_status = cap.status().WithContext("KILN_ISA: ");
      std::fprintf(stderr, "kiln: %s; ignored\n", info.env_status.message().c_str());
    } else if (*cap < info.isa) {
      info.isa = *cap;
    }
  }
  return info;
}

}  // namespace

const CpuInfo& GetCpuInfo() {
  static const CpuInfo info = Detect();
  return info;
}

}  // namespace kiln
