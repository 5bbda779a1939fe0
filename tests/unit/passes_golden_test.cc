// Golden pass tests: every tests/passes/<pass>/*.txt holds "# RUN: passes=a,b", an "# INPUT" IR
// text and the "# EXPECTED" text that running the passes on it must print. Each case also checks
// that the expected text round-trips through the parser, that a second run changes nothing, and
// that the reference interpreter gives the same outputs before and after on seeded random inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

struct GoldenCase {
  std::string passes, input, expected;
};

std::vector<std::string> GoldenFiles() {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(KILN_SOURCE_DIR) / "tests/passes"))
    if (e.is_regular_file() && e.path().extension() == ".txt") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

GoldenCase ReadCase(const std::string& path) {
  std::ifstream in(path);
  GoldenCase c;
  std::string line, *section = nullptr;
  while (std::getline(in, line)) {
    if (line.rfind("# RUN: passes=", 0) == 0)
      c.passes = line.substr(14);
    else if (line == "# INPUT")
      section = &c.input;
    else if (line == "# EXPECTED")
      section = &c.expected;
    else if (section && !(line.rfind("#", 0) == 0))
      *section += line + '\n';
  }
  return c;
}

Status RunPasses(ir::Graph& g, const std::string& list) {
  passes::PassManagerOptions opts;
  opts.verify = true;
  passes::PassManager pm(opts);
  std::stringstream names(list);
  for (std::string name; std::getline(names, name, ',');) {
    auto p = passes::CreatePassByName(name);
    if (!p.ok()) return p.status();
    pm.Add(std::move(p).value());
  }
  return pm.Run(g);
}

// Seeded inputs: floats in [-1,1], integers in [0,3), bools; symbolic dims are 2.
interp::NamedTensors RandomInputs(const ir::Graph& g, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> real(-1.f, 1.f);
  interp::NamedTensors inputs;
  for (const ir::Value* v : g.inputs) {
    std::vector<int64_t> dims;
    for (const ir::Dim& d : *v->type.shape) dims.push_back(d.is_static() ? d.value : 2);
    Tensor t(v->type.dtype, dims);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (t.dtype() == DType::kFloat32)
        t.data<float>()[i] = real(rng);
      else if (t.dtype() == DType::kBool)
        t.data<bool>()[i] = rng() & 1;
      else if (t.dtype() == DType::kInt64)
        t.data<int64_t>()[i] = rng() % 3;
    }
    inputs[v->name] = t;
  }
  return inputs;
}

class PassGolden : public testing::TestWithParam<std::string> {};

TEST_P(PassGolden, MatchesExpectedAndKeepsNumbers) {
  const GoldenCase c = ReadCase(GetParam());
  ASSERT_FALSE(c.passes.empty()) << "no '# RUN: passes=' line";
  ASSERT_FALSE(c.expected.empty()) << "no '# EXPECTED' section";

  auto expected = ir::ParseGraph(c.expected);
  ASSERT_TRUE(expected.ok()) << expected.status().message();
  EXPECT_EQ(ir::PrintGraph(**expected), c.expected) << "the expected text does not round-trip";

  auto before = ir::ParseGraph(c.input);
  auto after = ir::ParseGraph(c.input);
  ASSERT_TRUE(before.ok()) << before.status().message();
  ASSERT_TRUE(after.ok());
  Status st = RunPasses(**after, c.passes);
  ASSERT_TRUE(st.ok()) << st.message();
  const std::string printed = ir::PrintGraph(**after);
  EXPECT_EQ(printed, c.expected);

  st = RunPasses(**after, c.passes);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(ir::PrintGraph(**after), printed) << "a second run changed the graph";

  for (uint32_t seed : {1u, 2u}) {
    SCOPED_TRACE(StrCat("input seed ", seed));
    const interp::NamedTensors inputs = RandomInputs(**before, seed);
    std::vector<Tensor> want, got;
    st = interp::Run(**before, inputs, &want);
    ASSERT_TRUE(st.ok()) << "before: " << st.message();
    st = interp::Run(**after, inputs, &got);
    ASSERT_TRUE(st.ok()) << "after: " << st.message();
    ASSERT_EQ(want.size(), got.size());
    for (size_t k = 0; k < want.size(); ++k) {
      ASSERT_EQ(want[k].dims(), got[k].dims()) << "output " << k;
      ASSERT_EQ(want[k].dtype(), got[k].dtype()) << "output " << k;
      for (int64_t i = 0; i < want[k].numel(); ++i) {
        const double a = want[k].AsDouble(i), b = got[k].AsDouble(i);
        ASSERT_LE(std::fabs(a - b), 1e-5 * std::max(std::fabs(a), std::fabs(b)) + 1e-6)
            << "output " << k << " element " << i << ": " << a << " vs " << b;
      }
    }
  }
}

std::string CaseName(const testing::TestParamInfo<std::string>& info) {
  fs::path p(info.param);
  std::string name = p.parent_path().filename().string() + "_" + p.stem().string();
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Files, PassGolden, testing::ValuesIn(GoldenFiles()), CaseName);

// Every pass has golden cases of its own (at least one that fires and one that must not).
TEST(PassGoldenCoverage, EveryPassHasCases) {
  for (const std::string& name : passes::PassNames()) {
    int cases = 0;
    for (const std::string& f : GoldenFiles())
      if (fs::path(f).parent_path().filename() == name) ++cases;
    EXPECT_GE(cases, 2) << name;
  }
}

// `kiln opt` is the same driver from the command line.
TEST(KilnOpt, RunsPassesOnAFile) {
  const GoldenCase c =
      ReadCase(std::string(KILN_SOURCE_DIR) + "/tests/passes/dead_code_elimination/fires.txt");
  const std::string file = (fs::temp_directory_path() / "kiln_opt_test_in.txt").string();
  const std::string out = (fs::temp_directory_path() / "kiln_opt_test_out.txt").string();
  std::ofstream(file) << c.input;
  const std::string cmd =
      StrCat(KILN_BINARY, " opt ", file, " --passes=dead_code_elimination --verify > ", out);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), c.expected);
}

}  // namespace
}  // namespace kiln
