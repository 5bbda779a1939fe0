// The "conv2d" step kernel: a 2-D float convolution whose weights lower/native_conv.cc prepared.
//
// The PreparedConv is rebuilt as a view of the module's blobs (which may be an mmap of a .kiln
// file), so loading copies no weights; every param and blob size is checked first, since a module
// file may be hostile. When the prepared algorithm runs on NCHWc, Run reorders an NCHW input
// into the workspace (not for kStemNchwc, which reads NCHW: "layout_in" must stay 0 there),
// convolves there and reorders the output back, except for a side that
// lowering's layout plan (lower/layout.h) already keeps blocked: params "layout_in" /
// "layout_out" = the block, and that value is [N, ceil(C/c), H, W, c], read or written in place.
//
// PreparedConv fixes the batch size, but nothing else depends on it: the kernel keeps a second
// view prepared for one image and runs a batch of any other size an image at a time.
//
// With params "residual" = 1 (lower/fuse_residual.h) the step has a second input Z of Y's dims
// and layout and computes Y = act(conv(X) + bias + Z): the conv accumulates onto Z, which the
// memory plan may give Y's buffer (InPlace), so ResNet's Add and Relu cost no pass of their own.
#include "kernels/conv/conv.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <tuple>

#include "kernels/conv/layout.h"
#include "runtime/kernels/families.h"
#include "runtime/kernels/prepacked_params.h"

namespace kiln::runtime {
namespace {

constexpr size_t kFloatsPerLine = 16;  // workspace parts start on 64-byte lines

size_t RoundUp(size_t floats) {
  return (floats + kFloatsPerLine - 1) / kFloatsPerLine * kFloatsPerLine;
}

using prepacked::ReadActivation;
using prepacked::SizeParam;
using prepacked::StepBlob;

Expected<conv::Algorithm> ReadAlgorithm(const StepParams& params) {
  KILN_ASSIGN_OR_RETURN(std::string name, params.String("algorithm"));
  const std::optional<conv::Algorithm> a = conv::AlgorithmFromName(name);
  if (!a || *a == conv::Algorithm::kAuto) {
    return Status::Error("unknown conv algorithm '", name, "'");
  }
  return *a;
}

class ConvKernel final : public StepKernel {
 public:
  ConvKernel(std::string name, conv::PreparedConv batch, conv::PreparedConv single,
             gemm::Epilogue ep, bool in_blocked, bool out_blocked, bool residual)
      : name_(std::move(name)),
        batch_(std::move(batch)),
        single_(std::move(single)),
        ep_(ep),
        in_blocked_(in_blocked),
        out_blocked_(out_blocked),
        residual_(residual) {}

  Status InferShapes(std::span<const Dims* const> inputs,
                     std::vector<std::optional<Dims>>* outputs) const override {
    KILN_RETURN_IF_ERROR(CheckInput(inputs));
    const int64_t n = (*inputs[0])[0];
    if (residual_ && (inputs.size() != 2 || !inputs[1] || !OutputIs(*inputs[1], n))) {
      return Status::Error("step '", name_, "' (conv2d): the residual input Z is ",
                           inputs.size() == 2 && inputs[1] ? DimsToString(*inputs[1]) : "missing",
                           " but Y is ", DimsToString(OutputDims(n)), "; they must match");
    }
    outputs->assign(1, OutputDims(n));
    return Status::Ok();
  }

  // Y may be Z's buffer: every element of Z is read (into the sum) before Y's is written.
  std::vector<std::pair<int, int>> InPlace() const override {
    if (!residual_) return {};
    return {{0, 1}};
  }

  size_t WorkspaceBytes(std::span<const Dims* const> inputs, size_t threads) const override {
    if (!CheckInput(inputs).ok()) return 0;
    return WorkspaceFloats(static_cast<size_t>((*inputs[0])[0]), threads) * sizeof(float);
  }

  Status Run(const StepArgs& args) const override {
    const size_t inputs = residual_ ? 2 : 1;
    if (args.inputs.size() != inputs || args.outputs.size() != 1 || !args.inputs[0] ||
        (residual_ && !args.inputs[1]) || !args.outputs[0]) {
      return Status::Error("step '", name_, "' (conv2d) takes ", residual_ ? "two inputs (X, Z)" : "one input",
                           " and one output");
    }
    const Tensor& x = *args.inputs[0];
    Tensor& y = *args.outputs[0];
    // Checked without building dims: a run at a planned shape must not allocate.
    const Dims* in[] = {&x.dims()};
    KILN_RETURN_IF_ERROR(CheckInput(in));
    if (x.dtype() != DType::kFloat32 || y.dtype() != DType::kFloat32 ||
        !OutputIs(y.dims(), x.dims()[0])) {
      return Status::Error("step '", name_, "' (conv2d): got X ", DescribeTensor(x), " and Y ",
                           DescribeTensor(y), ", expected float32 and Y ",
                           DimsToString(OutputDims(x.dims()[0])));
    }
    const Tensor* z = residual_ ? args.inputs[1] : nullptr;
    if (z && (z->dtype() != DType::kFloat32 || !OutputIs(z->dims(), x.dims()[0]))) {
      return Status::Error("step '", name_, "' (conv2d): the residual input Z is ",
                           DescribeTensor(*z), "; expected float32 ",
                           DimsToString(OutputDims(x.dims()[0])));
    }
    const size_t n = static_cast<size_t>(x.dims()[0]), threads = ThreadCount(args.pool);
    const size_t need = WorkspaceFloats(n, threads) * sizeof(float);
    if (need > 0 && (!args.workspace || args.workspace_bytes < need)) {
      return Status::Error("step '", name_, "' (conv2d) needs ", need, " workspace bytes for ",
                           threads, " threads, got ", args.workspace_bytes);
    }
    if (n == 0) return Status::Ok();
    // The whole batch at once when it is the compiled one, else one image at a time.
    const bool whole = n == batch_.params().n;
    const conv::PreparedConv& conv = whole ? batch_ : single_;
    const size_t images = whole ? 1 : n;
    const conv::ConvParams& p = conv.params();
    // One image of each side: a blocked side holds C padded to whole blocks.
    const size_t cb = conv.block();
    const size_t x_step = in_blocked_ ? conv::NchwcSize(p.n, p.c, p.h, p.w, cb)
                                      : p.n * p.c * p.h * p.w;
    const size_t y_step = out_blocked_ ? conv::NchwcSize(p.n, p.m, p.out_h(), p.out_w(), cb)
                                       : p.n * p.m * p.out_h() * p.out_w();
    for (size_t i = 0; i < images; ++i) {
      Status s = RunOnce(conv, x.data<float>() + i * x_step, z ? z->data<float>() + i * y_step : nullptr,
                         y.data<float>() + i * y_step, reinterpret_cast<float*>(args.workspace),
                         args.pool);
      if (!s.ok()) return s.WithContext(StrCat("step '", name_, "' (conv2d): "));
    }
    return Status::Ok();
  }

  std::string Describe() const override {
    std::string algo = conv::AlgorithmName(batch_.algorithm());
    if (batch_.block() > 1) algo += std::to_string(batch_.block());
    const char* io = in_blocked_ ? (out_blocked_ ? " (blocked in/out)" : " (blocked in)")
                                 : (out_blocked_ ? " (blocked out)" : "");
    return StrCat("conv2d ", algo, " ", IsaName(batch_.isa()), io);
  }

 private:
  Status CheckInput(std::span<const Dims* const> inputs) const {
    const conv::ConvParams& p = batch_.params();
    if (inputs.empty() || inputs.size() > (residual_ ? 2u : 1u) || !inputs[0]) {
      return Status::Error("step '", name_, "' (conv2d) takes ",
                           residual_ ? "two inputs, X and Z" : "one input, X");
    }
    const Dims& x = *inputs[0];
    const auto b = static_cast<int64_t>(batch_.block());
    const auto c = static_cast<int64_t>(p.c), h = static_cast<int64_t>(p.h),
               w = static_cast<int64_t>(p.w);
    const int64_t cb = (c + b - 1) / b;  // a blocked side pads C to whole blocks
    const bool fits =
        in_blocked_ ? x.size() == 5 && x[1] == cb && x[4] == b : x.size() == 4 && x[1] == c;
    if (!fits || x[0] < 0 || x[2] != h || x[3] != w) {
      const Dims want = in_blocked_ ? Dims{x.empty() ? 0 : x[0], cb, h, w, b}
                                    : Dims{x.empty() ? 0 : x[0], c, h, w};
      return Status::Error("step '", name_, "' (conv2d): input X is ", DimsToString(x),
                           " but the step was compiled for ", DimsToString(want),
                           " (any N); recompile the model for this shape");
    }
    // Keeps every offset of Run inside size_t (the per-image tensors are already bounded).
    if (static_cast<uint64_t>(x[0]) > (uint64_t{1} << 24)) {
      return Status::Error("step '", name_, "' (conv2d): batch ", x[0], " is too large");
    }
    return Status::Ok();
  }

  // Y's dims for a batch of n, in a fixed array so that Run can check them without allocating.
  std::span<const int64_t> OutputShape(int64_t n, std::array<int64_t, 5>* d) const {
    const conv::ConvParams& p = batch_.params();
    const auto m = static_cast<int64_t>(p.m), b = static_cast<int64_t>(batch_.block());
    const auto oh = static_cast<int64_t>(p.out_h()), ow = static_cast<int64_t>(p.out_w());
    *d = out_blocked_ ? std::array<int64_t, 5>{n, (m + b - 1) / b, oh, ow, b}
                      : std::array<int64_t, 5>{n, m, oh, ow, 0};
    return {d->data(), out_blocked_ ? 5u : 4u};
  }
  Dims OutputDims(int64_t n) const {
    std::array<int64_t, 5> d;
    const auto shape = OutputShape(n, &d);
    return Dims(shape.begin(), shape.end());
  }
  bool OutputIs(const Dims& y, int64_t n) const {
    std::array<int64_t, 5> d;
    const auto shape = OutputShape(n, &d);
    return std::equal(y.begin(), y.end(), shape.begin(), shape.end());
  }

  // Scratch for `n` images: the conv's own, then (NCHWc only) the reordered input and output.
  size_t WorkspaceFloats(size_t n, size_t threads) const {
    const bool whole = n == batch_.params().n;
    const conv::PreparedConv& conv = whole ? batch_ : single_;
    const conv::ConvParams& p = conv.params();
    size_t floats = RoundUp(conv.WorkspaceSize(threads));
    if (conv.input_layout() == conv::Layout::kNchwc && !in_blocked_)
      floats += RoundUp(conv::NchwcSize(p.n, p.c, p.h, p.w, conv.block()));
    if (conv.block() > 1 && !out_blocked_)
      floats += RoundUp(conv::NchwcSize(p.n, p.m, p.out_h(), p.out_w(), conv.block()));
    return floats;
  }

  // z: null, or the residual in Y's layout (possibly Y's own buffer).
  Status RunOnce(const conv::PreparedConv& conv, const float* x, const float* z, float* y,
                 float* ws, ThreadPool* pool) const {
    const conv::ConvParams& p = conv.params();
    conv::RunOptions o;
    o.epilogue = ep_;
    o.pool = pool;
    o.accumulate = z != nullptr;
    const size_t conv_ws = RoundUp(conv.WorkspaceSize(ThreadCount(pool)));
    o.workspace = conv_ws > 0 ? ws : nullptr;
    const size_t y_floats = conv.block() > 1 && out_blocked_
                                ? conv::NchwcSize(p.n, p.m, p.out_h(), p.out_w(), conv.block())
                                : p.n * p.m * p.out_h() * p.out_w();
    // The conv adds onto Y, so Y starts as Z (unless the plan made them one buffer). An NCHW Y
    // of a blocked conv starts as Z reordered, below.
    if (z && z != y && (conv.block() == 1 || out_blocked_)) {
      std::memcpy(y, z, y_floats * sizeof(float));
    }
    if (conv.block() == 1) return conv::Run(conv, x, y, o);
    const size_t b = conv.block();
    float* next = ws + conv_ws;
    const float* xc = x;
    float* yc = y;
    if (conv.input_layout() == conv::Layout::kNchwc && !in_blocked_) {
      float* part = next;
      next += RoundUp(conv::NchwcSize(p.n, p.c, p.h, p.w, b));
      conv::NchwToNchwc(p.n, p.c, p.h, p.w, b, x, part, pool);
      xc = part;
    }
    if (!out_blocked_) {
      yc = next;
      if (z) conv::NchwToNchwc(p.n, p.m, p.out_h(), p.out_w(), b, z, yc, pool);
    }
    KILN_RETURN_IF_ERROR(conv::Run(conv, xc, yc, o));
    if (!out_blocked_) conv::NchwcToNchw(p.n, p.m, p.out_h(), p.out_w(), b, yc, y, pool);
    return Status::Ok();
  }

  std::string name_;
  conv::PreparedConv batch_;       // for the compiled batch size
  conv::PreparedConv single_;      // the same weights for one image
  gemm::Epilogue ep_;              // bias points into the module's weights
  bool in_blocked_, out_blocked_;  // X / Y are NCHWc module values: no reorder in Run
  bool residual_;                  // a second input Z: Y = act(conv(X) + bias + Z)
};

Expected<std::unique_ptr<StepKernel>> CreateConv(const Step& step, const Module& module) {
  const StepParams& sp = step.params;
  constexpr int64_t kMax = int64_t{1} << 24;  // conv::ValidateParams' bound
  conv::PreparedConvParts parts;
  conv::ConvParams& p = parts.params;
  struct Field {
    const char* key;
    size_t* dst;
    int64_t lo;
  };
  const Field fields[] = {{"n", &p.n, 1},
                          {"c", &p.c, 1},
                          {"h", &p.h, 1},
                          {"w", &p.w, 1},
                          {"m", &p.m, 1},
                          {"kh", &p.kh, 1},
                          {"kw", &p.kw, 1},
                          {"stride_h", &p.stride_h, 1},
                          {"stride_w", &p.stride_w, 1},
                          {"pad_top", &p.pad_top, 0},
                          {"pad_left", &p.pad_left, 0},
                          {"pad_bottom", &p.pad_bottom, 0},
                          {"pad_right", &p.pad_right, 0},
                          {"dilation_h", &p.dilation_h, 1},
                          {"dilation_w", &p.dilation_w, 1},
                          {"groups", &p.groups, 1},
                          {"block", &parts.block, 1}};
  for (const Field& f : fields) {
    KILN_ASSIGN_OR_RETURN(*f.dst, SizeParam(sp, f.key, f.lo, kMax));
  }
  KILN_RETURN_IF_ERROR(conv::ValidateParams(p));
  KILN_ASSIGN_OR_RETURN(parts.algorithm, ReadAlgorithm(sp));
  KILN_ASSIGN_OR_RETURN(std::string isa_name, sp.String("isa"));
  KILN_ASSIGN_OR_RETURN(parts.isa, ParseIsa(isa_name));
  KILN_ASSIGN_OR_RETURN(size_t has_bias, SizeParam(sp, "has_bias", 0, 1));
  const int64_t residual = sp.IntOr("residual", 0);
  if (residual != 0 && residual != 1) {
    return Status::Error("step parameter 'residual' = ", residual, " is outside [0, 1]");
  }
  if (step.blobs.size() != 1 + has_bias || step.inputs.size() != static_cast<size_t>(1 + residual) ||
      step.outputs.size() != 1) {
    return Status::Error("conv2d takes ", 1 + residual, " input(s), one output and ", 1 + has_bias,
                         " blobs (weights, bias); the step has ", step.inputs.size(), ", ",
                         step.outputs.size(), " and ", step.blobs.size());
  }
  if (residual && !conv::SupportsAccumulate(parts.algorithm)) {
    return Status::Error("conv2d: a residual input needs an algorithm that accumulates; ",
                         conv::AlgorithmName(parts.algorithm), " does not");
  }
  gemm::Epilogue ep;
  KILN_RETURN_IF_ERROR(ReadActivation(sp, &ep));
  // A blocked side is in the conv's own block (its last block may be padded).
  const int64_t layout_in = sp.IntOr("layout_in", 0), layout_out = sp.IntOr("layout_out", 0);
  const auto block = static_cast<int64_t>(parts.block);
  for (auto [key, v] : {std::tuple{"layout_in", layout_in}, std::tuple{"layout_out", layout_out}}) {
    if (v != 0 && (block < 2 || v != block)) {
      return Status::Error("step parameter '", key, "' = ", v, " does not fit block ", block);
    }
  }

  if (parts.algorithm == conv::Algorithm::kStemNchwc && layout_in != 0) {
    return Status::Error("step parameter 'layout_in' = ", layout_in, ": ",
                         conv::AlgorithmName(parts.algorithm), " reads NCHW");
  }

  KILN_ASSIGN_OR_RETURN(std::span<const std::byte> w, StepBlob(step, module, 0));
  const std::shared_ptr<const void>& owner = module.weights_owner;
  if (parts.algorithm == conv::Algorithm::kGemm1x1 ||
      parts.algorithm == conv::Algorithm::kIm2colGemm ||
      parts.algorithm == conv::Algorithm::kWinograd) {
    // One packed A per group (kWinograd: per transform point), back to back, all the same size;
    // a blocked Winograd's are packed B of C x M rounded up to the block (U[p]^T).
    const bool wino = parts.algorithm == conv::Algorithm::kWinograd;
    const bool as_b = wino && parts.block > 1;
    const size_t count = wino ? conv::kWinogradMatrices : p.groups;
    const size_t cb = std::max<size_t>(parts.block, 1);
    const size_t mg = as_b ? (p.c + cb - 1) / cb * cb : p.m / p.groups;
    const size_t k = as_b ? (p.m + cb - 1) / cb * cb : wino ? p.c : p.c / p.groups * p.kh * p.kw;
    KILN_ASSIGN_OR_RETURN(size_t panel, SizeParam(sp, "panel", 1, 64));
    KILN_ASSIGN_OR_RETURN(std::string packed_isa_name, sp.String("packed_isa"));
    KILN_ASSIGN_OR_RETURN(IsaLevel packed_isa, ParseIsa(packed_isa_name));
    if (w.size() % count != 0) {
      return Status::Error("the weight blob's ", w.size(), " bytes do not split into ", count,
                           " packed matrices");
    }
    const size_t group_bytes = w.size() / count;
    for (size_t g = 0; g < count; ++g) {
      const auto* data = reinterpret_cast<const float*>(w.data() + g * group_bytes);
      auto view =
          gemm::PackedMatrix::View(!as_b, mg, k, panel, packed_isa, data, group_bytes, owner);
      if (!view.ok()) return view.status().WithContext(StrCat("group ", g, ": "));
      parts.packed.push_back(std::move(view).value());
    }
  } else {
    if (w.size() % sizeof(float) != 0) {
      return Status::Error("the weight blob's ", w.size(), " bytes are not whole floats");
    }
    parts.weights = reinterpret_cast<const float*>(w.data());
    parts.weight_floats = w.size() / sizeof(float);
  }
  if (has_bias) {
    KILN_ASSIGN_OR_RETURN(std::span<const std::byte> b, StepBlob(step, module, 1));
    if (b.size() != p.m * sizeof(float) ||
        reinterpret_cast<uintptr_t>(b.data()) % alignof(float) != 0) {
      return Status::Error("the bias blob has ", b.size(), " bytes; ", p.m,
                           " output channels need ", p.m * sizeof(float));
    }
    ep.bias_kind = gemm::BiasKind::kPerRow;
    ep.bias = reinterpret_cast<const float*>(b.data());
  }
  conv::PreparedConvParts one = parts;
  one.params.n = 1;
  KILN_ASSIGN_OR_RETURN(conv::PreparedConv batch, conv::ViewPreparedConv(std::move(parts), owner));
  KILN_ASSIGN_OR_RETURN(conv::PreparedConv single, conv::ViewPreparedConv(std::move(one), owner));
  return std::unique_ptr<StepKernel>(new ConvKernel(step.name, std::move(batch), std::move(single),
                                                    ep, layout_in != 0, layout_out != 0,
                                                    residual != 0));
}

constexpr KernelEntry kConvKernels[] = {{"conv2d", CreateConv}};

}  // namespace

std::span<const KernelEntry> ConvKernels() { return kConvKernels; }

}  // namespace kiln::runtime
