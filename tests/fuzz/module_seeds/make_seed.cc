// Writes the seeds of fuzz_module_file into the folder given: module.kiln (a small module using
// every part of the format) and plan.bin (its plan section alone, the fuzzer's second input
// shape). Run at build time, so the seeds always have the current format version.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/module_file.h"

namespace {

using kiln::DType;
using namespace kiln::runtime;

Module SeedModule() {
  Module m;
  m.isa = kiln::IsaLevel::kAvx2;
  m.producer = "fuzz seed";
  WeightWriter w;
  auto bytes = [](size_t n) {
    std::vector<std::byte> b(n);
    for (size_t i = 0; i < n; ++i) b[i] = static_cast<std::byte>(i * 13 + 5);
    return b;
  };
  const int32_t b_w = w.Add(m, bytes(6));    // int8 [2,3]
  const int32_t b_h = w.Add(m, bytes(8));    // float16 [4]
  const int32_t b_p = w.Add(m, bytes(100));  // packed weights
  w.Finish(m);
  m.values = {
      {"x", DType::kFloat32, true, {-1, 3}, {"N", ""}, ValueKind::kInput, -1},
      {"w", DType::kInt8, true, {2, 3}, {"", ""}, ValueKind::kConstant, b_w},
      {"h", DType::kFloat16, true, {4}, {""}, ValueKind::kConstant, b_h},
      {"y", DType::kFloat32, false, {}, {}, ValueKind::kActivation, -1},
      {"z", DType::kInt64, true, {-1}, {"seq"}, ValueKind::kActivation, -1},
  };
  m.inputs = {0};
  m.outputs = {4};
  Step a{"gemm", "g", "Gemm", {0, 1, -1}, {3}, {b_p}, {}};
  a.params.ints = {{"m", 3}};
  a.params.floats = {{"alpha", 0.5}};
  a.params.int_lists = {{"pads", {0, 1, 0, 1}}};
  a.params.strings = {{"act", "relu"}};
  m.steps = {a, {"eltwise", "e", "Add", {3, 2}, {4}, {}, {}}};
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seed OUTPUT_FOLDER\n");
    return 2;
  }
  const std::string dir = argv[1];
  if (kiln::Status st = SaveModule(SeedModule(), dir + "/module.kiln"); !st.ok()) {
    std::fprintf(stderr, "make_seed: %s\n", st.message().c_str());
    return 1;
  }
  std::ifstream in(dir + "/module.kiln", std::ios::binary);
  const std::vector<char> file((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
  uint64_t plan_at = 0, plan_size = 0;  // header fields at bytes 16 and 24
  if (file.size() < 64) return 1;
  std::memcpy(&plan_at, file.data() + 16, 8);
  std::memcpy(&plan_size, file.data() + 24, 8);
  if (plan_at + plan_size > file.size()) return 1;
  std::ofstream(dir + "/plan.bin", std::ios::binary)
      .write(file.data() + plan_at, static_cast<std::streamsize>(plan_size));
  return 0;
}
