// TensorProto -> Tensor, with every size checked before a byte is copied.
#pragma once

#include <string>

#include "onnx.pb.h"
#include "support/status.h"
#include "support/tensor.h"

namespace kiln::onnx {

// base_dir: the folder external data must stay inside ("" forbids external data).
Expected<Tensor> TensorFromProto(const ::onnx::TensorProto& proto, const std::string& base_dir);

}  // namespace kiln::onnx
