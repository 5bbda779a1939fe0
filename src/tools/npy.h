// NumPy .npy files in and out (format versions 1-3, little-endian, C order), the CLI's tensor
// exchange format.
#pragma once

#include <string>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::tools {

Expected<Tensor> ReadNpy(const std::string& path);
Status WriteNpy(const std::string& path, const Tensor& t);

}  // namespace kiln::tools
