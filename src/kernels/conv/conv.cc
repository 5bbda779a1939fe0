// Parameter checks, the algorithm choice, and dispatch to the drivers in this folder.
#include "kernels/conv/conv.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <tuple>

#include "kernels/conv/conv_ukernels.h"
#include "kernels/conv/drivers.h"
#include "kernels/conv/layout.h"
#include "kernels/gemm/ukernel_table.h"
#include "kernels/winograd/winograd.h"

namespace kiln::conv {

static_assert(kWinogradMatrices == winograd::kPoints);

namespace {

constexpr size_t kMaxDim = size_t{1} << 24;  // keeps every product below in range

size_t Extent(size_t in, size_t pad_a, size_t pad_b, size_t k, size_t dil, size_t stride) {
  const size_t window = (k - 1) * dil + 1;
  return (in + pad_a + pad_b - window) / stride + 1;
}

IsaLevel Capped(std::optional<IsaLevel> cap) {
  return cap && *cap < ActiveIsa() ? *cap : ActiveIsa();
}

}  // namespace

size_t ConvParams::out_h() const {
  return Extent(h, pad_top, pad_bottom, kh, dilation_h, stride_h);
}
size_t ConvParams::out_w() const {
  return Extent(w, pad_left, pad_right, kw, dilation_w, stride_w);
}

double ConvParams::Flops() const {
  return 2.0 * static_cast<double>(n) * static_cast<double>(m) * static_cast<double>(c / groups) *
         static_cast<double>(kh * kw) * static_cast<double>(out_h() * out_w());
}

std::string ConvParams::Describe() const {
  return StrCat("N=", n, " C=", c, " H=", h, " W=", w, " M=", m, " k=", kh, "x", kw,
                " s=", stride_h, "x", stride_w, " pads=", pad_top, ",", pad_left, ",", pad_bottom,
                ",", pad_right, " d=", dilation_h, "x", dilation_w, " g=", groups);
}

Status ValidateParams(const ConvParams& p) {
  const size_t dims[] = {p.n,
                         p.c,
                         p.h,
                         p.w,
                         p.m,
                         p.kh,
                         p.kw,
                         p.stride_h,
                         p.stride_w,
                         p.dilation_h,
                         p.dilation_w,
                         p.groups,
                         p.pad_top + 1,
                         p.pad_left + 1,
                         p.pad_bottom + 1,
                         p.pad_right + 1};
  for (size_t d : dims) {
    if (d == 0 || d > kMaxDim) {
      return Status::Error("conv: sizes must lie in [1, 2^24] (pads in [0, 2^24)): ", p.Describe());
    }
  }
  if (p.c % p.groups != 0 || p.m % p.groups != 0) {
    return Status::Error("conv: groups must divide C and M: ", p.Describe());
  }
  if ((p.kh - 1) * p.dilation_h + 1 > p.h + p.pad_top + p.pad_bottom ||
      (p.kw - 1) * p.dilation_w + 1 > p.w + p.pad_left + p.pad_right) {
    return Status::Error("conv: the dilated window is larger than the padded input: ",
                         p.Describe());
  }
  // Every tensor (input, output, weights, an im2col panel) must stay below 2^62 floats.
  const double limit = std::ldexp(1.0, 62);
  const double oh = static_cast<double>(p.out_h()), ow = static_cast<double>(p.out_w());
  const double n = static_cast<double>(p.n), c = static_cast<double>(p.c) + 16,
               m = static_cast<double>(p.m) + 16;
  const double k = c * static_cast<double>(p.kh * p.kw);
  if (n * c * static_cast<double>(p.h) * static_cast<double>(p.w) > limit ||
      n * m * oh * ow > limit || m * k > limit || k * oh * ow > limit) {
    return Status::Error("conv: tensors too large: ", p.Describe());
  }
  return Status::Ok();
}

const char* AlgorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kGemm1x1:
      return "gemm1x1";
    case Algorithm::kIm2colGemm:
      return "im2col_gemm";
    case Algorithm::kDirectNchwc:
      return "direct_nchwc";
    case Algorithm::kDepthwise:
      return "depthwise";
    case Algorithm::kWinograd:
      return "winograd";
    case Algorithm::kGroupedDirect:
      return "grouped_direct";
    case Algorithm::kStemNchwc:
      return "stem_nchwc";
  }
  return "?";
}

std::optional<Algorithm> AlgorithmFromName(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(Algorithm::kStemNchwc); ++i) {
    const auto a = static_cast<Algorithm>(i);
    if (name == AlgorithmName(a)) return a;
  }
  return std::nullopt;
}

bool Supports(Algorithm a, const ConvParams& p) {
  switch (a) {
    case Algorithm::kAuto:
    case Algorithm::kIm2colGemm:
      return true;
    case Algorithm::kGemm1x1:
      // Any stride: a strided 1x1 gathers its subsampled input first (gemm_paths.cc).
      return p.kh == 1 && p.kw == 1 && p.pad_top == 0 && p.pad_left == 0 && p.pad_bottom == 0 &&
             p.pad_right == 0;
    case Algorithm::kDirectNchwc:
      return p.groups == 1;
    case Algorithm::kDepthwise:
      return p.groups == p.c && p.groups == p.m;
    case Algorithm::kWinograd:
      return winograd::WinogradSupported(p.kh, p.kw, p.stride_h, p.stride_w, p.dilation_h,
                                         p.dilation_w, p.groups);
    case Algorithm::kGroupedDirect:
      return GroupedDirectSupported(p);
    case Algorithm::kStemNchwc:
      return StemNchwcSupported(p);
  }
  return false;
}

bool SupportsBlocked(Algorithm a, const ConvParams& p, IsaLevel isa) {
  if (!Supports(a, p)) return false;
  if (a == Algorithm::kDirectNchwc || a == Algorithm::kStemNchwc || a == Algorithm::kWinograd) {
    return true;
  }
  return a == Algorithm::kDepthwise &&
         DepthwiseBlockedSupported(p, SelectConvNchwcUkernel(Capped(isa)).block);
}

Algorithm ChooseAlgorithm(const ConvParams& p, IsaLevel isa) {
  if (p.groups > 1 && Supports(Algorithm::kDepthwise, p)) return Algorithm::kDepthwise;
  // A group's GEMM (M/g x C/g*KH*KW) is too small for a register tile below about 32 channels
  // per group; the direct kernel wins there (RegNetY-400MF's 3x3 layers, 8 per group: 2-4.5x).
  if (isa >= IsaLevel::kAvx2 && p.kh * p.kw > 1 && p.c / p.groups <= 32 &&
      Supports(Algorithm::kGroupedDirect, p)) {
    return Algorithm::kGroupedDirect;
  }
  if (Supports(Algorithm::kGemm1x1, p)) return Algorithm::kGemm1x1;
  // Winograd F(4x4, 3x3) does 2.25 C multiplies per output instead of 9 C, plus transforms
  // that cost about as much per channel as a few multiplies: it wins where C and M are wide
  // enough for its 36 GEMMs (M x C x tiles) to run near peak and the map holds enough 4x4 tiles.
  // Measured (bench_conv --set 3x3 --algo direct_nchwc --vs winograd --cpu-time, 1 thread, Zen 4),
  // Winograd's time over the direct kernel's, AVX-512 / AVX2: C, M >= 64 at 14x14 to 56x56
  // 0.49-0.60 / 0.40-0.61; 13x13 maps (SqueezeNet's 48->192, 64->256) 0.65-0.81 / 0.71-0.84;
  // 32->96, 32->128 0.66-0.79; 16->64 at 55x55 0.78 / 1.07 and 24->64 at 14x14 0.88 / 1.31 (so
  // 16 input channels do with M >= 64, at AVX-512 only); but 16->32, 16->48 1.05-1.65, and
  // every 7x7 map 1.15-3.7 (4 tiles, 30% of the tile grid padding). Accuracy: its rounding
  // error is ~10x the direct sum's (winograd.h); the e2e check of the ten models against
  // onnxruntime stays within 1e-4 (tests/e2e/torchvision_vs_ort.sh). With M < 64 on AVX-512
  // the 14x14 maps break even (128->32: 1.15), so those need 28x28 (0.87).
  const size_t min_map = p.m < 64 && isa >= IsaLevel::kAvx512 ? 28 : 13;
  const bool wide = p.c >= 32 && p.m >= 32;
  const bool narrow_in = p.c >= 16 && p.m >= 64 && isa >= IsaLevel::kAvx512;
  if (Supports(Algorithm::kWinograd, p) && isa >= IsaLevel::kAvx2 && (wide || narrow_in) &&
      p.out_h() >= min_map && p.out_w() >= min_map) {
    return Algorithm::kWinograd;
  }
  // The direct kernel wastes the padding of a channel block: only worth it when the input
  // channels fill most of one, and only where the microkernel is SIMD.
  const size_t block = SelectConvNchwcUkernel(isa).block;
  if (p.groups == 1 && isa >= IsaLevel::kAvx2 && p.c * 4 >= block * 3 && p.kh * p.kw > 1) {
    return Algorithm::kDirectNchwc;
  }
  return Algorithm::kIm2colGemm;
}

size_t PreparedConv::WorkspaceSize(size_t threads) const {
  if (algorithm_ == Algorithm::kGemm1x1) return Gemm1x1Workspace(*this);
  if (algorithm_ == Algorithm::kWinograd) return WinogradWorkspace(*this, threads);
  if (algorithm_ == Algorithm::kGroupedDirect) return GroupedWorkspace(*this, threads);
  if (algorithm_ == Algorithm::kDirectNchwc) return DirectNchwcWorkspace(*this, threads);
  if (algorithm_ == Algorithm::kDepthwise) return DepthwiseWorkspace(*this, threads);
  if (algorithm_ != Algorithm::kIm2colGemm) return 0;
  return Im2colWorkspace(*this, threads);
}

namespace {

// The floats of PreparedConv::weights_ for these parts (0 for the GEMM algorithms); params are
// valid, so the products stay far below 2^64 (ValidateParams bounds M * C * KH * KW).
size_t WeightFloats(const ConvParams& p, Algorithm a, size_t block) {
  const size_t taps = p.kh * p.kw;
  switch (a) {
    case Algorithm::kDirectNchwc:
      return (p.m + block - 1) / block * ((p.c + block - 1) / block) * taps * block * block;
    case Algorithm::kDepthwise:  // blocked: PackBlockedWeights' layout
      return block > 1 ? (p.c + block - 1) / block * block * taps : p.c * taps;
    case Algorithm::kGroupedDirect:
      return p.m * (p.c / p.groups) * taps;
    case Algorithm::kStemNchwc:
      return (p.m + block - 1) / block * taps * p.c * block;
    default:
      return 0;
  }
}

}  // namespace

size_t PreparedConv::weight_floats() const { return WeightFloats(params_, algorithm_, block_); }

Expected<PreparedConv> ViewPreparedConv(PreparedConvParts parts,
                                        std::shared_ptr<const void> owner) {
  const ConvParams& p = parts.params;
  KILN_RETURN_IF_ERROR(ValidateParams(p));
  const int algo = static_cast<int>(parts.algorithm);
  if (algo <= static_cast<int>(Algorithm::kAuto) ||
      algo > static_cast<int>(Algorithm::kStemNchwc)) {
    return Status::Error("conv: unknown prepared algorithm ", algo);
  }
  if (!Supports(parts.algorithm, p)) {
    return Status::Error("conv: algorithm ", AlgorithmName(parts.algorithm), " cannot run ",
                         p.Describe());
  }
  const int isa = static_cast<int>(parts.isa);
  if (isa < static_cast<int>(IsaLevel::kScalar) || isa > static_cast<int>(IsaLevel::kAvx512)) {
    return Status::Error("conv: unknown ISA level ", isa);
  }
  if (parts.isa > ActiveIsa()) {
    return Status::Error("conv: prepared for ", IsaName(parts.isa),
                         " but this process runs at most ", IsaName(ActiveIsa()),
                         " (recompile the model for this machine)");
  }
  const size_t nchwc_block = SelectConvNchwcUkernel(parts.isa).block;
  size_t want_block = parts.algorithm == Algorithm::kDirectNchwc ||
                              parts.algorithm == Algorithm::kStemNchwc
                          ? nchwc_block
                          : 1;
  // A blocked depthwise or Winograd conv is blocked like the direct one; a plain one has block 1.
  if (parts.algorithm == Algorithm::kDepthwise && parts.block != 1 &&
      DepthwiseBlockedSupported(p, nchwc_block)) {
    want_block = nchwc_block;
  }
  if (parts.algorithm == Algorithm::kWinograd && parts.block != 1) want_block = nchwc_block;
  if (parts.block != want_block) {
    return Status::Error("conv: ", AlgorithmName(parts.algorithm), " at ", IsaName(parts.isa),
                         " uses channel block ", want_block, ", not ", parts.block);
  }
  const bool is_winograd = parts.algorithm == Algorithm::kWinograd;
  const bool gemm_algo = is_winograd || parts.algorithm == Algorithm::kGemm1x1 ||
                         parts.algorithm == Algorithm::kIm2colGemm;
  if (gemm_algo) {
    // The GEMM algorithms: one packed A of M/g x C/g*KH*KW per group; Winograd: one of M x C per
    // transform point.
    const size_t mg = p.m / p.groups;
    const size_t k = is_winograd ? p.c : p.c / p.groups * p.kh * p.kw;
    const size_t count = is_winograd ? kWinogradMatrices : p.groups;
    const IsaLevel packed_isa = gemm::SelectGemmUkernel(parts.isa).isa;
    if (parts.packed.size() != count) {
      return Status::Error("conv: ", AlgorithmName(parts.algorithm), " of ", p.Describe(),
                           " needs ", count, " packed weight matrices, got ", parts.packed.size());
    }
    // A blocked Winograd's U[p]^T are packed B matrices, which ViewWinograd checks.
    for (size_t g = 0; g < parts.packed.size() && parts.block == 1; ++g) {
      const gemm::PackedMatrix& pm = parts.packed[g];
      if (!pm.is_a() || pm.rows() != mg || pm.cols() != k || pm.isa() != packed_isa ||
          pm.data() == nullptr) {
        return Status::Error("conv: packed weight matrix ", g, " is ", pm.rows(), " x ",
                             pm.cols(), " at ", IsaName(pm.isa()), "; expected a packed A of ", mg,
                             " x ", k, " at ", IsaName(packed_isa));
      }
    }
    if (parts.weights || parts.weight_floats) {
      return Status::Error("conv: ", AlgorithmName(parts.algorithm), " takes no plain weights");
    }
  } else {
    const size_t want = WeightFloats(p, parts.algorithm, parts.block);
    if (!parts.packed.empty()) {
      return Status::Error("conv: ", AlgorithmName(parts.algorithm), " takes no packed weights");
    }
    if (parts.weight_floats != want) {
      return Status::Error("conv: ", AlgorithmName(parts.algorithm), " of ", p.Describe(),
                           " needs ", want, " weight floats, got ", parts.weight_floats);
    }
    if (!parts.weights || reinterpret_cast<uintptr_t>(parts.weights) % alignof(float) != 0) {
      return Status::Error("conv: the weights pointer is null or not aligned to a float");
    }
  }
  PreparedConv conv;
  using A = PreparedConvAccess;
  A::params(conv) = p;
  A::algorithm(conv) = parts.algorithm;
  A::isa(conv) = parts.isa;
  A::block(conv) = parts.block;
  A::packed(conv) = std::move(parts.packed);
  // Aliasing constructor: shares `owner`'s lifetime, points at the weights.
  if (parts.weights)
    A::weights(conv) = std::shared_ptr<const float>(std::move(owner), parts.weights);
  if (is_winograd) KILN_RETURN_IF_ERROR(ViewWinograd(&conv));
  return conv;
}

Expected<PreparedConv> PrepareConv(const ConvParams& p, const float* weights,
                                   const PrepareOptions& options) {
  KILN_RETURN_IF_ERROR(ValidateParams(p));
  if (!weights) return Status::Error("conv: weights are null: ", p.Describe());
  PreparedConv conv;
  using A = PreparedConvAccess;
  A::params(conv) = p;
  A::isa(conv) = Capped(options.isa);
  Algorithm algo = options.algorithm;
  if (algo == Algorithm::kAuto) algo = ChooseAlgorithm(p, A::isa(conv));
  if (!Supports(algo, p)) {
    return Status::Error("conv: algorithm ", AlgorithmName(algo), " cannot run ", p.Describe());
  }
  A::algorithm(conv) = algo;
  switch (algo) {
    case Algorithm::kGemm1x1:
    case Algorithm::kIm2colGemm:
      KILN_RETURN_IF_ERROR(PrepareGemm(weights, &conv));
      break;
    case Algorithm::kDirectNchwc:
      KILN_RETURN_IF_ERROR(PrepareDirectNchwc(weights, &conv));
      break;
    case Algorithm::kDepthwise:
      if (options.layout == Layout::kNchwc) {
        if (!SupportsBlocked(algo, p, A::isa(conv))) {
          return Status::Error("conv: depthwise cannot run channel-blocked: ", p.Describe());
        }
        A::block(conv) = SelectConvNchwcUkernel(A::isa(conv)).block;
      }
      KILN_RETURN_IF_ERROR(PrepareDepthwise(weights, &conv));
      break;
    case Algorithm::kWinograd:
      if (options.layout == Layout::kNchwc) {
        A::block(conv) = SelectConvNchwcUkernel(A::isa(conv)).block;
      }
      KILN_RETURN_IF_ERROR(PrepareWinograd(weights, &conv));
      break;
    case Algorithm::kGroupedDirect:
      KILN_RETURN_IF_ERROR(PrepareGrouped(weights, &conv));
      break;
    case Algorithm::kStemNchwc:
      KILN_RETURN_IF_ERROR(PrepareStemNchwc(weights, &conv));
      break;
    case Algorithm::kAuto:
      break;
  }
  return conv;
}

Status Run(const PreparedConv& conv, const float* x, float* y, const RunOptions& o) {
  const ConvParams& p = conv.params();
  if (conv.algorithm() == Algorithm::kAuto) return Status::Error("conv: not prepared");
  if (!x || !y) return Status::Error("conv: input or output is null: ", p.Describe());
  if (o.epilogue.bias_kind == gemm::BiasKind::kPerColumn) {
    return Status::Error("conv: the bias is per output channel (kPerRow), not per column");
  }
  if (o.epilogue.bias_kind == gemm::BiasKind::kPerRow && !o.epilogue.bias) {
    return Status::Error("conv: per-channel bias is null: ", p.Describe());
  }
  if (o.accumulate && !SupportsAccumulate(conv.algorithm())) {
    return Status::Error("conv: ", AlgorithmName(conv.algorithm()),
                         " cannot add to its output (accumulate): ", p.Describe());
  }
  switch (conv.algorithm()) {
    case Algorithm::kGemm1x1:
    case Algorithm::kIm2colGemm:
    case Algorithm::kWinograd:
    case Algorithm::kGroupedDirect:
    case Algorithm::kDirectNchwc:
    case Algorithm::kDepthwise: {
      const size_t need = conv.WorkspaceSize(ThreadCount(o.pool));
      std::vector<float> own;
      float* ws = o.workspace;
      if (!ws && need > 0) {
        own.resize(need);
        ws = own.data();
      }
      if (conv.algorithm() == Algorithm::kGemm1x1) return RunGemm1x1(conv, x, y, o, ws);
      if (conv.algorithm() == Algorithm::kWinograd) return RunWinograd(conv, x, y, o, ws);
      if (conv.algorithm() == Algorithm::kGroupedDirect) return RunGrouped(conv, x, y, o, ws);
      if (conv.algorithm() == Algorithm::kDirectNchwc) return RunDirectNchwc(conv, x, y, o, ws);
      if (conv.algorithm() == Algorithm::kDepthwise) return RunDepthwise(conv, x, y, o, ws);
      return RunIm2colGemm(conv, x, y, o, ws);
    }
    case Algorithm::kStemNchwc:
      return RunStemNchwc(conv, x, y, o);
    case Algorithm::kAuto:
      break;
  }
  return Status::Error("conv: unknown algorithm");
}

bool SupportsAccumulate(Algorithm a) {
  return a == Algorithm::kGemm1x1 || a == Algorithm::kIm2colGemm || a == Algorithm::kDirectNchwc;
}

Clamp ClampOf(const gemm::Epilogue& ep) {
  Clamp c;
  if (ep.activation == gemm::Activation::kRelu) c.min = 0.0f;
  if (ep.activation == gemm::Activation::kClip) {
    c.min = ep.clip_min;
    c.max = ep.clip_max;
  }
  return c;
}

ukernels::F32VUnaryParamFn VectorActivation(const gemm::Epilogue& ep, IsaLevel isa) {
  const gemm::GemmUkernel& uk = gemm::SelectGemmUkernel(isa);
  switch (ep.activation) {
    case gemm::Activation::kSilu:
      return uk.silu;
    case gemm::Activation::kHardSwish:
      return uk.hswish;
    case gemm::Activation::kGelu:
      return uk.gelu;
    default:
      return nullptr;
  }
}

void ApplyVectorActivation(const gemm::Epilogue& ep, IsaLevel isa, float* y, size_t n) {
  if (const ukernels::F32VUnaryParamFn act = VectorActivation(ep, isa)) act(n, y, y, nullptr);
}

float ApplyActivation(const gemm::Epilogue& ep, float v) {
  const Clamp c = ClampOf(ep);
  v = std::min(std::max(v, c.min), c.max);
  ApplyVectorActivation(ep, IsaLevel::kScalar, &v, 1);
  return v;
}

Expected<Algorithm> MeasureAlgorithm(const ConvParams& p, ThreadPool* pool,
                                     std::optional<IsaLevel> isa) {
  KILN_RETURN_IF_ERROR(ValidateParams(p));
  const IsaLevel level = Capped(isa);
  using Key = std::tuple<size_t, size_t, size_t, size_t, size_t, size_t, size_t, size_t, size_t,
                         size_t, size_t, size_t, size_t, size_t, size_t, size_t, int, size_t>;
  const Key key{p.n,
                p.c,
                p.h,
                p.w,
                p.m,
                p.kh,
                p.kw,
                p.stride_h,
                p.stride_w,
                p.pad_top,
                p.pad_left,
                p.pad_bottom,
                p.pad_right,
                p.dilation_h,
                p.dilation_w,
                p.groups,
                static_cast<int>(level),
                ThreadCount(pool)};
  static std::mutex mu;
  static std::map<Key, Algorithm> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> w(p.m * (p.c / p.groups) * p.kh * p.kw);
  for (float& v : w) v = dist(rng);
  Algorithm best = ChooseAlgorithm(p, level);
  double best_s = INFINITY;
  for (Algorithm a : {Algorithm::kGemm1x1, Algorithm::kIm2colGemm, Algorithm::kDirectNchwc,
                      Algorithm::kDepthwise, Algorithm::kWinograd, Algorithm::kGroupedDirect}) {
    if (!Supports(a, p)) continue;
    KILN_ASSIGN_OR_RETURN(PreparedConv conv, PrepareConv(p, w.data(), {a, level}));
    const size_t cb = conv.block();
    std::vector<float> x(NchwcSize(p.n, p.c, p.h, p.w, cb), 0.5f);
    std::vector<float> y(NchwcSize(p.n, p.m, p.out_h(), p.out_w(), cb));
    std::vector<float> ws(conv.WorkspaceSize(ThreadCount(pool)));
    RunOptions o;
    o.pool = pool;
    o.workspace = ws.empty() ? nullptr : ws.data();
    KILN_RETURN_IF_ERROR(Run(conv, x.data(), y.data(), o));  // warm-up
    double t = INFINITY;
    for (int rep = 0; rep < 3; ++rep) {
      const auto start = std::chrono::steady_clock::now();
      KILN_RETURN_IF_ERROR(Run(conv, x.data(), y.data(), o));
      t = std::min(t,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    if (t < best_s) {
      best_s = t;
      best = a;
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  cache[key] = best;
  return best;
}

}  // namespace kiln::conv
