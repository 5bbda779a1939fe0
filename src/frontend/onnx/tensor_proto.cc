#include "frontend/onnx/tensor_proto.h"

#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace kiln::onnx {
namespace {

namespace fs = std::filesystem;

// Resolves an external-data location inside base_dir; anything that could leave it (an absolute
// path, "..", a symlink pointing out) is refused.
Expected<std::string> ResolveExternalPath(const std::string& location, const std::string& base_dir,
                                          const std::string& what) {
  if (base_dir.empty())
    return Status::Error(what, ": external data '", location,
                         "' cannot be used by a model loaded from memory");
  fs::path rel(location);
  if (location.empty() || rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    return Status::Error(what, ": external data location '", location,
                         "' must be a relative path inside the model's folder");
  for (const auto& part : rel)
    if (part == "..")
      return Status::Error(what, ": external data location '", location,
                           "' may not contain '..'");
  std::error_code ec;
  fs::path base = fs::canonical(base_dir, ec);
  if (ec) return Status::Error(what, ": model folder '", base_dir, "' is not accessible");
  fs::path full = fs::canonical(base / rel, ec);
  if (ec) return Status::Error(what, ": external data file '", location, "' does not exist");
  auto [b_end, f_it] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (b_end != base.end())
    return Status::Error(what, ": external data file '", location,
                         "' resolves outside the model's folder");
  return full.string();
}

Status ReadExternal(const ::onnx::TensorProto& p, const std::string& base_dir, size_t nbytes,
                    void* dst) {
  const std::string what = StrCat("initializer '", p.name(), "'");
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (const std::exception&) {
      return Status::Error(what, ": external data '", kv.key(), "' is not a number: '", kv.value(),
                           "'");
    }
  }
  if (offset < 0 || length < -1)
    return Status::Error(what, ": negative external data offset or length");
  if (length != -1 && static_cast<size_t>(length) != nbytes)
    return Status::Error(what, ": external data length ", length, " does not match ", nbytes,
                         " bytes of the tensor's dims and dtype");
  KILN_ASSIGN_OR_RETURN(std::string path, ResolveExternalPath(location, base_dir, what));
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return Status::Error(what, ": external data '", location, "' is not a regular file");
  if (static_cast<uint64_t>(offset) + nbytes > static_cast<uint64_t>(st.st_size))
    return Status::Error(what, ": external data [", offset, ", ", offset + int64_t(nbytes),
                         ") runs past the end of '", location, "' (", st.st_size, " bytes)");
  std::ifstream in(path, std::ios::binary);
  in.seekg(offset);
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(nbytes));
  if (!in) return Status::Error(what, ": reading external data '", location, "' failed");
  return Status::Ok();
}

template <class Field>
Status CheckCount(const Field& field, int64_t expected, const std::string& what,
                  const char* field_name) {
  if (static_cast<int64_t>(field.size()) != expected)
    return Status::Error(what, ": ", field_name, " holds ", field.size(), " values but dims say ",
                         expected);
  return Status::Ok();
}

}  // namespace

Expected<Tensor> TensorFromProto(const ::onnx::TensorProto& p, const std::string& base_dir) {
  const std::string what = StrCat("tensor '", p.name(), "'");
  if (!IsKnownDType(p.data_type()))
    return Status::Error("unsupported element type ", p.data_type(), " in ", what);
  const DType dtype = static_cast<DType>(p.data_type());
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Make(dtype, dims, what));
  const int64_t n = t.numel();

  if (dtype == DType::kString) {
    KILN_RETURN_IF_ERROR(CheckCount(p.string_data(), n, what, "string_data"));
    for (int64_t i = 0; i < n; ++i) t.strings()[i] = p.string_data(static_cast<int>(i));
    return t;
  }
  const size_t nbytes = t.nbytes();
  if (p.data_location() == ::onnx::TensorProto::EXTERNAL) {
    KILN_RETURN_IF_ERROR(ReadExternal(p, base_dir, nbytes, t.raw()));
    if (dtype == DType::kBool) {
      auto* b = static_cast<uint8_t*>(t.raw());
      for (int64_t i = 0; i < n; ++i) b[i] = b[i] != 0;
    }
    return t;
  }
  if (p.has_raw_data()) {
    if (p.raw_data().size() != nbytes)
      return Status::Error(what, ": raw_data has ", p.raw_data().size(), " bytes but ",
                           DescribeTensor(t), " needs ", nbytes);
    if (nbytes) std::memcpy(t.raw(), p.raw_data().data(), nbytes);
    if (dtype == DType::kBool) {  // any non-zero byte is true; keep bools 0/1 for the kernels
      auto* b = static_cast<uint8_t*>(t.raw());
      for (int64_t i = 0; i < n; ++i) b[i] = b[i] != 0;
    }
    return t;
  }
  switch (dtype) {
    case DType::kFloat32:
      KILN_RETURN_IF_ERROR(CheckCount(p.float_data(), n, what, "float_data"));
      std::copy(p.float_data().begin(), p.float_data().end(), t.data<float>());
      break;
    case DType::kFloat64:
      KILN_RETURN_IF_ERROR(CheckCount(p.double_data(), n, what, "double_data"));
      std::copy(p.double_data().begin(), p.double_data().end(), t.data<double>());
      break;
    case DType::kInt64:
      KILN_RETURN_IF_ERROR(CheckCount(p.int64_data(), n, what, "int64_data"));
      std::copy(p.int64_data().begin(), p.int64_data().end(), t.data<int64_t>());
      break;
    case DType::kUInt32: case DType::kUInt64:
      KILN_RETURN_IF_ERROR(CheckCount(p.uint64_data(), n, what, "uint64_data"));
      for (int64_t i = 0; i < n; ++i) {
        if (dtype == DType::kUInt32) t.data<uint32_t>()[i] = static_cast<uint32_t>(p.uint64_data(i));
        else t.data<uint64_t>()[i] = p.uint64_data(i);
      }
      break;
    default: {
      // int32_data carries every type of 32 bits or fewer, 16-bit floats as their bit patterns.
      KILN_RETURN_IF_ERROR(CheckCount(p.int32_data(), n, what, "int32_data"));
      for (int64_t i = 0; i < n; ++i) {
        const int32_t v = p.int32_data(static_cast<int>(i));
        switch (dtype) {
          case DType::kInt32: t.data<int32_t>()[i] = v; break;
          case DType::kInt16: t.data<int16_t>()[i] = static_cast<int16_t>(v); break;
          case DType::kInt8: t.data<int8_t>()[i] = static_cast<int8_t>(v); break;
          case DType::kUInt16: case DType::kFloat16: case DType::kBFloat16:
            t.data<uint16_t>()[i] = static_cast<uint16_t>(v);
            break;
          case DType::kUInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
          case DType::kBool: t.data<bool>()[i] = v != 0; break;
          default: return Status::Error(what, ": element type ", DTypeName(dtype), " unexpected");
        }
      }
    }
  }
  return t;
}

}  // namespace kiln::onnx
