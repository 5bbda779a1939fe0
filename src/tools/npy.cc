#include "tools/npy.h"

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

namespace kiln::tools {
namespace {

struct Descr {
  const char* text;
  DType dtype;
};
constexpr Descr kDescrs[] = {
    {"<f4", DType::kFloat32}, {"<f8", DType::kFloat64}, {"<f2", DType::kFloat16},
    {"|i1", DType::kInt8},    {"|u1", DType::kUInt8},   {"<i2", DType::kInt16},
    {"<u2", DType::kUInt16},  {"<i4", DType::kInt32},   {"<u4", DType::kUInt32},
    {"<i8", DType::kInt64},   {"<u8", DType::kUInt64},  {"|b1", DType::kBool},
};

}  // namespace

Expected<Tensor> ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error("cannot open '", path, "'");
  char magic[8] = {};
  in.read(magic, 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    return Status::Error("'", path, "' is not a .npy file");
  const int major = static_cast<unsigned char>(magic[6]);
  uint32_t header_len = 0;
  if (major == 1) {
    unsigned char b[2];
    in.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t(b[3]) << 24);
  } else {
    return Status::Error("'", path, "': unsupported .npy version ", major);
  }
  if (!in || header_len > (1u << 20)) return Status::Error("'", path, "': bad .npy header");
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  if (!in) return Status::Error("'", path, "': truncated .npy header");

  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']*)'")))
    return Status::Error("'", path, "': .npy header has no descr");
  const std::string descr = m[1];
  DType dtype = DType::kUndefined;
  for (const Descr& d : kDescrs)
    if (descr == d.text || (descr.size() == 3 && descr[0] == '=' && descr.substr(1) == d.text + 1))
      dtype = d.dtype;
  if (dtype == DType::kUndefined)
    return Status::Error("'", path, "': unsupported .npy element type '", descr, "'");
  if (std::regex_search(header, std::regex("'fortran_order':\\s*True")))
    return Status::Error("'", path, "': Fortran-ordered arrays are not supported");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")))
    return Status::Error("'", path, "': .npy header has no shape");
  std::vector<int64_t> dims;
  std::stringstream ss(m[1].str());
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos) continue;
    try {
      dims.push_back(std::stoll(item));
    } catch (const std::exception&) {
      return Status::Error("'", path, "': bad dimension '", item, "' in .npy shape");
    }
  }
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Make(dtype, dims, path));
  in.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  if (!in) return Status::Error("'", path, "': .npy data is shorter than its shape says");
  if (dtype == DType::kBool) {
    auto* b = static_cast<uint8_t*>(t.raw());
    for (int64_t i = 0; i < t.numel(); ++i) b[i] = b[i] != 0;
  }
  return t;
}

Status WriteNpy(const std::string& path, const Tensor& t) {
  const char* descr = nullptr;
  for (const Descr& d : kDescrs)
    if (d.dtype == t.dtype()) descr = d.text;
  if (descr == nullptr)
    return Status::Error("cannot write ", DTypeName(t.dtype()), " tensors to .npy");
  std::string shape;
  for (int64_t d : t.dims()) shape += StrCat(d, ", ");
  if (t.rank() > 1) shape.resize(shape.size() - 1);  // "(2, 3)" but "(5,)"
  if (t.rank() > 1) shape.pop_back();
  std::string header = StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (",
                              shape, "), }");
  // Pad so that the data starts on a 64-byte boundary, ending the header with a newline.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  if (!out) return Status::Error("cannot write '", path, "'");
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  const char lenb[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(lenb, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  if (!out) return Status::Error("writing '", path, "' failed");
  return Status::Ok();
}

}  // namespace kiln::tools
