#include "runtime/module.h"

#include <cstring>
#include <new>

#include "support/huge_pages.h"
#include "support/tensor.h"

namespace kiln::runtime {
namespace {

template <class Map>
auto Lookup(const Map& map, const std::string& key, const char* kind)
    -> Expected<typename Map::mapped_type> {
  auto it = map.find(key);
  if (it == map.end()) return Status::Error("step parameter '", key, "' (", kind, ") is missing");
  return it->second;
}

}  // namespace

Expected<int64_t> StepParams::Int(const std::string& key) const { return Lookup(ints, key, "int"); }
int64_t StepParams::IntOr(const std::string& key, int64_t fallback) const {
  auto it = ints.find(key);
  return it == ints.end() ? fallback : it->second;
}
Expected<double> StepParams::Float(const std::string& key) const {
  return Lookup(floats, key, "float");
}
double StepParams::FloatOr(const std::string& key, double fallback) const {
  auto it = floats.find(key);
  return it == floats.end() ? fallback : it->second;
}
Expected<std::vector<int64_t>> StepParams::IntList(const std::string& key) const {
  return Lookup(int_lists, key, "int list");
}
Expected<std::string> StepParams::String(const std::string& key) const {
  return Lookup(strings, key, "string");
}

std::span<const std::byte> Module::BlobBytes(int32_t blob) const {
  const Blob& b = blobs[static_cast<size_t>(blob)];
  return {weights + b.offset, static_cast<size_t>(b.size)};
}

Status Module::Validate() const {
  if (version != kModuleFormatVersion)
    return Status::Error("module format version ", version, " (this runtime reads version ",
                         kModuleFormatVersion, ")");
  if (weights_size > 0 && weights == nullptr) return Status::Error("module weights are missing");
  for (size_t i = 0; i < blobs.size(); ++i) {
    const Blob& b = blobs[i];
    if (b.offset % kBlobAlignment != 0)
      return Status::Error("blob ", i, " is not aligned to ", kBlobAlignment, " bytes");
    if (b.offset > weights_size || b.size > weights_size - b.offset)
      return Status::Error("blob ", i, " (offset ", b.offset, ", ", b.size,
                           " bytes) lies outside the module's ", weights_size, " weight bytes");
  }
  const auto n_values = static_cast<int64_t>(values.size());
  auto valid_id = [&](int32_t id) { return id >= 0 && id < n_values; };
  for (size_t i = 0; i < values.size(); ++i) {
    const ValueInfo& v = values[i];
    if (v.dtype == DType::kUndefined || !IsKnownValueDType(static_cast<int32_t>(v.dtype)))
      return Status::Error("value '", v.name, "' has no valid element type");
    if (v.rank_known && v.dim_params.size() != v.dims.size())
      return Status::Error("value '", v.name, "': ", v.dims.size(), " dims but ",
                           v.dim_params.size(), " dim names");
    for (int64_t d : v.dims)
      if (d < -1) return Status::Error("value '", v.name, "' has a negative dim");
    if (v.kind == ValueKind::kConstant) {
      if (v.blob < 0 || static_cast<size_t>(v.blob) >= blobs.size())
        return Status::Error("constant '", v.name, "' has no blob");
      if (!v.rank_known) return Status::Error("constant '", v.name, "' has no shape");
      auto numel = CheckedNumel(v.dims, "constant '" + v.name + "'");
      if (!numel.ok()) return numel.status();
      if (v.dtype == DType::kString)
        return Status::Error("constant '", v.name, "' is a string tensor (not storable)");
      if (IsContainer(v.dtype))
        return Status::Error("constant '", v.name, "' is a ", DTypeName(v.dtype),
                             " (only tensors are storable)");
      if (static_cast<uint64_t>(*numel) * DTypeSize(v.dtype) != blobs[v.blob].size)
        return Status::Error("constant '", v.name, "' needs ", *numel * DTypeSize(v.dtype),
                             " bytes but its blob has ", blobs[v.blob].size);
    }
  }
  std::vector<int> produced(values.size(), 0);
  for (int32_t id : inputs) {
    if (!valid_id(id) || values[id].kind != ValueKind::kInput)
      return Status::Error("module input ", id, " is not an input value");
  }
  for (size_t s = 0; s < steps.size(); ++s) {
    const Step& step = steps[s];
    for (int32_t id : step.inputs) {
      if (id == -1) continue;
      if (!valid_id(id)) return Status::Error("step ", s, " ('", step.name, "') reads value ", id, " which does not exist");
      if (values[id].kind == ValueKind::kActivation && produced[id] == 0)
        return Status::Error("step ", s, " ('", step.name, "') reads '", values[id].name,
                             "' before any step writes it");
    }
    for (int32_t id : step.outputs) {
      if (!valid_id(id)) return Status::Error("step ", s, " ('", step.name, "') writes value ", id, " which does not exist");
      if (values[id].kind != ValueKind::kActivation)
        return Status::Error("step ", s, " ('", step.name, "') writes '", values[id].name,
                             "', which is not an activation");
      if (produced[id]++ != 0)
        return Status::Error("value '", values[id].name, "' is written by two steps");
    }
    for (int32_t b : step.blobs)
      if (b < 0 || static_cast<size_t>(b) >= blobs.size())
        return Status::Error("step ", s, " ('", step.name, "') uses blob ", b, " which does not exist");
  }
  for (int32_t id : outputs) {
    if (!valid_id(id)) return Status::Error("module output ", id, " does not exist");
    if (values[id].kind == ValueKind::kActivation && produced[id] == 0)
      return Status::Error("module output '", values[id].name, "' is never written");
  }
  return Status::Ok();
}

int32_t WeightWriter::Add(Module& module, std::span<const std::byte> bytes) {
  const uint64_t offset = (bytes_.size() + kBlobAlignment - 1) / kBlobAlignment * kBlobAlignment;
  bytes_.resize(offset + bytes.size());
  if (!bytes.empty()) std::memcpy(bytes_.data() + offset, bytes.data(), bytes.size());
  module.blobs.push_back({offset, bytes.size()});
  return static_cast<int32_t>(module.blobs.size() - 1);
}

void WeightWriter::Finish(Module& module) {
  const size_t size = bytes_.size();
  // 64-byte aligned storage (the vector's own buffer only guarantees 16), on huge pages when
  // large (support/huge_pages.h: weights are streamed from DRAM once per run).
  HugePageBuffer buffer = AllocateHugePageBacked(size, kBlobAlignment);
  if (!buffer) throw std::bad_alloc();
  std::byte* data = buffer.get();
  if (size > 0) std::memcpy(data, bytes_.data(), size);
  std::shared_ptr<const std::byte> owner(std::move(buffer));
  module.weights = data;
  module.weights_size = size;
  module.weights_owner = std::move(owner);
  std::vector<std::byte>().swap(bytes_);
}

}  // namespace kiln::runtime
