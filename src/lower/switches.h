// The environment switches of the lowering's optional steps (KILN_LAYOUT, KILN_FUSE_RESIDUAL,
// KILN_FUSE_BN_POOL): each is on unless its variable is set to "0", so a step can be turned off
// to measure what it brings or to rule it out when chasing a wrong result.
#pragma once

#include <cstdlib>
#include <cstring>

namespace kiln::lower {

inline bool SwitchOn(const char* env_name) {
  const char* v = std::getenv(env_name);
  return v == nullptr || std::strcmp(v, "0") != 0;
}

}  // namespace kiln::lower
