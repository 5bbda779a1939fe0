// ONNX ModelProto -> ir::Model. Parsing is protobuf's (schema from Debian's libonnx-dev); this
// file maps ONNX's structures onto kiln's IR, validates everything a hostile file could get wrong
// (dtypes, dims, raw_data sizes, external data locations, names, cycles), and normalizes opset
// differences (axes moved from attributes to inputs, and so on) so ops see one form.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "ir/graph.h"
#include "support/status.h"
#include "support/tensor.h"

namespace kiln::onnx {

// Loads a .onnx file; external data resolves relative to its folder and may not leave it.
Expected<ir::Model> LoadModel(const std::string& path);
// Same from bytes in memory; external data resolves against base_dir ("" forbids it).
Expected<ir::Model> LoadModelFromBytes(std::string_view bytes, const std::string& base_dir);
// A serialized TensorProto file (the ONNX test cases' input_N.pb / output_N.pb).
Expected<Tensor> LoadTensorFile(const std::string& path, std::string* name = nullptr);
// A test case's value file for a value of `type`: a TensorProto, or for a sequence/optional type
// a SequenceProto/OptionalProto (from onnx-data.proto; "unsupported" when kiln was built
// without that schema).
Expected<Tensor> LoadValueFile(const std::string& path, const ir::ValueType& type);

}  // namespace kiln::onnx
