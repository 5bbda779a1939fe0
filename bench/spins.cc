// ShortenLibrarySpins (refs.h): the reference libraries' idle spins, shortened before they load.
#include <unistd.h>

#include <cstdlib>

#include "refs.h"

namespace kiln::bench {

void ShortenLibrarySpins(char** argv) {
  if (std::getenv("KILN_BENCH_REEXEC")) return;
  setenv("KILN_BENCH_REEXEC", "1", 1);
  setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
  setenv("GOMP_SPINCOUNT", "10000", 0);
  execv("/proc/self/exe", argv);  // returns only on failure: run on with the spins as they are
}

}  // namespace kiln::bench
