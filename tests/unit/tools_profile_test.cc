// The pieces behind `kiln bench` and `kiln profile`: FLOP counts from shapes, latency statistics,
// JSON strings, and the FMA-peak microkernel table. The end-to-end checks (trace loads, per-op
// times add up to the run) are in tests/e2e/test_bench_tools.py.
#include <gtest/gtest.h>

#include "ir/parser.h"
#include "kernels/peak/peak.h"
#include "lower/op_flops.h"
#include "tools/report.h"

namespace kiln::tools {
namespace {

// The one node of a parsed single-node graph.
double FlopsOf(const std::string& text) {
  auto g = ir::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return -2;
  EXPECT_EQ((*g)->nodes().size(), 1u);
  return lower::NodeFlops(*(*g)->nodes()[0]);
}

TEST(OpFlops, ConvCountsTwicePerMultiplyAdd) {
  // 2 * N * M * C/g * KH * KW * OH * OW = 2 * 2 * 8 * 3 * 3 * 3 * 5 * 5
  EXPECT_EQ(FlopsOf("graph g (opsets ai.onnx=13)\n"
                    "  input  %x: float32[2,3,7,7]\n"
                    "  input  %w: float32[8,3,3,3]\n"
                    "  %y = Conv(%x, %w) : float32[2,8,5,5]\n"
                    "  output %y: float32[2,8,5,5]\n"),
            2.0 * 2 * 8 * 3 * 3 * 3 * 5 * 5);
}

TEST(OpFlops, GroupedConvUsesChannelsPerGroup) {
  // Depthwise: g = C = M = 4, weight [4, 1, 3, 3].
  EXPECT_EQ(FlopsOf("graph g (opsets ai.onnx=13)\n"
                    "  input  %x: float32[1,4,6,6]\n"
                    "  input  %w: float32[4,1,3,3]\n"
                    "  %y = Conv(%x, %w) {group=4} : float32[1,4,4,4]\n"
                    "  output %y: float32[1,4,4,4]\n"),
            2.0 * 1 * 4 * 1 * 3 * 3 * 4 * 4);
}

TEST(OpFlops, ConvTransposeCountsInputPositions) {
  // 2 * N * C * M/g * KH * KW * IH * IW, weight [C, M/g, KH, KW] = [3, 5, 2, 2].
  EXPECT_EQ(FlopsOf("graph g (opsets ai.onnx=13)\n"
                    "  input  %x: float32[1,3,4,4]\n"
                    "  input  %w: float32[3,5,2,2]\n"
                    "  %y = ConvTranspose(%x, %w) {strides=[2,2]} : float32[1,5,8,8]\n"
                    "  output %y: float32[1,5,8,8]\n"),
            2.0 * 3 * 5 * 2 * 2 * 4 * 4);
}

TEST(OpFlops, GemmAndMatMul) {
  EXPECT_EQ(FlopsOf("graph g (opsets ai.onnx=13)\n"
                    "  input  %a: float32[3,5]\n"
                    "  input  %b: float32[5,7]\n"
                    "  %y = Gemm(%a, %b) : float32[3,7]\n"
                    "  output %y: float32[3,7]\n"),
            2.0 * 3 * 5 * 7);
  EXPECT_EQ(FlopsOf("graph g (opsets ai.onnx=13)\n"
                    "  input  %a: float32[5,3]\n"
                    "  input  %b: float32[5,7]\n"
                    "  %y = Gemm(%a, %b) {transA=1} : float32[3,7]\n"
                    "  output %y: float32[3,7]\n"),
            2.0 * 3 * 5 * 7);
  // Batched: 2 * batch * M * N * K.
  EXPECT_EQ(FlopsOf("graph g (opsets ai.onnx=13)\n"
                    "  input  %a: float32[4,3,5]\n"
                    "  input  %b: float32[5,7]\n"
                    "  %y = MatMul(%a, %b) : float32[4,3,7]\n"
                    "  output %y: float32[4,3,7]\n"),
            2.0 * 4 * 3 * 5 * 7);
}

TEST(OpFlops, OtherOpsAreZeroAndSymbolicShapesUnknown) {
  EXPECT_EQ(FlopsOf("graph g (opsets ai.onnx=13)\n"
                    "  input  %x: float32[2,3]\n"
                    "  %y = Relu(%x) : float32[2,3]\n"
                    "  output %y: float32[2,3]\n"),
            0.0);
  EXPECT_EQ(FlopsOf("graph g (opsets ai.onnx=13)\n"
                    "  input  %a: float32[N,5]\n"
                    "  input  %b: float32[5,7]\n"
                    "  %y = MatMul(%a, %b) : float32[N,7]\n"
                    "  output %y: float32[N,7]\n"),
            -1.0);
}

TEST(LatencyStats, MedianP90AndExtremes) {
  LatencyStats s = ComputeStats({5, 1, 4, 2, 3});
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.median, 3);
  EXPECT_EQ(s.p90, 5);  // nearest rank: ceil(4.5) = 5th
  EXPECT_EQ(s.max, 5);
  EXPECT_EQ(s.mean, 3);
  s = ComputeStats({4, 1, 3, 2});
  EXPECT_EQ(s.median, 2.5);
  std::vector<double> ten;
  for (int i = 1; i <= 10; ++i) ten.push_back(i);
  EXPECT_EQ(ComputeStats(ten).p90, 9);
  EXPECT_EQ(ComputeStats({}).median, 0);
  EXPECT_EQ(ComputeStats({7}).p90, 7);
}

TEST(Report, JsonStringEscapes) {
  EXPECT_EQ(JsonString("a\"b\\c\nd\x01"), "\"a\\\"b\\\\c\\nd\\u0001\"");
  EXPECT_EQ(DimsString({1, 3, -1}), "1x3x?");
  EXPECT_EQ(DimsString({}), "scalar");
}

TEST(Peak, TableRunsEveryAvailableLevel) {
  ASSERT_FALSE(peak::PeakUkernels().empty());
  EXPECT_EQ(peak::PeakUkernels()[0].isa, IsaLevel::kScalar);
  for (const peak::PeakUkernel& k : peak::PeakUkernels()) {
    if (k.isa > ActiveIsa()) continue;
    float sink = -1;
    k.fn(16, &sink);
    EXPECT_GT(sink, 0) << k.name;  // chains start at 0..11 and only grow by 1e-7 or shrink a hair
    const peak::PeakResult r = peak::MeasureF32Peak(0.001, k.isa);
    EXPECT_STREQ(r.kernel, k.name);
    EXPECT_GT(r.gflops, 0) << k.name;  // a figure, not a speed: no timing is asserted
  }
}

}  // namespace
}  // namespace kiln::tools
