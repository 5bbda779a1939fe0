// BatchNormalization(+Relu) and the 2x2 average pool after it as one step (lower/fuse_bn_pool.h):
// which patterns fold, which must not, that the folded step computes what the interpreter does
// (odd sizes floor, a batch of two, two threads), and that hostile params are refused.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "lower/fuse_bn_pool.h"
#include "lower_test_util.h"
#include "runtime/kernel_registry.h"

namespace kiln {
namespace {

using lower_test::Compile;
using lower_test::Compiled;
using lower_test::CountKernel;
using lower_test::ExpectMatchesInterpreter;
using lower_test::RandomTensor;

std::vector<const runtime::Step*> Pooled(const runtime::Module& m) {
  std::vector<const runtime::Step*> out;
  for (const runtime::Step& s : m.steps)
    if (s.kernel == "batchnorm" && s.params.IntOr("avgpool2x2", 0) == 1) out.push_back(&s);
  return out;
}

// x [n, 3, h, w] -> BatchNormalization (-> Relu) -> AveragePool `pool_attrs`, output dims `out`.
std::string Graph(int64_t n, int64_t h, int64_t w, bool relu, const std::string& pool_attrs,
                  const std::string& out, bool bn_output) {
  const std::string t = "float32[" + std::to_string(n) + ",3," + std::to_string(h) + "," +
                        std::to_string(w) + "]";
  std::string s =
      "graph main (opsets ai.onnx=13)\n"
      "  input  %x: " + t + "\n"
      "  const  %scale: float32[3] = [0.5,-1.25,2]\n"
      "  const  %bias: float32[3] = [0.1,0.3,-0.2]\n"
      "  const  %mean: float32[3] = [0.2,-0.1,0.05]\n"
      "  const  %var: float32[3] = [1.5,0.4,2.5]\n"
      "  %b = BatchNormalization(%x, %scale, %bias, %mean, %var) : " + t + "  # bn\n";
  s += relu ? "  %r = Relu(%b) : " + t + "  # relu\n" : "";
  s += "  %y = AveragePool(" + std::string(relu ? "%r" : "%b") + ") {" + pool_attrs + "} : " +
       out + "  # pool\n  output %y: " + out + "\n";
  if (bn_output) s += "  output %" + std::string(relu ? "r" : "b") + ": " + t + "\n";
  return s;
}

TEST(LowerFuseBnPool, BatchNormReluPoolIsOneStep) {
  for (int64_t n : {1, 2}) {
    for (bool relu : {true, false}) {
      SCOPED_TRACE(testing::Message() << "batch " << n << " relu " << relu);
      // 7x9 floors to 3x4.
      const std::string out = "float32[" + std::to_string(n) + ",3,3,4]";
      Compiled c = Compile(Graph(n, 7, 9, relu, "kernel_shape=[2,2], strides=[2,2]", out, false));
      ASSERT_TRUE(c.module);
      const auto fused = Pooled(*c.module);
      ASSERT_EQ(fused.size(), 1u);
      EXPECT_EQ(CountKernel(*c.module, "avgpool2d"), 0u);
      EXPECT_EQ(c.module->steps.size(), 1u);
      EXPECT_TRUE(c.module->Validate().ok());
      ExpectMatchesInterpreter(c, RandomTensor({n, 3, 7, 9}, 5 + static_cast<uint32_t>(n)));
    }
  }
  // A wide row: more columns than one pass of the kernel's column buffer.
  Compiled c = Compile(Graph(1, 4, 600, true, "kernel_shape=[2,2], strides=[2,2]",
                             "float32[1,3,2,300]", false));
  ASSERT_TRUE(c.module);
  EXPECT_EQ(Pooled(*c.module).size(), 1u);
  ExpectMatchesInterpreter(c, RandomTensor({1, 3, 4, 600}, 9));
}

TEST(LowerFuseBnPool, OtherPoolsAndSharedValuesDoNotFold) {
  struct Case {
    const char* attrs;
    const char* out;
    bool bn_output;
  };
  const Case cases[] = {
      {"kernel_shape=[3,3], strides=[2,2]", "float32[1,3,3,4]", false},
      {"kernel_shape=[2,2], strides=[1,1]", "float32[1,3,7,8]", false},
      {"kernel_shape=[2,2], pads=[1,1,1,1], strides=[2,2]", "float32[1,3,5,5]", false},
      {"ceil_mode=1, kernel_shape=[2,2], strides=[2,2]", "float32[1,3,4,5]", false},
      {"kernel_shape=[2,2], strides=[2,2]", "float32[1,3,4,4]", true},  // BN+Relu read twice
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.attrs);
    Compiled c = Compile(Graph(1, 8, 9, true, k.attrs, k.out, k.bn_output));
    ASSERT_TRUE(c.module);
    EXPECT_TRUE(Pooled(*c.module).empty());
    EXPECT_EQ(CountKernel(*c.module, "avgpool2d"), 1u);
    ExpectMatchesInterpreter(c, RandomTensor({1, 3, 8, 9}, 11));
  }
}

TEST(LowerFuseBnPool, TurnedOffByEnvironment) {
  setenv("KILN_FUSE_BN_POOL", "0", 1);
  EXPECT_FALSE(lower::BnPoolFusionEnabled());
  Compiled c = Compile(
      Graph(1, 8, 8, true, "kernel_shape=[2,2], strides=[2,2]", "float32[1,3,4,4]", false));
  unsetenv("KILN_FUSE_BN_POOL");
  ASSERT_TRUE(c.module);
  EXPECT_TRUE(Pooled(*c.module).empty());
}

TEST(LowerFuseBnPool, HostileParamsAreRefused) {
  Compiled c = Compile(
      Graph(1, 8, 8, true, "kernel_shape=[2,2], strides=[2,2]", "float32[1,3,4,4]", false));
  ASSERT_TRUE(c.module);
  const auto fused = Pooled(*c.module);
  ASSERT_EQ(fused.size(), 1u);
  runtime::Step step = *fused[0];
  ASSERT_TRUE(runtime::CreateKernel(step, *c.module).ok());
  runtime::Step bad = step;
  bad.params.ints["avgpool2x2"] = 2;
  EXPECT_FALSE(runtime::CreateKernel(bad, *c.module).ok());
  bad = step;
  bad.params.strings["activation"] = "silu";  // only none or relu pool
  EXPECT_FALSE(runtime::CreateKernel(bad, *c.module).ok());

  // An input below 2x2 or not 4-D is an error of InferShapes, not a read past a buffer.
  auto k = runtime::CreateKernel(step, *c.module);
  ASSERT_TRUE(k.ok());
  using runtime::Dims;
  std::vector<std::optional<Dims>> out;
  const Dims small{1, 3, 1, 8}, flat{1, 3, 64}, fine{1, 3, 5, 7};
  const Dims* s1[] = {&small};
  EXPECT_FALSE((*k)->InferShapes(s1, &out).ok());
  const Dims* s2[] = {&flat};
  EXPECT_FALSE((*k)->InferShapes(s2, &out).ok());
  const Dims* s3[] = {&fine};
  ASSERT_TRUE((*k)->InferShapes(s3, &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(*out[0], (Dims{1, 3, 2, 3}));
}

}  // namespace
}  // namespace kiln
