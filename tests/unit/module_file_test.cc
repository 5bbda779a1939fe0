// The `.kiln` module file: a module survives save and load field by field with its weights read
// in place, and every damaged, truncated, foreign or hostile file is a clear error.
#include "runtime/module_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <vector>

#include "module_generated.h"

namespace kiln::runtime {
namespace {

namespace fs = std::filesystem;

// A fresh folder per test under gtest's temp dir.
class ModuleFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) / ("kiln_module_file_" + std::to_string(::getpid())) /
           info->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_.parent_path()); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::vector<std::byte> Bytes(size_t n, uint8_t seed) {
  std::vector<std::byte> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<std::byte>((i * 131 + seed) & 0xff);
  return b;
}

// Several dtypes, a symbolic dim, an unknown rank, scalar and odd-sized constants, a step with
// every kind of param (empty list and odd strings included) and one without any.
Module MakeModule() {
  Module m;
  m.isa = IsaLevel::kAvx2;
  m.producer = "kiln test \xc3\xbc";
  WeightWriter w;
  const int32_t b_w = w.Add(m, Bytes(15, 1));      // int8 [3,5]
  const int32_t b_b = w.Add(m, Bytes(14, 2));      // float16 [7]
  const int32_t b_s = w.Add(m, Bytes(8, 3));       // float64 scalar
  const int32_t b_packed = w.Add(m, Bytes(1001, 4));
  const int32_t b_empty = w.Add(m, {});
  w.Finish(m);
  m.values = {
      {"x", DType::kFloat32, true, {-1, 3, 224}, {"N", "", ""}, ValueKind::kInput, -1},
      {"w", DType::kInt8, true, {3, 5}, {"", ""}, ValueKind::kConstant, b_w},
      {"b", DType::kFloat16, true, {7}, {""}, ValueKind::kConstant, b_b},
      {"y", DType::kFloat32, false, {}, {}, ValueKind::kActivation, -1},
      {"z", DType::kInt64, true, {-1}, {"seq"}, ValueKind::kActivation, -1},
      {"scalar", DType::kFloat64, true, {}, {}, ValueKind::kConstant, b_s},
      {"mask", DType::kBool, true, {2}, {""}, ValueKind::kInput, -1},
      {"", DType::kBFloat16, true, {0, 4}, {"", ""}, ValueKind::kActivation, -1},
  };
  m.inputs = {0, 6};
  m.outputs = {3, 4, 7};
  Step gemm{"gemm_f32", "conv1,relu1", "Conv+Relu", {0, 1, -1}, {3}, {b_packed, b_empty}, {}};
  gemm.params.ints = {{"m", 5}, {"neg", -7}, {"big", INT64_MIN}};
  gemm.params.floats = {{"alpha", 0.5}, {"eps", 1e-30}, {"inf", INFINITY}};
  gemm.params.int_lists = {{"pads", {0, 1, 2, 3}}, {"empty", {}}};
  gemm.params.strings = {{"act", "relu"}, {"", std::string("a\0b", 3)}};
  m.steps.push_back(gemm);
  m.steps.push_back({"eltwise", "add", "Add", {3, 2, 5, 6}, {4, 7}, {}, {}});
  return m;
}

void ExpectSameValue(const ValueInfo& a, const ValueInfo& b, size_t i) {
  SCOPED_TRACE("value " + std::to_string(i));
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.rank_known, b.rank_known);
  EXPECT_EQ(a.dims, b.dims);
  EXPECT_EQ(a.dim_params, b.dim_params);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.blob, b.blob);
}

void ExpectSameModule(const Module& a, const Module& b) {
  EXPECT_EQ(a.version, b.version);
  EXPECT_EQ(a.isa, b.isa);
  EXPECT_EQ(a.producer, b.producer);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) ExpectSameValue(a.values[i], b.values[i], i);
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
  EXPECT_EQ(a.steps, b.steps);  // Step and StepParams compare every field
  ASSERT_EQ(a.blobs.size(), b.blobs.size());
  for (size_t i = 0; i < a.blobs.size(); ++i) {
    EXPECT_EQ(a.blobs[i].offset, b.blobs[i].offset) << "blob " << i;
    EXPECT_EQ(a.blobs[i].size, b.blobs[i].size) << "blob " << i;
    auto x = a.BlobBytes(static_cast<int32_t>(i)), y = b.BlobBytes(static_cast<int32_t>(i));
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << "blob " << i;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(y.data()) % kBlobAlignment, 0u) << "blob " << i;
  }
  EXPECT_EQ(a.weights_size, b.weights_size);
}

std::vector<std::byte> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  if (!c.empty()) std::memcpy(b.data(), c.data(), c.size());
  return b;
}

void WriteFile(const std::string& path, std::span<const std::byte> bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// ParseModule wants 64-byte aligned bytes that outlive the module: copy into such a buffer.
Expected<std::shared_ptr<const Module>> Parse(std::span<const std::byte> bytes,
                                              bool verify_checksum = true) {
  auto* data = static_cast<std::byte*>(::operator new(bytes.size() + 1, std::align_val_t{64}));
  if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
  std::shared_ptr<const void> owner(
      data, [](const void* p) { ::operator delete(const_cast<void*>(p), std::align_val_t{64}); });
  return ParseModule({data, bytes.size()}, owner, {verify_checksum});
}

void ExpectError(const Status& st, std::initializer_list<std::string> parts) {
  ASSERT_FALSE(st.ok()) << "expected an error mentioning " << *parts.begin();
  for (const std::string& p : parts)
    EXPECT_NE(st.message().find(p), std::string::npos) << "'" << p << "' not in: " << st.message();
}

// Header fields, as module_file.cc lays them out (little-endian).
constexpr size_t kVersionAt = 8, kPlanOffsetAt = 16, kWeightsOffsetAt = 32, kChecksumAt = 48;
uint64_t ReadU64(std::span<const std::byte> b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

TEST_F(ModuleFileTest, RoundTripIsExact) {
  const Module m = MakeModule();
  ASSERT_TRUE(m.Validate().ok()) << m.Validate().message();
  const std::string path = Path("m.kiln");
  ASSERT_TRUE(SaveModule(m, path).ok());
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  auto loaded = LoadModule(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ExpectSameModule(m, **loaded);
  // Weights are read in place from the mapping, which the module keeps alive.
  EXPECT_NE((*loaded)->weights, m.weights);
  EXPECT_NE((*loaded)->weights_owner, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*loaded)->weights) % 4096, 0u);
  // The weights section starts on a page boundary of the file.
  const auto bytes = ReadFile(path);
  EXPECT_EQ(ReadU64(bytes, kWeightsOffsetAt) % 4096, 0u);
  EXPECT_EQ(bytes.size(), ReadU64(bytes, kWeightsOffsetAt) + m.weights_size);
  EXPECT_EQ(std::memcmp(bytes.data(), "KILNMOD\0", 8), 0);
}

TEST_F(ModuleFileTest, MappingOutlivesTheModuleHandle) {
  const Module m = MakeModule();
  ASSERT_TRUE(SaveModule(m, Path("m.kiln")).ok());
  std::shared_ptr<const void> owner;
  const std::byte* weights = nullptr;
  {
    auto loaded = LoadModule(Path("m.kiln"));
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    owner = (*loaded)->weights_owner;
    weights = (*loaded)->weights;
  }
  // The file is gone and the module released: the weights stay readable through their owner.
  fs::remove(Path("m.kiln"));
  const auto expected = Bytes(1001, 4);
  EXPECT_EQ(std::memcmp(weights + m.blobs[3].offset, expected.data(), expected.size()), 0);
}

TEST_F(ModuleFileTest, SavingOverALoadedFileLeavesItsWeightsAlone) {
  // The rename gives the path a new file; the old one stays mapped for whoever loaded it.
  const Module m = MakeModule();
  ASSERT_TRUE(SaveModule(m, Path("m.kiln")).ok());
  auto loaded = LoadModule(Path("m.kiln"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  Module other;
  WeightWriter w;
  w.Add(other, Bytes(5000, 9));
  w.Finish(other);
  ASSERT_TRUE(SaveModule(other, Path("m.kiln")).ok());
  ExpectSameModule(m, **loaded);
  auto reloaded = LoadModule(Path("m.kiln"));
  ASSERT_TRUE(reloaded.ok()) << reloaded.status().message();
  ExpectSameModule(other, **reloaded);
}

TEST_F(ModuleFileTest, EmptyModuleAndOverwrite) {
  Module empty;
  ASSERT_TRUE(SaveModule(empty, Path("m.kiln")).ok());
  auto loaded = LoadModule(Path("m.kiln"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ExpectSameModule(empty, **loaded);
  // Saving over an existing file replaces it.
  ASSERT_TRUE(SaveModule(MakeModule(), Path("m.kiln")).ok());
  loaded = LoadModule(Path("m.kiln"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ExpectSameModule(MakeModule(), **loaded);
}

TEST_F(ModuleFileTest, MissingEmptyDirectoryForeign) {
  ExpectError(LoadModule(Path("nope.kiln")).status(), {"nope.kiln", "no such file"});
  ExpectError(LoadModule(dir_.string()).status(), {"is a directory"});
  WriteFile(Path("empty.kiln"), {});
  ExpectError(LoadModule(Path("empty.kiln")).status(), {"empty.kiln", "empty"});
  const std::string text = "ir_version: 7\nproducer_name: \"not a module at all\"\n";
  WriteFile(Path("onnx.kiln"), std::as_bytes(std::span(text)));
  ExpectError(LoadModule(Path("onnx.kiln")).status(), {"onnx.kiln", "not a kiln module"});
  ASSERT_EQ(::mkfifo(Path("fifo.kiln").c_str(), 0600), 0);
  ExpectError(LoadModule(Path("fifo.kiln")).status(), {"not a regular file"});  // no hang
}

TEST_F(ModuleFileTest, WrongMagicAndFutureVersion) {
  ASSERT_TRUE(SaveModule(MakeModule(), Path("m.kiln")).ok());
  const auto good = ReadFile(Path("m.kiln"));
  auto bad = good;
  bad[3] = std::byte{'X'};
  WriteFile(Path("magic.kiln"), bad);
  ExpectError(LoadModule(Path("magic.kiln")).status(), {"magic.kiln", "not a kiln module"});
  bad = good;
  const uint32_t future = kModuleFormatVersion + 1;
  std::memcpy(bad.data() + kVersionAt, &future, 4);
  WriteFile(Path("future.kiln"), bad);
  ExpectError(LoadModule(Path("future.kiln")).status(),
              {"future.kiln", "version " + std::to_string(future),
               "version " + std::to_string(kModuleFormatVersion), "recompile"});
}

TEST_F(ModuleFileTest, TruncatedAtAnyLengthIsAnError) {
  ASSERT_TRUE(SaveModule(MakeModule(), Path("m.kiln")).ok());
  const auto good = ReadFile(Path("m.kiln"));
  const size_t weights_at = ReadU64(good, kWeightsOffsetAt);
  std::vector<size_t> lengths = {0, 1, 7, 8, 11, 12, 63, 64, 65, 100, weights_at - 1, weights_at,
                                 weights_at + 1, good.size() - 1};
  for (size_t n = 2; n < good.size(); n += 61) lengths.push_back(n);
  for (size_t n : lengths) {
    auto st = Parse({good.data(), n}).status();
    EXPECT_FALSE(st.ok()) << "truncated to " << n << " bytes";
    EXPECT_FALSE(st.message().empty());
  }
  // Through the file loader too, with the file named and "truncated" said.
  WriteFile(Path("short.kiln"), {good.data(), weights_at + 10});
  ExpectError(LoadModule(Path("short.kiln")).status(), {"short.kiln", "truncated"});
  WriteFile(Path("header.kiln"), {good.data(), 40});
  ExpectError(LoadModule(Path("header.kiln")).status(), {"truncated"});
  // Bytes appended after the weights are refused too.
  auto longer = good;
  longer.resize(good.size() + 3);
  ExpectError(Parse(longer).status(), {"after the weights"});
}

TEST_F(ModuleFileTest, FlippedBytesAreCaught) {
  ASSERT_TRUE(SaveModule(MakeModule(), Path("m.kiln")).ok());
  const auto good = ReadFile(Path("m.kiln"));
  ASSERT_TRUE(Parse(good).ok());
  const size_t plan_at = ReadU64(good, kPlanOffsetAt);
  const size_t weights_at = ReadU64(good, kWeightsOffsetAt);
  // Every header byte: each field is checked or checksummed.
  for (size_t i = 0; i < plan_at; ++i) {
    auto bad = good;
    bad[i] ^= std::byte{0x01};
    EXPECT_FALSE(Parse(bad).ok()) << "flipped header byte " << i;
  }
  // Plan, padding and weights: the checksum says "corrupted".
  std::vector<size_t> at;
  for (size_t i = plan_at; i < good.size(); i += 37) at.push_back(i);
  at.insert(at.end(), {weights_at - 1, weights_at, good.size() - 1});
  for (size_t i : at) {
    auto bad = good;
    bad[i] ^= std::byte{0x80};
    auto st = Parse(bad).status();
    SCOPED_TRACE("flipped byte " + std::to_string(i));
    ExpectError(st, {"checksum", "corrupted"});
  }
  // The checksum field itself.
  auto bad = good;
  bad[kChecksumAt] ^= std::byte{0x01};
  ExpectError(Parse(bad).status(), {"checksum"});
  WriteFile(Path("flip.kiln"), bad);
  ExpectError(LoadModule(Path("flip.kiln")).status(), {"flip.kiln", "corrupted"});
}

TEST_F(ModuleFileTest, FlippedPlanBytesWithoutChecksumNeverCrash) {
  // What the fuzzer does, in small: past the checksum, the verifier and the checks after it
  // must turn every damaged plan into an error or a valid module.
  ASSERT_TRUE(SaveModule(MakeModule(), Path("m.kiln")).ok());
  const auto good = ReadFile(Path("m.kiln"));
  const size_t plan_at = ReadU64(good, kPlanOffsetAt);
  const size_t plan_end = plan_at + ReadU64(good, 24);
  for (size_t i = plan_at; i < plan_end; ++i) {
    for (uint8_t x : {0x01, 0x80, 0xff}) {
      auto bad = good;
      bad[i] ^= std::byte{x};
      auto parsed = Parse(bad, /*verify_checksum=*/false);
      if (parsed.ok()) EXPECT_TRUE((*parsed)->Validate().ok());
      else EXPECT_FALSE(parsed.status().message().empty());
    }
  }
}

TEST_F(ModuleFileTest, SaveFailuresLeaveNoDebris) {
  const Module m = MakeModule();
  const std::string missing = Path("no/such/folder/m.kiln");
  ExpectError(SaveModule(m, missing), {"no/such/folder/m.kiln.tmp"});
  EXPECT_FALSE(fs::exists(missing + ".tmp"));
  EXPECT_FALSE(fs::exists(Path("no")));

  // A good file stays as it was when a later save fails: at the rename (the path is a folder),
  // at the temporary file (taken by a folder), or because the module is invalid.
  const std::string path = Path("m.kiln");
  ASSERT_TRUE(SaveModule(m, path).ok());
  const auto before = ReadFile(path);
  fs::create_directory(Path("m.kiln.tmp"));
  EXPECT_FALSE(SaveModule(Module{}, path).ok());
  fs::remove(Path("m.kiln.tmp"));
  Module invalid = MakeModule();
  invalid.steps[1].inputs.push_back(42);
  ExpectError(SaveModule(invalid, path), {"invalid module", "value 42"});
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_EQ(ReadFile(path), before);

  fs::create_directory(Path("dir.kiln"));
  EXPECT_FALSE(SaveModule(m, Path("dir.kiln")).ok());
  EXPECT_FALSE(fs::exists(Path("dir.kiln.tmp")));
  EXPECT_TRUE(fs::is_directory(Path("dir.kiln")));
}

TEST_F(ModuleFileTest, IsaCheck) {
  Module m;
  for (IsaLevel isa : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    m.isa = isa;
    const Status st = CheckIsaSupported(m);
    EXPECT_EQ(st.ok(), isa <= ActiveIsa()) << IsaName(isa);
    if (!st.ok()) ExpectError(st, {std::string("needs ") + IsaName(isa), IsaName(ActiveIsa())});
  }
}

// ---- hostile plans, built with the generated FlatBuffers code ------------------------------

// A file around `plan` (no checksum: these are parsed with verify_checksum=false) with
// `weights_size` zero weight bytes.
std::vector<std::byte> RawFile(const flatbuffers::FlatBufferBuilder& plan, uint64_t weights_size) {
  const uint64_t plan_size = plan.GetSize();
  const uint64_t weights_at = (64 + plan_size + 4095) / 4096 * 4096;
  std::vector<std::byte> f(weights_at + weights_size);
  const uint32_t version = kModuleFormatVersion, header_size = 64;
  const uint64_t fields[] = {64, plan_size, weights_at, weights_size};
  std::memcpy(f.data(), "KILNMOD\0", 8);
  std::memcpy(f.data() + 8, &version, 4);
  std::memcpy(f.data() + 12, &header_size, 4);
  std::memcpy(f.data() + 16, fields, sizeof(fields));
  std::memcpy(f.data() + 64, plan.GetBufferPointer(), plan_size);
  return f;
}

struct PlanSpec {
  uint32_t version = kModuleFormatVersion;
  int32_t isa = 0;
  int32_t dtype = 1;
  uint8_t kind = 0;
  bool duplicate_key = false;
  uint64_t blob_offset = 0, blob_size = 64;
};

std::vector<std::byte> HostileFile(const PlanSpec& s) {
  flatbuffers::FlatBufferBuilder b;
  auto value = fb::CreateValue(b, b.CreateString("v"), s.dtype, true,
                               b.CreateVector(std::vector<int64_t>{2}),
                               b.CreateVector(std::vector{b.CreateString("")}), s.kind, -1);
  std::vector<flatbuffers::Offset<fb::IntParam>> ints = {
      fb::CreateIntParam(b, b.CreateString("k"), 1)};
  if (s.duplicate_key) ints.push_back(fb::CreateIntParam(b, b.CreateString("k"), 2));
  auto step = fb::CreateStep(b, b.CreateString("kern"), b.CreateString("n"), 0, 0, 0, 0,
                             b.CreateVector(ints));
  std::vector<fb::BlobRange> blobs = {fb::BlobRange(s.blob_offset, s.blob_size)};
  b.Finish(fb::CreatePlan(b, s.version, s.isa, 0, b.CreateVector(std::vector{value}),
                          b.CreateVector(std::vector<int32_t>{0}), 0,
                          b.CreateVector(std::vector{step}), b.CreateVectorOfStructs(blobs)));
  return RawFile(b, 128);
}

TEST(ModuleFileHostile, PlansOutOfRange) {
  auto parse = [](const PlanSpec& s) { return Parse(HostileFile(s), false).status(); };
  EXPECT_TRUE(parse({}).ok()) << parse({}).message();
  ExpectError(parse({.dtype = 99}), {"unknown element type 99"});
  ExpectError(parse({.dtype = 0}), {"unknown element type 0"});
  ExpectError(parse({.dtype = -5}), {"unknown element type -5"});
  ExpectError(parse({.kind = 3}), {"unknown kind 3"});
  ExpectError(parse({.isa = 3}), {"unknown ISA level 3"});
  ExpectError(parse({.isa = -1}), {"unknown ISA level -1"});
  ExpectError(parse({.version = 7}), {"version 7"});
  ExpectError(parse({.duplicate_key = true}), {"'k' twice"});
  ExpectError(parse({.blob_offset = 64, .blob_size = 65}), {"blob 0", "outside"});
  ExpectError(parse({.blob_offset = UINT64_MAX - 63, .blob_size = 64}), {"blob 0"});
  ExpectError(parse({.blob_offset = 8}), {"aligned"});
}

TEST(ModuleFileHostile, SectionsOutsideTheFile) {
  const auto good = HostileFile({});
  ASSERT_TRUE(Parse(good, false).ok());
  auto patch = [&](size_t at, uint64_t v) {
    auto f = good;
    std::memcpy(f.data() + at, &v, 8);
    return Parse(f, false).status();
  };
  ExpectError(patch(16, 1 << 20), {"plan section", "outside"});     // plan offset
  ExpectError(patch(16, 65), {"plan section"});                     // misaligned plan
  ExpectError(patch(24, UINT64_MAX), {"plan section", "outside"});  // plan size
  ExpectError(patch(32, 4096 * 100), {"weights section"});
  ExpectError(patch(32, 4095), {"weights section"});
  ExpectError(patch(40, UINT64_MAX - 10), {"weights section"});
  ExpectError(patch(56, 1), {"reserved"});
  // A plan of garbage inside well-formed sections: the verifier refuses it.
  auto f = good;
  for (size_t i = 64; i < 64 + ReadU64(good, 24); ++i) f[i] = std::byte{0xee};
  ExpectError(Parse(f, false).status(), {"FlatBuffers verification failed"});
}

}  // namespace
}  // namespace kiln::runtime
