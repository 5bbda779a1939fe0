// Hostile external data: a model's weights may live in files beside it, but never outside its
// folder (absolute paths, "..", symlinks leading out) and never past the end of their file.
#include <unistd.h>

#include "../hostile/model_builder.h"

namespace kiln {
namespace {

using hostile::ExpectError;
using hostile::TempDir;

// A model whose initializer 'w' (float32[dims]) is stored externally with these key/values.
::onnx::ModelProto ExternalModel(const std::vector<std::pair<std::string, std::string>>& kv,
                                 std::vector<int64_t> dims = {4}) {
  auto m = hostile::InitializerModel(::onnx::TensorProto::FLOAT, dims, "");
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_raw_data();
  w->set_data_location(::onnx::TensorProto::EXTERNAL);
  for (const auto& [k, v] : kv) {
    auto* e = w->add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
  return m;
}

// Writes the model as dir/model/model.onnx and loads it from there.
Status LoadFromFolder(const TempDir& dir, const ::onnx::ModelProto& m) {
  const std::string path = dir.Write("model/model.onnx", hostile::Serialize(m));
  return onnx::LoadModel(path).status();
}

std::string Floats(std::initializer_list<float> v) {
  return std::string(reinterpret_cast<const char*>(std::data(v)), v.size() * sizeof(float));
}

class HostileExternal : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.Write("model/weights.bin", Floats({1, 2, 3, 4}));
    dir_.Write("secret.bin", Floats({6, 6, 6, 6}));  // outside the model's folder
  }
  TempDir dir_;
};

TEST_F(HostileExternal, InsideTheFolderLoads) {
  auto m = ExternalModel({{"location", "weights.bin"}});
  const std::string path = dir_.Write("model/model.onnx", hostile::Serialize(m));
  auto model = onnx::LoadModel(path);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const auto& w = *model->graph->FindValue("w")->constant;
  EXPECT_EQ(w.data<float>()[3], 4.0f);
  // With an offset and length that fit.
  m = ExternalModel({{"location", "weights.bin"}, {"offset", "8"}, {"length", "8"}}, {2});
  ASSERT_TRUE(LoadFromFolder(dir_, m).ok());
}

TEST_F(HostileExternal, AbsolutePath) {
  const std::string abs = dir_.Sub("secret.bin");
  ExpectError(LoadFromFolder(dir_, ExternalModel({{"location", abs}})),
              {"initializer 'w'", "must be a relative path inside the model's folder"});
  ExpectError(LoadFromFolder(dir_, ExternalModel({{"location", "/etc/passwd"}})),
              {"initializer 'w'", "'/etc/passwd'", "relative path"});
}

TEST_F(HostileExternal, DotDot) {
  ExpectError(LoadFromFolder(dir_, ExternalModel({{"location", "../secret.bin"}})),
              {"initializer 'w'", "'../secret.bin'", "'..'"});
  // ".." that would come back inside is refused all the same.
  ExpectError(LoadFromFolder(dir_, ExternalModel({{"location", "../model/weights.bin"}})),
              {"initializer 'w'", "'..'"});
  ExpectError(LoadFromFolder(dir_, ExternalModel({{"location", "sub/../../secret.bin"}})),
              {"initializer 'w'", "'..'"});
}

TEST_F(HostileExternal, SymlinkLeadingOut) {
  std::filesystem::create_directories(dir_.Sub("model"));
  ASSERT_EQ(::symlink("../secret.bin", dir_.Sub("model/link.bin").c_str()), 0);
  ExpectError(LoadFromFolder(dir_, ExternalModel({{"location", "link.bin"}})),
              {"initializer 'w'", "'link.bin'", "resolves outside the model's folder"});
  // A symlinked folder leading out.
  ASSERT_EQ(::symlink("..", dir_.Sub("model/up").c_str()), 0);
  ExpectError(LoadFromFolder(dir_, ExternalModel({{"location", "up/secret.bin"}})),
              {"initializer 'w'", "resolves outside the model's folder"});
  // A symlink that stays inside is fine.
  ASSERT_EQ(::symlink("weights.bin", dir_.Sub("model/alias.bin").c_str()), 0);
  EXPECT_TRUE(LoadFromFolder(dir_, ExternalModel({{"location", "alias.bin"}})).ok());
}

TEST_F(HostileExternal, PastTheEndOfItsFile) {
  // 8 floats from a 16-byte file.
  ExpectError(LoadFromFolder(dir_, ExternalModel({{"location", "weights.bin"}}, {8})),
              {"initializer 'w'", "runs past the end of 'weights.bin'", "16 bytes"});
  ExpectError(
      LoadFromFolder(dir_, ExternalModel({{"location", "weights.bin"}, {"offset", "12"}}, {2})),
      {"initializer 'w'", "runs past the end"});
  // An offset far past the end: no overflow in offset + size.
  ExpectError(LoadFromFolder(dir_, ExternalModel({{"location", "weights.bin"},
                                                  {"offset", "9223372036854775807"}})),
              {"initializer 'w'", "runs past the end"});
  // Huge dims with a tiny file: refused before allocating.
  ExpectError(
      LoadFromFolder(dir_, ExternalModel({{"location", "weights.bin"}}, {int64_t{1} << 31})),
      {"initializer 'w'", "runs past the end"});
}

TEST_F(HostileExternal, BadKeys) {
  ExpectError(LoadFromFolder(dir_, ExternalModel({{"location", "weights.bin"}, {"length", "12"}})),
              {"initializer 'w'", "length 12 does not match 16"});
  ExpectError(LoadFromFolder(dir_, ExternalModel({{"location", "weights.bin"}, {"offset", "-4"}})),
              {"initializer 'w'", "negative"});
  ExpectError(
      LoadFromFolder(dir_, ExternalModel({{"location", "weights.bin"}, {"offset", "four"}})),
      {"initializer 'w'", "'offset' is not a number"});
  ExpectError(
      LoadFromFolder(dir_, ExternalModel({{"location", "weights.bin"}, {"offset", "4x"}})),
      {"initializer 'w'", "'offset' is not a number"});
  ExpectError(LoadFromFolder(dir_, ExternalModel({{"location", "weights.bin"},
                                                  {"offset", "99999999999999999999999"}})),
              {"initializer 'w'", "'offset' is not a number"});
  ExpectError(LoadFromFolder(dir_, ExternalModel({})), {"initializer 'w'", "relative path"});
  ExpectError(LoadFromFolder(dir_, ExternalModel({{"location", "missing.bin"}})),
              {"initializer 'w'", "'missing.bin'", "does not exist"});
  std::filesystem::create_directories(dir_.Sub("model/folder"));
  ExpectError(LoadFromFolder(dir_, ExternalModel({{"location", "folder"}})),
              {"initializer 'w'", "'folder'", "not a regular file"});
}

TEST_F(HostileExternal, FromMemoryIsRefused) {
  auto m = ExternalModel({{"location", "weights.bin"}});
  ExpectError(onnx::LoadModelFromBytes(hostile::Serialize(m), "").status(),
              {"initializer 'w'", "loaded from memory"});
}

}  // namespace
}  // namespace kiln
