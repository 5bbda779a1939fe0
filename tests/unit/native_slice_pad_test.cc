// The native Slice and Pad steps (lower/native_tensor.cc, runtime/kernels/slice_pad.cc) against
// the reference interpreter, through the harness of native_test_util.h: odd shapes, negative
// and out-of-range indices, negative steps, every pad mode, crops; and params that lie.
#include <limits>

#include "native_test_util.h"

namespace kiln {
namespace {

using namespace native_test;  // NOLINT: the harness is this file's vocabulary

std::string Ints(const char* name, const std::vector<int64_t>& v) {
  return StrCat("  const  %", name, ": int64[", v.size(), "] = ", DimsToString(v), "\n");
}

// Slice of `xt` (e.g. "float32[2,3]") with the given parameters; empty axes/steps are omitted.
std::string SliceGraph(const std::string& xt, const std::vector<int64_t>& starts,
                       const std::vector<int64_t>& ends, const std::vector<int64_t>& axes = {},
                       const std::vector<int64_t>& steps = {}) {
  std::string consts = Ints("st", starts) + Ints("en", ends);
  std::string call = "Slice(%x, %st, %en";
  if (!axes.empty() || !steps.empty()) {
    consts += Ints("ax", axes.empty() ? std::vector<int64_t>{} : axes);
    call += axes.empty() ? ", _" : ", %ax";
  }
  if (!steps.empty()) {
    consts += Ints("sp", steps);
    call += ", %sp";
  }
  return Movement(xt, call + ")", consts);
}

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(NativeSlice, MatchesReference) {
  for (const char* t : {"float32", "int64", "int32"}) {
    const std::string x = StrCat(t, "[3,5,7,4]");
    // ShuffleNet's channel split: one contiguous block.
    Check(SliceGraph(x, {0}, {2}, {1}));
    Check(SliceGraph(x, {2}, {kMax}, {1}));
    Check(SliceGraph(x, {1, 2}, {3, 6}, {0, 2}));
    Check(SliceGraph(x, {-3}, {-1}, {-2}));
    Check(SliceGraph(x, {-100, 100}, {100, -100}, {1, 3}));  // clamped: all, then none
    Check(SliceGraph(x, {0, 1}, {kMax, kMax}, {2, 3}, {2, 2}));
    Check(SliceGraph(x, {-1}, {kMin}, {2}, {-1}));  // reversed
    Check(SliceGraph(x, {5, 3}, {0, -kMax}, {1, 3}, {-2, -3}));
    Check(SliceGraph(x, {0, 0, 0, 0}, {3, 5, 7, 4}));  // everything
    Check(SliceGraph(x, {4}, {4}, {1}));               // empty
    Check(SliceGraph(x, {1}, {2}, {0}));               // one outer row
  }
  Check(SliceGraph("float32[1,116,28,28]", {58}, {116}, {1}));
  Check(SliceGraph("float32[2,64,33]", {1, 3}, {64, 30}, {1, 2}, {3, 1}));
  Check(SliceGraph("float32[9]", {8}, {-kMax}, {0}, {-4}));
  Check(SliceGraph("float32[2,3,4,5,6]", {1, 0, 1}, {-1, 6, 3}, {-4, 4, 2}, {1, 5, 1}));
  // Starts or ends computed at run time stay with the reference.
  Check(
      "graph main (opsets ai.onnx=13)\n  input  %x: float32[6]\n  input  %s: int64[1]\n"
      "  const  %e: int64[1] = [5]\n"
      "  %y = Slice(%x, %s, %e) : float32[*]  # n\n  output %y: float32[*]\n",
      0);
  // A symbolic batch: clamping happens at run time.
  Check(
      "graph main (opsets ai.onnx=13)\n  input  %x: float32[N,6,5]\n"
      "  const  %s: int64[2] = [1,-2]\n  const  %e: int64[2] = [100,100]\n"
      "  const  %a: int64[2] = [0,1]\n"
      "  %y = Slice(%x, %s, %e, %a) : float32[*]  # n\n  output %y: float32[*]\n",
      -1, false, {{{"N", 1}}, {{"N", 4}}});
}

std::string PadGraph(const std::string& xt, const std::vector<int64_t>& pads,
                     const std::string& mode, const std::string& value = "",
                     const std::vector<int64_t>& axes = {}) {
  std::string consts = Ints("p", pads);
  std::string call = "Pad(%x, %p";
  const std::string t = xt.substr(0, xt.find('['));
  if (!value.empty()) {
    consts += StrCat("  const  %v: ", t, "[] = [", value, "]\n");
    call += ", %v";
  }
  if (!axes.empty()) {
    consts += Ints("a", axes);
    call += value.empty() ? ", _, %a" : ", %a";
  }
  return "graph main (opsets ai.onnx=19)\n  input  %x: " + xt + "\n" + consts + "  %y = " + call +
         ") {mode=\"" + mode + "\"} : " + t + "[*]  # n\n  output %y: " + t + "[*]\n";
}

TEST(NativePad, MatchesReference) {
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
    for (const char* t : {"float32", "int64", "int32"}) {
      const std::string x = StrCat(t, "[2,3,5,4]");
      Check(PadGraph(x, {0, 0, 1, 2, 0, 0, 2, 1}, mode));
      Check(PadGraph(x, {0, 1, 0, 0, 1, 0, 0, 0}, mode));
      Check(PadGraph(x, {1, 0, 0, 0, 0, 2, 0, 0}, mode));
      Check(PadGraph(x, {0, 0, -1, 1, 0, 0, 2, -2}, mode));  // crops and pads
      Check(PadGraph(x, {0, 0, 0, 0, 0, 0, 0, 0}, mode));    // DenseNet's: a copy
    }
    // Pads longer than the axis (reflect and wrap repeat), a unit axis, symbolic-free axes.
    Check(PadGraph("float32[1,2,3,3]", {0, 0, 7, 5, 0, 0, 4, 6}, mode));
    Check(PadGraph("float32[2,1,6]", {0, 3, 2, 0, 2, 1}, mode));
    Check(PadGraph("float32[2,16,31,33]", {0, 0, 1, 1, 0, 0, 1, 1}, mode));
    Check(PadGraph("float32[3,5,7]", {1, 2, 3, 4}, mode, "", {-1, 0}));
  }
  Check(PadGraph("float32[2,3,5,4]", {0, 0, 1, 2, 0, 0, 2, 1}, "constant", "2.5"));
  Check(PadGraph("int64[2,3,5]", {1, 0, 1, 1, 0, 1}, "constant", "-7"));
  Check(PadGraph("int32[4,5]", {0, 1, 3, 2}, "constant", "9", {0, 1}));
  Check(PadGraph("float32[2,0,3]", {0, 1, 1, 0, 2, 1}, "constant", "1"));  // an empty input
  // Pads computed at run time stay with the reference.
  Check(
      "graph main (opsets ai.onnx=19)\n  input  %x: float32[6]\n  input  %p: int64[2]\n"
      "  %y = Pad(%x, %p) : float32[*]  # n\n  output %y: float32[*]\n",
      0);
}

// Params that lie: CreateKernel or InferShapes refuses them with a message, never crashes.
TEST(NativeSlicePadHostile, LyingParamsGiveErrors) {
  Module m;
  for (int i = 0; i < 2; ++i) {
    runtime::ValueInfo v;
    v.name = StrCat("v", i);
    v.dims = {2, 3};
    v.dim_params = {"", ""};
    m.values.push_back(v);
  }
  auto step = [](std::string kernel) {
    runtime::Step s;
    s.kernel = std::move(kernel);
    s.name = "liar";
    s.inputs = {0};
    s.outputs = {1};
    s.params.ints["rank"] = 2;
    return s;
  };
  std::vector<runtime::Step> refused;
  runtime::Step s = step("slice");  // no starts
  refused.push_back(s);
  s.params.int_lists = {{"starts", {0}}, {"ends", {1}}, {"axes", {0}}, {"steps", {0}}};
  refused.push_back(s);  // step 0
  s.params.int_lists["steps"] = {1};
  s.params.int_lists["axes"] = {2};
  refused.push_back(s);  // axis out of range
  s.params.int_lists = {{"starts", {0, 0}}, {"ends", {1, 1}}, {"axes", {1, 1}}, {"steps", {1, 1}}};
  refused.push_back(s);  // repeated axis
  s.params.int_lists["axes"] = {0};
  refused.push_back(s);  // lengths differ
  s.params.ints["rank"] = 99;
  refused.push_back(s);
  s = step("pad");
  s.params.strings["mode"] = "constant";
  s.params.int_lists["pads"] = {1, 1, 1};
  refused.push_back(s);  // 3 pads for rank 2
  s.params.int_lists["pads"] = {0, 0, kMax, 0};
  refused.push_back(s);
  s.params.int_lists["pads"] = {0, 0, 0, 0};
  s.params.strings["mode"] = "mirror";
  refused.push_back(s);
  s.params.strings.clear();
  refused.push_back(s);  // no mode
  for (const runtime::Step& r : refused) {
    auto k = runtime::CreateKernel(r, m);
    EXPECT_FALSE(k.ok()) << r.kernel;
    if (!k.ok()) {
      EXPECT_NE(k.status().message().find("liar"), std::string::npos);
    }
  }

  // Accepted params that do not fit the dims a run brings: InferShapes says so.
  const runtime::Dims x = {2, 3}, empty = {0, 3}, rank3 = {2, 3, 1};
  std::vector<std::pair<runtime::Step, const runtime::Dims*>> misfits;
  s = step("slice");
  s.params.int_lists = {{"starts", {0}}, {"ends", {1}}, {"axes", {1}}, {"steps", {1}}};
  misfits.push_back({s, &rank3});
  s = step("pad");
  s.params.strings["mode"] = "constant";
  s.params.int_lists["pads"] = {0, -2, 0, -2};  // crops 4 of 3
  misfits.push_back({s, &x});
  s.params.int_lists["pads"] = {1, 0, 0, 0};
  s.params.strings["mode"] = "reflect";
  misfits.push_back({s, &empty});  // nothing to reflect
  s.params.int_lists["pads"] = {int64_t{1} << 60, 0, int64_t{1} << 60, 0};
  s.params.strings["mode"] = "constant";
  misfits.push_back({s, &x});  // an output far too large
  std::vector<std::optional<runtime::Dims>> out;
  for (const auto& [r, dims] : misfits) {
    auto k = runtime::CreateKernel(r, m);
    ASSERT_TRUE(k.ok()) << r.kernel << ": " << k.status().message();
    const runtime::Dims* in[] = {dims};
    Status st = (*k)->InferShapes(in, &out);
    EXPECT_FALSE(st.ok()) << r.kernel;
    EXPECT_NE(st.message().find("liar"), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace kiln
