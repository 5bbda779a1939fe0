#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdlib>
#include <string>

#include "refs.h"

namespace kiln::bench {

std::string OnednnCapIsa(OnednnIsa cap) {
  if (std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA")) {
    return "onednn isa cap from its environment";
  }
  if (cap == OnednnIsa::kNone) return "onednn isa uncapped";
  const bool avx2 = cap == OnednnIsa::kAvx2;
  const dnnl_status_t st = dnnl_set_max_cpu_isa(avx2 ? dnnl_cpu_isa_avx2 : dnnl_cpu_isa_sse41);
  if (st != dnnl_success) return "onednn isa cap FAILED (status " + std::to_string(st) + ")";
  return avx2 ? "onednn isa capped at avx2" : "onednn isa capped at sse41";
}

// Debian's oneDNN runs on OpenMP: its thread count is OpenMP's.
void OnednnSetThreads(int threads) { omp_set_num_threads(threads); }

void OnednnSgemm(size_t m, size_t n, size_t k, const float* a, const float* b, float* c) {
  dnnl_sgemm('N', 'N', static_cast<dnnl_dim_t>(m), static_cast<dnnl_dim_t>(n),
             static_cast<dnnl_dim_t>(k), 1.0f, a, static_cast<dnnl_dim_t>(k), b,
             static_cast<dnnl_dim_t>(n), 0.0f, c, static_cast<dnnl_dim_t>(n));
}

std::string OnednnInfo() {
  const dnnl_version_t* v = dnnl_version();
  return "onednn " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + " cpu_runtime=" + std::to_string(v->cpu_runtime);
}

}  // namespace kiln::bench
