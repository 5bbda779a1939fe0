#include <cblas.h>

#include "refs.h"

namespace kiln::bench {

void OpenblasSetThreads(int threads) { openblas_set_num_threads(threads); }

void OpenblasSgemm(size_t m, size_t n, size_t k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a, static_cast<blasint>(k),
              b, static_cast<blasint>(n), 0.0f, c, static_cast<blasint>(n));
}

std::string OpenblasInfo() { return std::string("openblas ") + openblas_get_config(); }

}  // namespace kiln::bench
