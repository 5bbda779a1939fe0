// Module: what the compiler hands the runtime. A plan of steps (one runtime kernel call each)
// over numbered values, plus the constant and prepacked weight bytes those steps read.
//
// It knows nothing of the IR: a deployed program links the runtime and the kernels only. A
// Module is built by lower/ (in memory) or read from a `.kiln` file (runtime/module_file.h,
// where the weights are an mmap of the file). Once built it is immutable and may be shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "support/cpu.h"
#include "support/dtype.h"
#include "support/status.h"

namespace kiln::runtime {

// Bumped whenever the meaning of a module changes (steps, params, blob layouts).
// 2: channel-blocked depthwise weights are packed per block ([C/c][KH*KW][c]).
inline constexpr uint32_t kModuleFormatVersion = 2;
// Blob offsets are multiples of this, so SIMD kernels read weights in place.
inline constexpr uint64_t kBlobAlignment = 64;

enum class ValueKind : uint8_t {
  kInput = 0,       // bound by the caller at run time
  kConstant = 1,    // data in a blob
  kActivation = 2,  // written by a step; planned in the arena when its shape is known
};

struct ValueInfo {
  std::string name;
  DType dtype = DType::kFloat32;
  bool rank_known = true;
  // -1 where a dim is symbolic (dim_params names it) or unknown.
  std::vector<int64_t> dims;
  std::vector<std::string> dim_params;  // same length as dims; "" for a static dim
  ValueKind kind = ValueKind::kActivation;
  int32_t blob = -1;  // kConstant: row-major data, DTypeSize(dtype) bytes per element
};

// A byte range of the module's weights.
struct Blob {
  uint64_t offset = 0;  // multiple of kBlobAlignment
  uint64_t size = 0;
};

// What lowering decided for a step and its kernel reads back. Named, so a kernel's params can
// grow without a format change.
struct StepParams {
  std::map<std::string, int64_t> ints;
  std::map<std::string, double> floats;
  std::map<std::string, std::vector<int64_t>> int_lists;
  std::map<std::string, std::string> strings;

  Expected<int64_t> Int(const std::string& key) const;
  int64_t IntOr(const std::string& key, int64_t fallback) const;
  Expected<double> Float(const std::string& key) const;
  double FloatOr(const std::string& key, double fallback) const;
  Expected<std::vector<int64_t>> IntList(const std::string& key) const;
  Expected<std::string> String(const std::string& key) const;
  bool operator==(const StepParams&) const = default;
};

struct Step {
  std::string kernel;  // a runtime kernel name (kernel_registry.h)
  std::string name;    // the source node name(s), for profiles and errors
  std::string op;      // the source op type(s), e.g. "Conv+Relu"
  std::vector<int32_t> inputs;  // value ids; -1 for an omitted optional input
  std::vector<int32_t> outputs;
  std::vector<int32_t> blobs;   // prepacked weights and other kernel data
  StepParams params;
  bool operator==(const Step&) const = default;
};

struct Module {
  uint32_t version = kModuleFormatVersion;
  IsaLevel isa = IsaLevel::kScalar;  // the least the prepacked data needs
  std::string producer;              // e.g. "kiln 0.1 from resnet50.onnx"
  std::vector<ValueInfo> values;
  std::vector<int32_t> inputs;   // value ids, in the order Session::Run binds them
  std::vector<int32_t> outputs;  // value ids
  std::vector<Step> steps;       // in execution order
  std::vector<Blob> blobs;

  // The weight bytes: blobs index into [weights, weights + weights_size). `weights_owner`
  // keeps them alive (an owned buffer, or the mmap of a .kiln file).
  const std::byte* weights = nullptr;
  uint64_t weights_size = 0;
  std::shared_ptr<const void> weights_owner;

  std::span<const std::byte> BlobBytes(int32_t blob) const;
  template <class T>
  const T* BlobData(int32_t blob) const {
    return reinterpret_cast<const T*>(BlobBytes(blob).data());
  }
  // Every id in range, every blob inside the weights and aligned, kinds consistent (inputs are
  // kInput, constants have a blob of the right size, every activation has exactly one
  // producing step that runs before its readers). Errors say what is wrong where.
  Status Validate() const;
};

// Builds a module's weight buffer: each blob is copied at the next aligned offset.
class WeightWriter {
 public:
  int32_t Add(Module& module, std::span<const std::byte> bytes);
  // Moves the bytes into `module` (weights, weights_size, weights_owner).
  void Finish(Module& module);

 private:
  std::vector<std::byte> bytes_;
};

}  // namespace kiln::runtime
