#include "runtime/module_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

// The generated reader/writer for module.fbs (build tree, see the top-level CMakeLists.txt).
#include "module_generated.h"

// Inlined so the checksum loop is compiled into this file (no library call per block) and the
// streaming state can live on the stack.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kiln::runtime {

// The header's integers and the FlatBuffers plan are little-endian, and the weights are the
// in-memory bytes of the host that compiled them; a big-endian host would read them all wrong.
static_assert(std::endian::native == std::endian::little,
              "the .kiln format assumes a little-endian host");

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'M', 'O', 'D', '\0'};
// The weights section starts on a page boundary: in an mmap of the file (page-aligned) every
// blob then keeps its kBlobAlignment.
constexpr uint64_t kWeightsAlignment = 4096;

struct FileHeader {
  char magic[8];
  uint32_t version;      // kModuleFormatVersion; at this offset in every version
  uint32_t header_size;  // sizeof(FileHeader)
  uint64_t plan_offset;
  uint64_t plan_size;
  uint64_t weights_offset;
  uint64_t weights_size;
  uint64_t checksum;  // XXH3-64 of the bytes before this field and of everything after the header
  uint64_t reserved;  // zero
};
static_assert(sizeof(FileHeader) == 64);
static_assert(offsetof(FileHeader, version) == 8);
constexpr size_t kChecksummedHeaderBytes = offsetof(FileHeader, checksum);
static_assert(kChecksummedHeaderBytes == 48);

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

std::string ErrnoText(int err) { return std::strerror(err); }

// ---- writing ----------------------------------------------------------------------------------

template <class T>
flatbuffers::Offset<flatbuffers::Vector<T>> Vec(flatbuffers::FlatBufferBuilder& b,
                                                const std::vector<T>& v) {
  return b.CreateVector(v);
}

flatbuffers::Offset<fb::Step> BuildStep(flatbuffers::FlatBufferBuilder& b, const Step& s) {
  std::vector<flatbuffers::Offset<fb::IntParam>> ints;
  for (const auto& [k, v] : s.params.ints)
    ints.push_back(fb::CreateIntParam(b, b.CreateString(k), v));
  std::vector<flatbuffers::Offset<fb::FloatParam>> floats;
  for (const auto& [k, v] : s.params.floats)
    floats.push_back(fb::CreateFloatParam(b, b.CreateString(k), v));
  std::vector<flatbuffers::Offset<fb::IntListParam>> lists;
  for (const auto& [k, v] : s.params.int_lists)
    lists.push_back(fb::CreateIntListParam(b, b.CreateString(k), Vec(b, v)));
  std::vector<flatbuffers::Offset<fb::StringParam>> strings;
  for (const auto& [k, v] : s.params.strings)
    strings.push_back(fb::CreateStringParam(b, b.CreateString(k), b.CreateString(v)));
  return fb::CreateStep(b, b.CreateString(s.kernel), b.CreateString(s.name), b.CreateString(s.op),
                        Vec(b, s.inputs), Vec(b, s.outputs), Vec(b, s.blobs), b.CreateVector(ints),
                        b.CreateVector(floats), b.CreateVector(lists), b.CreateVector(strings));
}

void BuildPlan(flatbuffers::FlatBufferBuilder& b, const Module& m) {
  std::vector<flatbuffers::Offset<fb::Value>> values;
  values.reserve(m.values.size());
  for (const ValueInfo& v : m.values) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> params;
    for (const std::string& p : v.dim_params) params.push_back(b.CreateString(p));
    values.push_back(fb::CreateValue(b, b.CreateString(v.name), static_cast<int32_t>(v.dtype),
                                     v.rank_known, Vec(b, v.dims), b.CreateVector(params),
                                     static_cast<uint8_t>(v.kind), v.blob));
  }
  std::vector<flatbuffers::Offset<fb::Step>> steps;
  steps.reserve(m.steps.size());
  for (const Step& s : m.steps) steps.push_back(BuildStep(b, s));
  std::vector<fb::BlobRange> blobs;
  blobs.reserve(m.blobs.size());
  for (const Blob& blob : m.blobs) blobs.emplace_back(blob.offset, blob.size);
  b.Finish(fb::CreatePlan(b, m.version, static_cast<int32_t>(m.isa), b.CreateString(m.producer),
                          b.CreateVector(values), Vec(b, m.inputs), Vec(b, m.outputs),
                          b.CreateVector(steps), b.CreateVectorOfStructs(blobs)));
}

// A file descriptor that closes itself; the save path must not leak one on any error.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

Status WriteAll(int fd, const void* data, size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Error("write failed: ", ErrnoText(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status WriteFile(int fd, const FileHeader& header, const flatbuffers::FlatBufferBuilder& plan,
                 std::span<const std::byte> padding, const Module& m) {
  KILN_RETURN_IF_ERROR(WriteAll(fd, &header, sizeof(header)));
  KILN_RETURN_IF_ERROR(WriteAll(fd, plan.GetBufferPointer(), plan.GetSize()));
  KILN_RETURN_IF_ERROR(WriteAll(fd, padding.data(), padding.size()));
  KILN_RETURN_IF_ERROR(WriteAll(fd, m.weights, m.weights_size));
  // Durable before the rename makes it the file at `path`.
  if (::fsync(fd) != 0) return Status::Error("fsync failed: ", ErrnoText(errno));
  return Status::Ok();
}

// ---- reading ----------------------------------------------------------------------------------

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

template <class T, class U>
std::vector<T> ToVector(const flatbuffers::Vector<U>* v) {
  if (!v) return {};
  return std::vector<T>(v->begin(), v->end());
}

// FlatBuffers 2.0.8's verifier checks the alignment of a vector's length field but not of its
// elements, so a hostile plan can misalign a vector of 64-bit values, and reading it would be
// undefined behaviour. A writer always aligns them: a misaligned one is corruption.
template <class V>
bool Aligned(const V* v) {
  // An empty vector has no elements to misalign (and writers do not align it).
  return !v || v->size() == 0 || reinterpret_cast<uintptr_t>(v->Data()) % 8 == 0;
}

// One kind of StepParams map; a key given twice is a malformed file, not a silent overwrite.
template <class Map, class Entries, class Get>
Status ReadParams(const Entries* entries, const char* kind, size_t step, Map& out, Get get) {
  if (!entries) return Status::Ok();
  for (const auto* e : *entries) {
    std::string key = Str(e->key());
    if (!out.emplace(key, get(e)).second)
      return Status::Error("step ", step, " has the ", kind, " parameter '", key, "' twice");
  }
  return Status::Ok();
}

Status ReadStep(const fb::Step& s, size_t index, Step& out) {
  out.kernel = Str(s.kernel());
  out.name = Str(s.name());
  out.op = Str(s.op());
  out.inputs = ToVector<int32_t>(s.inputs());
  out.outputs = ToVector<int32_t>(s.outputs());
  out.blobs = ToVector<int32_t>(s.blobs());
  StepParams& p = out.params;
  if (const auto* lists = s.int_lists())
    for (const fb::IntListParam* e : *lists)
      if (!Aligned(e->values()))
        return Status::Error("step ", index, " has a misaligned int list parameter");
  KILN_RETURN_IF_ERROR(ReadParams(s.ints(), "int", index, p.ints,
                                  [](const fb::IntParam* e) { return e->value(); }));
  KILN_RETURN_IF_ERROR(ReadParams(s.floats(), "float", index, p.floats,
                                  [](const fb::FloatParam* e) { return e->value(); }));
  KILN_RETURN_IF_ERROR(ReadParams(s.int_lists(), "int list", index, p.int_lists,
                                  [](const fb::IntListParam* e) {
                                    return ToVector<int64_t>(e->values());
                                  }));
  KILN_RETURN_IF_ERROR(ReadParams(s.strings(), "string", index, p.strings,
                                  [](const fb::StringParam* e) { return Str(e->value()); }));
  return Status::Ok();
}

// The plan into `m`, checking what the verifier cannot: that every enum is one kiln knows.
Status ReadPlan(const fb::Plan& plan, Module& m) {
  m.version = plan.version();
  if (m.version != kModuleFormatVersion)
    return Status::Error("the plan says format version ", m.version, " but the header says ",
                         kModuleFormatVersion, " (corrupted)");
  const int32_t isa = plan.isa();
  if (isa < static_cast<int32_t>(IsaLevel::kScalar) ||
      isa > static_cast<int32_t>(IsaLevel::kAvx512))
    return Status::Error("unknown ISA level ", isa);
  m.isa = static_cast<IsaLevel>(isa);
  m.producer = Str(plan.producer());
  if (const auto* values = plan.values()) {
    m.values.reserve(values->size());
    for (const fb::Value* v : *values) {
      ValueInfo& info = m.values.emplace_back();
      info.name = Str(v->name());
      const size_t id = m.values.size() - 1;
      if (v->dtype() == 0 || !IsKnownValueDType(v->dtype()))
        return Status::Error("value ", id, " ('", info.name, "') has unknown element type ",
                             v->dtype());
      info.dtype = static_cast<DType>(v->dtype());
      info.rank_known = v->rank_known();
      if (!Aligned(v->dims())) return Status::Error("value ", id, " has misaligned dims");
      info.dims = ToVector<int64_t>(v->dims());
      if (const auto* params = v->dim_params()) {
        info.dim_params.reserve(params->size());
        for (const flatbuffers::String* p : *params) info.dim_params.push_back(Str(p));
      }
      if (v->kind() > static_cast<uint8_t>(ValueKind::kActivation))
        return Status::Error("value ", id, " ('", info.name, "') has unknown kind ",
                             int{v->kind()});
      info.kind = static_cast<ValueKind>(v->kind());
      info.blob = v->blob();
    }
  }
  m.inputs = ToVector<int32_t>(plan.inputs());
  m.outputs = ToVector<int32_t>(plan.outputs());
  if (const auto* steps = plan.steps()) {
    m.steps.reserve(steps->size());
    for (const fb::Step* s : *steps)
      KILN_RETURN_IF_ERROR(ReadStep(*s, m.steps.size(), m.steps.emplace_back()));
  }
  if (!Aligned(plan.blobs())) return Status::Error("the blob table is misaligned");
  if (const auto* blobs = plan.blobs()) {
    m.blobs.reserve(blobs->size());
    for (const fb::BlobRange* b : *blobs) m.blobs.push_back({b->offset(), b->size()});
  }
  return Status::Ok();
}

// Checks that [offset, offset + size) lies within a file of `file_size` bytes, without overflow.
bool Within(uint64_t offset, uint64_t size, uint64_t file_size) {
  return offset <= file_size && size <= file_size - offset;
}

uint64_t Checksum(std::span<const std::byte> bytes, uint64_t header_size) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, bytes.data(), kChecksummedHeaderBytes);
  XXH3_64bits_update(&state, bytes.data() + header_size, bytes.size() - header_size);
  return XXH3_64bits_digest(&state);
}

Status CheckHeader(std::span<const std::byte> bytes, const FileHeader& h) {
  if (h.header_size != sizeof(FileHeader))
    return Status::Error("header size ", h.header_size, " (this format's is ", sizeof(FileHeader),
                         "); the file is corrupted");
  if (h.reserved != 0)
    return Status::Error("reserved header field is not zero; the file is corrupted");
  const uint64_t size = bytes.size();
  // Every section inside the file, in order, and nothing after the weights: a truncated or
  // extended file is reported as such rather than as a checksum or parse failure.
  if (h.plan_offset < h.header_size || h.plan_offset % 8 != 0 ||
      !Within(h.plan_offset, h.plan_size, size))
    return Status::Error("the plan section (offset ", h.plan_offset, ", ", h.plan_size,
                         " bytes) lies outside the file's ", size,
                         " bytes; the file is truncated or corrupted");
  if (h.weights_offset % kWeightsAlignment != 0 || h.weights_offset < h.plan_offset + h.plan_size ||
      !Within(h.weights_offset, h.weights_size, size))
    return Status::Error("the weights section (offset ", h.weights_offset, ", ", h.weights_size,
                         " bytes) lies outside the file's ", size,
                         " bytes; the file is truncated or corrupted");
  if (h.weights_offset + h.weights_size != size)
    return Status::Error("the file has ", size - h.weights_offset - h.weights_size,
                         " bytes after the weights section; the file is corrupted");
  return Status::Ok();
}

}  // namespace

Status SaveModule(const Module& m, const std::string& path) {
  if (Status st = m.Validate(); !st.ok())
    return st.WithContext("cannot save an invalid module to '" + path + "': ");
  flatbuffers::FlatBufferBuilder plan(1024 + m.values.size() * 128 + m.steps.size() * 256);
  BuildPlan(plan, m);

  FileHeader h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.version = m.version;
  h.header_size = sizeof(FileHeader);
  h.plan_offset = sizeof(FileHeader);
  h.plan_size = plan.GetSize();
  h.weights_offset = AlignUp(h.plan_offset + h.plan_size, kWeightsAlignment);
  h.weights_size = m.weights_size;
  const std::vector<std::byte> padding(h.weights_offset - h.plan_offset - h.plan_size);

  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, &h, kChecksummedHeaderBytes);
  XXH3_64bits_update(&state, plan.GetBufferPointer(), plan.GetSize());
  XXH3_64bits_update(&state, padding.data(), padding.size());
  XXH3_64bits_update(&state, m.weights, m.weights_size);
  h.checksum = XXH3_64bits_digest(&state);

  const std::string tmp = path + ".tmp";
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0)
    return Status::Error("cannot save the module: cannot create '", tmp, "': ", ErrnoText(errno));
  Status st = WriteFile(fd.get(), h, plan, padding, m);
  if (st.ok() && ::close(fd.release()) != 0)
    st = Status::Error("close failed: ", ErrnoText(errno));
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
    st = Status::Error("cannot rename it to '", path, "': ", ErrnoText(errno));
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st.WithContext("cannot save the module to '" + tmp + "': ");
  }
  return Status::Ok();
}

Expected<std::shared_ptr<const Module>> ParseModule(std::span<const std::byte> bytes,
                                                    std::shared_ptr<const void> owner,
                                                    const ParseOptions& options) {
  const size_t size = bytes.size();
  if (size == 0) return Status::Error("the file is empty (not a kiln module)");
  if (std::memcmp(bytes.data(), kMagic, std::min(size, sizeof(kMagic))) != 0)
    return Status::Error("not a kiln module (the file does not start with \"KILNMOD\")");
  if (size < sizeof(FileHeader))
    return Status::Error("the file is truncated: ", size, " bytes, shorter than the ",
                         sizeof(FileHeader), "-byte header");
  FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (h.version != kModuleFormatVersion)
    return Status::Error("module format version ", h.version, ", but this runtime reads version ",
                         kModuleFormatVersion, ": recompile the model with this version of kiln");
  KILN_RETURN_IF_ERROR(CheckHeader(bytes, h));
  if (options.verify_checksum) {
    const uint64_t sum = Checksum(bytes, h.header_size);
    if (sum != h.checksum)
      return Status::Error("checksum mismatch: the file is corrupted (recompile the model or copy "
                           "it again)");
  }
  // Blobs are read in place: their 64-byte alignment holds only if the bytes start aligned
  // (always so for a mapping, which is page-aligned).
  if (reinterpret_cast<uintptr_t>(bytes.data()) % kBlobAlignment != 0)
    return Status::Error("internal: module bytes are not ", kBlobAlignment,
                         "-byte aligned in memory");

  // FlatBuffers cannot address more (its verifier asserts on it); no real plan comes close.
  if (h.plan_size >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return Status::Error("the plan section is ", h.plan_size, " bytes, more than FlatBuffers can "
                         "address; the file is corrupted");
  const auto* plan_bytes = reinterpret_cast<const uint8_t*>(bytes.data() + h.plan_offset);
  flatbuffers::Verifier verifier(plan_bytes, h.plan_size);
  if (!fb::VerifyPlanBuffer(verifier))
    return Status::Error("the plan section is malformed (FlatBuffers verification failed); the "
                         "file is corrupted");
  auto m = std::make_shared<Module>();
  if (Status st = ReadPlan(*fb::GetPlan(plan_bytes), *m); !st.ok())
    return st.WithContext("the plan section is malformed: ");
  m->weights = bytes.data() + h.weights_offset;
  m->weights_size = h.weights_size;
  m->weights_owner = std::move(owner);
  if (Status st = m->Validate(); !st.ok()) return st.WithContext("invalid module: ");
  return std::shared_ptr<const Module>(std::move(m));
}

Expected<std::shared_ptr<const Module>> LoadModule(const std::string& path) {
  auto fail = [&](auto&&... args) { return Status::Error("'", path, "': ", args...); };
  // O_NONBLOCK: opening a FIFO must not wait for a writer (we refuse anything but a file below).
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    if (errno == ENOENT) return fail("no such file");
    return fail("cannot open: ", ErrnoText(errno));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return fail("cannot stat: ", ErrnoText(errno));
  if (S_ISDIR(st.st_mode)) return fail("is a directory, not a kiln module");
  if (!S_ISREG(st.st_mode)) return fail("is not a regular file");
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) return fail("the file is empty (not a kiln module)");
  // MAP_POPULATE: the checksum reads every page anyway; faulting them in one call is faster.
  // The mapping is private and read-only, but another process truncating the file while it is
  // mapped would still fault a later read: module files are meant to be replaced (SaveModule's
  // rename), never rewritten in place.
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd.get(), 0);
  if (addr == MAP_FAILED) return fail("cannot map: ", ErrnoText(errno));
  std::shared_ptr<const void> mapping(addr, [size](const void* p) {
    ::munmap(const_cast<void*>(p), size);
  });
  auto module = ParseModule({static_cast<const std::byte*>(addr), size}, std::move(mapping));
  if (!module.ok()) return module.status().WithContext("'" + path + "': ");
  return module;
}

Status CheckIsaSupported(const Module& m) {
  const CpuInfo& cpu = GetCpuInfo();
  if (m.isa <= cpu.isa) return Status::Ok();
  if (cpu.hardware_isa > cpu.isa)
    return Status::Error("module needs ", IsaName(m.isa), " but KILN_ISA caps this CPU at ",
                         IsaName(cpu.isa), ": raise KILN_ISA or recompile the model for ",
                         IsaName(cpu.isa));
  return Status::Error("module needs ", IsaName(m.isa), " but this CPU supports ",
                       IsaName(cpu.isa), ": recompile the model for this machine");
}

}  // namespace kiln::runtime
