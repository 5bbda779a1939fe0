#include <blis.h>

#include "refs.h"

namespace kiln::bench {

void BlisSetThreads(int threads) { bli_thread_set_num_threads(threads); }

void BlisSgemm(size_t m, size_t n, size_t k, const float* a, const float* b, float* c) {
  float one = 1.0f, zero = 0.0f;
  bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, static_cast<dim_t>(m), static_cast<dim_t>(n),
            static_cast<dim_t>(k), &one, const_cast<float*>(a), static_cast<inc_t>(k), 1,
            const_cast<float*>(b), static_cast<inc_t>(n), 1, &zero, c, static_cast<inc_t>(n), 1);
}

std::string BlisInfo() {
  return std::string("blis ") + bli_info_get_version_str() + " " +
         bli_arch_string(bli_arch_query_id());
}

}  // namespace kiln::bench
