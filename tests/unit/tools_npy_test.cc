#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tools/npy.h"

namespace kiln::tools {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("kiln_npy_" + name)).string();
}

TEST(Npy, RoundTripsEveryRank) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{}, {5}, {2, 3}, {2, 1, 4}}) {
    Tensor t(DType::kFloat32, dims);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 0.5f * i - 1;
    const std::string path = TempPath("rt.npy");
    ASSERT_TRUE(WriteNpy(path, t).ok());
    auto back = ReadNpy(path);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->dims(), dims);
    for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(back->data<float>()[i], t.data<float>()[i]);
    std::remove(path.c_str());
  }
}

TEST(Npy, RejectsTruncatedData) {
  Tensor t(DType::kInt64, {10});
  const std::string path = TempPath("trunc.npy");
  ASSERT_TRUE(WriteNpy(path, t).ok());
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 8);
  auto back = ReadNpy(path);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("shorter"), std::string::npos);
  std::remove(path.c_str());
}

TEST(Npy, RejectsNonNpy) {
  const std::string path = TempPath("bad.npy");
  std::ofstream(path) << "hello";
  EXPECT_FALSE(ReadNpy(path).ok());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kiln::tools
