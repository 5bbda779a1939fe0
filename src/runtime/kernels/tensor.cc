#include "runtime/kernels/families.h"

namespace kiln::runtime {

// Placeholder until the family lands: no kernels, so every node goes to a reference partition.
std::span<const KernelEntry> TensorKernels() { return {}; }

}  // namespace kiln::runtime
