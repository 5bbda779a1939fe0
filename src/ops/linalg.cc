#include "ops/families.h"

namespace kiln::ops {

// Not implemented yet: models using these ops are reported as unsupported before they run.
std::span<const OpDef> LinalgOps() { return {}; }

}  // namespace kiln::ops
