#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "refs.h"

namespace kiln::bench {

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
