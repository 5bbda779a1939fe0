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

// Where an external tensor's bytes lie, checked (location, offset, length, file size) before
// anything is allocated for them.
struct ExternalSpan {
  std::string path;
  int64_t offset = 0;
};

Expected<ExternalSpan> LocateExternal(const ::onnx::TensorProto& p, const std::string& base_dir,
                                      size_t nbytes) {
  const std::string what = StrCat("initializer '", p.name(), "'");
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
      continue;
    }
    if (kv.key() != "offset" && kv.key() != "length") continue;  // "checksum" and the like
    try {
      size_t used = 0;
      const int64_t v = std::stoll(kv.value(), &used);
      if (used != kv.value().size()) throw std::invalid_argument("trailing characters");
      (kv.key() == "offset" ? offset : length) = v;
    } catch (const std::exception&) {
      return Status::Error(what, ": external data '", kv.key(), "' is not a number: '", kv.value(),
                           "'");
    }
  }
  if (offset < 0 || length < -1)
    return Status::Error(what, ": negative external data offset or length");
  if (length != -1 && static_cast<uint64_t>(length) != nbytes)
    return Status::Error(what, ": external data length ", length, " does not match ", nbytes,
                         " bytes of the tensor's dims and dtype");
  KILN_ASSIGN_OR_RETURN(std::string path, ResolveExternalPath(location, base_dir, what));
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return Status::Error(what, ": external data '", location, "' is not a regular file");
  // offset <= st_size first, so offset + nbytes cannot overflow (nbytes is at most 16 GiB).
  if (offset > st.st_size || nbytes > static_cast<uint64_t>(st.st_size - offset))
    return Status::Error(what, ": external data [", offset, ", ", offset, " + ", nbytes,
                         ") runs past the end of '", location, "' (", st.st_size, " bytes)");
  return ExternalSpan{std::move(path), offset};
}

Status ReadExternal(const ExternalSpan& span, const std::string& what, size_t nbytes, void* dst) {
  std::ifstream in(span.path, std::ios::binary);
  in.seekg(span.offset);
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(nbytes));
  if (!in) return Status::Error(what, ": reading external data '", span.path, "' failed");
  return Status::Ok();
}

// How many values the typed field that carries `dtype` holds (int32_data carries every type of
// 32 bits or fewer).
int64_t TypedFieldSize(const ::onnx::TensorProto& p, DType dtype, const char** field_name) {
  switch (dtype) {
    case DType::kFloat32: *field_name = "float_data"; return p.float_data_size();
    case DType::kFloat64: *field_name = "double_data"; return p.double_data_size();
    case DType::kInt64: *field_name = "int64_data"; return p.int64_data_size();
    case DType::kUInt32: case DType::kUInt64:
      *field_name = "uint64_data";
      return p.uint64_data_size();
    case DType::kString: *field_name = "string_data"; return p.string_data_size();
    default: *field_name = "int32_data"; return p.int32_data_size();
  }
}

}  // namespace

Expected<Tensor> TensorFromProto(const ::onnx::TensorProto& p, const std::string& base_dir) {
  const std::string what = StrCat("tensor '", p.name(), "'");
  if (!IsKnownDType(p.data_type()))
    return Status::Error("unsupported element type ", p.data_type(), " in ", what);
  const DType dtype = static_cast<DType>(p.data_type());
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());

  // Every size is checked against the data actually present before the tensor is allocated: a
  // few bytes of hostile file must not make kiln allocate gigabytes.
  KILN_ASSIGN_OR_RETURN(int64_t n, CheckedNumel(dims, what));
  const int64_t elem = dtype == DType::kString ? 1 : static_cast<int64_t>(DTypeSize(dtype));
  if (elem == 0) return Status::Error(what, ": undefined element type");
  const int64_t limit = TensorByteLimit();
  if (n > limit / elem)
    return Status::Error(what, ": ", DimsToString(dims), " of ", DTypeName(dtype),
                         " is larger than kiln's limit of ", limit, " bytes");
  const size_t nbytes = dtype == DType::kString ? 0 : static_cast<size_t>(n * elem);
  const bool external = p.data_location() == ::onnx::TensorProto::EXTERNAL;
  ExternalSpan span;
  if (dtype != DType::kString && external) {
    KILN_ASSIGN_OR_RETURN(span, LocateExternal(p, base_dir, nbytes));
  } else if (dtype != DType::kString && p.has_raw_data()) {
    if (p.raw_data().size() != nbytes)
      return Status::Error(what, ": raw_data has ", p.raw_data().size(), " bytes but ",
                           DTypeName(dtype), DimsToString(dims), " needs ", nbytes);
  } else {
    const char* field_name = "";
    const int64_t have = TypedFieldSize(p, dtype, &field_name);
    if (have != n)
      return Status::Error(what, ": ", field_name, " holds ", have, " values but dims say ", n);
  }
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Make(dtype, dims, what));

  if (dtype == DType::kString) {
    for (int64_t i = 0; i < n; ++i) t.strings()[i] = p.string_data(static_cast<int>(i));
    return t;
  }
  if (external) {
    KILN_RETURN_IF_ERROR(ReadExternal(span, StrCat("initializer '", p.name(), "'"), nbytes,
                                      t.raw()));
    if (dtype == DType::kBool) {
      auto* b = static_cast<uint8_t*>(t.raw());
      for (int64_t i = 0; i < n; ++i) b[i] = b[i] != 0;
    }
    return t;
  }
  if (p.has_raw_data()) {
    if (nbytes) std::memcpy(t.raw(), p.raw_data().data(), nbytes);
    if (dtype == DType::kBool) {  // any non-zero byte is true; keep bools 0/1 for the kernels
      auto* b = static_cast<uint8_t*>(t.raw());
      for (int64_t i = 0; i < n; ++i) b[i] = b[i] != 0;
    }
    return t;
  }
  switch (dtype) {
    case DType::kFloat32:
      std::copy(p.float_data().begin(), p.float_data().end(), t.data<float>());
      break;
    case DType::kFloat64:
      std::copy(p.double_data().begin(), p.double_data().end(), t.data<double>());
      break;
    case DType::kInt64:
      std::copy(p.int64_data().begin(), p.int64_data().end(), t.data<int64_t>());
      break;
    case DType::kUInt32: case DType::kUInt64:
      for (int64_t i = 0; i < n; ++i) {
        if (dtype == DType::kUInt32) t.data<uint32_t>()[i] = static_cast<uint32_t>(p.uint64_data(i));
        else t.data<uint64_t>()[i] = p.uint64_data(i);
      }
      break;
    default: {
      // int32_data carries every type of 32 bits or fewer, 16-bit floats as their bit patterns.
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
