#include "frontend/onnx/importer.h"

namespace kiln::onnx {
Expected<ir::Model> LoadModel(const std::string& path) { return Status::Error("not yet"); }
Expected<ir::Model> LoadModelFromBytes(std::string_view, const std::string&) { return Status::Error("not yet"); }
Expected<Tensor> LoadTensorFile(const std::string&, std::string*) { return Status::Error("not yet"); }
}  // namespace kiln::onnx
