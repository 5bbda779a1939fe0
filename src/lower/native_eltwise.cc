#include "lower/native.h"

namespace kiln::lower {

// Placeholder until the family lands: claims nothing, so these nodes run in reference partitions.
std::span<const NativeLowering> EltwiseLowerings() { return {}; }

}  // namespace kiln::lower
