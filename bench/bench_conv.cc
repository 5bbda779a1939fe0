// kiln's convolution drivers against oneDNN's convolution on every distinct convolution layer of
// ResNet-50 and MobileNetV2 and on DenseNet-121's 1x1 layers (batch 1, 224x224), in one process,
// alternating A B A B, with the same thread count (BENCHMARKING.md): call by call on one thread,
// in batches after a pause on more (each side's idle threads would take the other's cores).
//
//   bench_conv [--threads N] [--seconds S] [--filter SUBSTR] [--measure] [--algo A] [--vs B]
//              [--set 3x3] [--cpu-time] [--blocked] [--cold]
//
// --algo forces kiln's algorithm (auto, im2col_gemm, direct_nchwc, winograd, ...); --vs B times a
// second kiln algorithm B in the same loop (A B onednn A B onednn ...) and prints vs=GFLOP/s and
// vs_best_ratio = min time of B / min time of A (> 1: A is faster). --set 3x3 runs the 3x3
// stride-1 layers of ResNet-18/50, DenseNet-121 and GoogLeNet instead.
// --blocked runs layers as kiln runs them in a channel-blocked graph (lower/layout.cc): depthwise,
// Winograd and 1x1 convolutions on NCHWc (the layout pass blocks a 1x1 whose input channels fill
// their blocks when its neighbours are blocked: all of MobileNetV2's and ResNet-50's pointwise
// layers; the default mode times them on NCHW, as gemm1x1), and image stems as kStemNchwc (NCHW
// in, NCHWc out: the models' stems all feed blocked layers). --cold evicts the caches (all but
// the input) before each timed call.
//
// KILN_ISA caps kiln's ISA, and oneDNN's to match (OnednnMatchKilnIsa; the header line says which).
// Per layer: `conv NAME threads kiln=X onednn=Y` in GFLOP/s of direct-convolution work
// (2 * N * M * C/groups * KH * KW * OH * OW / median time), then the ratio, kiln's algorithm and
// the largest output difference relative to max|y|. best_ratio compares the fastest run of each:
// on a shared 2-core machine the medians swing by 3x when another process takes the core, while
// the minima stay put. Both sides get a per-channel bias. Layout
// changes are outside the timed region for both: oneDNN runs on the layouts it picks (format_tag
// any), kiln on NCHWc for the direct algorithm and NCHW otherwise.
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/conv/conv.h"
#include "kernels/conv/conv_ukernels.h"
#include "kernels/conv/layout.h"
#include "refs.h"
#include "support/cpu.h"
#include "support/thread_pool.h"

namespace kiln::bench {
namespace {

struct Layer {
  std::string name;
  conv::ConvParams p;
};

Layer L(const char* net, size_t c, size_t hw, size_t m, size_t k, size_t s, size_t groups = 1) {
  conv::ConvParams p;
  p.c = c;
  p.h = p.w = hw;
  p.m = m;
  p.kh = p.kw = k;
  p.stride_h = p.stride_w = s;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = k / 2;
  p.groups = groups;
  char name[96];
  std::snprintf(name, sizeof(name), "%s_%s%zux%zus%zu_%zuto%zu@%zu", net, groups > 1 ? "dw" : "", k,
                k, s, c, m, hw);
  return {std::string(name), p};
}

Layer Unpadded(Layer l) {
  l.p.pad_top = l.p.pad_left = l.p.pad_bottom = l.p.pad_right = 0;
  return l;
}

// torchvision's ResNet-50 (stride on the 3x3) and MobileNetV2 (t=6 inverted residuals).
std::vector<Layer> Layers() {
  return {
      L("r50", 3, 224, 64, 7, 2),        L("r50", 64, 56, 64, 1, 1),
      L("r50", 64, 56, 64, 3, 1),        L("r50", 64, 56, 256, 1, 1),
      L("r50", 256, 56, 64, 1, 1),       L("r50", 256, 56, 128, 1, 1),
      L("r50", 128, 56, 128, 3, 2),      L("r50", 128, 28, 512, 1, 1),
      L("r50", 256, 56, 512, 1, 2),      L("r50", 512, 28, 128, 1, 1),
      L("r50", 128, 28, 128, 3, 1),      L("r50", 512, 28, 256, 1, 1),
      L("r50", 256, 28, 256, 3, 2),      L("r50", 256, 14, 1024, 1, 1),
      L("r50", 512, 28, 1024, 1, 2),     L("r50", 1024, 14, 256, 1, 1),
      L("r50", 256, 14, 256, 3, 1),      L("r50", 1024, 14, 512, 1, 1),
      L("r50", 512, 14, 512, 3, 2),      L("r50", 512, 7, 2048, 1, 1),
      L("r50", 1024, 14, 2048, 1, 2),    L("r50", 2048, 7, 512, 1, 1),
      L("r50", 512, 7, 512, 3, 1),       L("mv2", 3, 224, 32, 3, 2),
      L("mv2", 32, 112, 32, 3, 1, 32),   L("mv2", 32, 112, 16, 1, 1),
      L("mv2", 16, 112, 96, 1, 1),       L("mv2", 96, 112, 96, 3, 2, 96),
      L("mv2", 96, 56, 24, 1, 1),        L("mv2", 24, 56, 144, 1, 1),
      L("mv2", 144, 56, 144, 3, 1, 144), L("mv2", 144, 56, 24, 1, 1),
      L("mv2", 144, 56, 144, 3, 2, 144), L("mv2", 144, 28, 32, 1, 1),
      L("mv2", 32, 28, 192, 1, 1),       L("mv2", 192, 28, 192, 3, 1, 192),
      L("mv2", 192, 28, 32, 1, 1),       L("mv2", 192, 28, 192, 3, 2, 192),
      L("mv2", 192, 14, 64, 1, 1),       L("mv2", 64, 14, 384, 1, 1),
      L("mv2", 384, 14, 384, 3, 1, 384), L("mv2", 384, 14, 64, 1, 1),
      L("mv2", 384, 14, 96, 1, 1),       L("mv2", 96, 14, 576, 1, 1),
      L("mv2", 576, 14, 576, 3, 1, 576), L("mv2", 576, 14, 96, 1, 1),
      L("mv2", 576, 14, 576, 3, 2, 576), L("mv2", 576, 7, 160, 1, 1),
      L("mv2", 160, 7, 960, 1, 1),       L("mv2", 960, 7, 960, 3, 1, 960),
      L("mv2", 960, 7, 160, 1, 1),       L("mv2", 960, 7, 320, 1, 1),
      L("mv2", 320, 7, 1280, 1, 1),
      // EfficientNet-B0's and MobileNetV3's pointwise layers that MobileNetV2 lacks (40 and 120
      // channels: a half last block).
      L("en", 16, 112, 96, 1, 1),        L("en", 40, 28, 240, 1, 1),
      L("en", 240, 28, 40, 1, 1),        L("en", 80, 14, 480, 1, 1),
      L("en", 112, 14, 672, 1, 1),       L("en", 192, 7, 1152, 1, 1),
      L("en", 1152, 7, 192, 1, 1),       L("mv3", 16, 112, 64, 1, 1),
      L("mv3", 24, 56, 72, 1, 1),        L("mv3", 72, 56, 24, 1, 1),
      L("mv3", 40, 28, 120, 1, 1),       L("mv3", 120, 28, 40, 1, 1),
      L("mv3", 80, 14, 184, 1, 1),       L("mv3", 480, 14, 112, 1, 1),
      // The other 3x3 stems: MobileNetV3 (3->16), ShuffleNet (3->24); MobileNetV2's 3->32 is
      // also EfficientNet-B0's and RegNet's.
      L("mv3", 3, 224, 16, 3, 2),        L("sn", 3, 224, 24, 3, 2),
      Unpadded(L("sq", 3, 224, 64, 3, 2)),  // SqueezeNet 1.1's stem: 224 -> 111
      // DenseNet-121's bottleneck 1x1s (K = 64 + 32 i input channels -> 128) at the first, a
      // middle and the last layer of each dense block (of the 7x7 one, the first and last); its
      // transitions halve 256, 512 and 1024 channels (256->128@56, 512->256@28 and 1024->512@14,
      // ResNet-50's too).
      L("dn", 64, 56, 128, 1, 1),        L("dn", 128, 56, 128, 1, 1),
      L("dn", 224, 56, 128, 1, 1),       L("dn", 128, 28, 128, 1, 1),
      L("dn", 320, 28, 128, 1, 1),       L("dn", 480, 28, 128, 1, 1),
      L("dn", 256, 14, 128, 1, 1),       L("dn", 640, 14, 128, 1, 1),
      L("dn", 992, 14, 128, 1, 1),       L("dn", 512, 7, 128, 1, 1),
      L("dn", 992, 7, 128, 1, 1),
  };
}

// The 3x3 stride-1 convolutions of ResNet-18/50, DenseNet-121, GoogLeNet and SqueezeNet 1.1
// (batch 1, 224x224).
std::vector<Layer> Layers3x3() {
  return {
      L("r50", 64, 56, 64, 3, 1),   L("r50", 128, 28, 128, 3, 1), L("r50", 256, 14, 256, 3, 1),
      L("r50", 512, 7, 512, 3, 1),  L("dn", 128, 56, 32, 3, 1),   L("dn", 128, 28, 32, 3, 1),
      L("dn", 128, 14, 32, 3, 1),   L("dn", 128, 7, 32, 3, 1),    L("gn", 64, 56, 192, 3, 1),
      L("gn", 96, 28, 128, 3, 1),   L("gn", 128, 28, 192, 3, 1),  L("gn", 16, 28, 32, 3, 1),
      L("gn", 32, 28, 96, 3, 1),    L("gn", 96, 14, 208, 3, 1),   L("gn", 112, 14, 224, 3, 1),
      L("gn", 128, 14, 256, 3, 1),  L("gn", 144, 14, 288, 3, 1),  L("gn", 160, 14, 320, 3, 1),
      L("gn", 16, 14, 48, 3, 1),    L("gn", 24, 14, 64, 3, 1),    L("gn", 32, 14, 128, 3, 1),
      L("gn", 160, 7, 320, 3, 1),   L("gn", 192, 7, 384, 3, 1),   L("gn", 32, 7, 128, 3, 1),
      L("gn", 48, 7, 128, 3, 1),    L("sq", 16, 55, 64, 3, 1),    L("sq", 32, 27, 128, 3, 1),
      L("sq", 48, 13, 192, 3, 1),   L("sq", 64, 13, 256, 3, 1),
  };
}

// A 1x1 convolution that kiln's layout pass may run channel-blocked (direct_nchwc): one group,
// input channels filling most of their blocks (lower/layout.cc's FillsBlocks).
bool PointwiseBlocked(const conv::ConvParams& p) {
  const size_t b = conv::SelectConvNchwcUkernel(ActiveIsa()).block;
  const size_t padded = (p.c + b - 1) / b * b;
  return p.kh == 1 && p.kw == 1 && p.groups == 1 && ActiveIsa() >= IsaLevel::kAvx2 &&
         (p.c % b == 0 || padded * 3 <= p.c * 4);
}

conv::Algorithm ParseAlgorithm(const std::string& name) {
  if (const auto a = conv::AlgorithmFromName(name)) return *a;
  std::fprintf(stderr, "unknown algorithm '%s'\n", name.c_str());
  std::exit(2);
}

void Check(dnnl_status_t st, const char* what) {
  if (st != dnnl_success) {
    std::fprintf(stderr, "onednn: %s failed (status %d)\n", what, static_cast<int>(st));
    std::exit(1);
  }
}

// One oneDNN convolution with its memories in the layouts it chose; user data is reordered in
// and out outside the timed Run().
class OnednnConv {
 public:
  OnednnConv(const conv::ConvParams& p, const float* x, const float* w, const float* bias) : p_(p) {
    Check(dnnl_engine_create(&engine_, dnnl_cpu, 0), "engine");
    Check(dnnl_stream_create(&stream_, engine_, dnnl_stream_default_flags), "stream");
    const dnnl_dim_t n = static_cast<dnnl_dim_t>(p.n), c = static_cast<dnnl_dim_t>(p.c),
                     m = static_cast<dnnl_dim_t>(p.m), g = static_cast<dnnl_dim_t>(p.groups);
    const dnnl_dims_t src_dims = {n, c, static_cast<dnnl_dim_t>(p.h), static_cast<dnnl_dim_t>(p.w)};
    const dnnl_dims_t dst_dims = {n, m, static_cast<dnnl_dim_t>(p.out_h()),
                                  static_cast<dnnl_dim_t>(p.out_w())};
    const dnnl_dim_t kh = static_cast<dnnl_dim_t>(p.kh), kw = static_cast<dnnl_dim_t>(p.kw);
    const dnnl_dims_t w_dims = {m, c, kh, kw};
    const dnnl_dims_t gw_dims = {g, m / g, c / g, kh, kw};
    const dnnl_dims_t b_dims = {m};
    dnnl_memory_desc_t src_any, dst_any, w_any, b_md, src_user, dst_user, w_user;
    Check(dnnl_memory_desc_init_by_tag(&src_any, 4, src_dims, dnnl_f32, dnnl_format_tag_any), "md");
    Check(dnnl_memory_desc_init_by_tag(&dst_any, 4, dst_dims, dnnl_f32, dnnl_format_tag_any), "md");
    Check(dnnl_memory_desc_init_by_tag(&src_user, 4, src_dims, dnnl_f32, dnnl_nchw), "md");
    Check(dnnl_memory_desc_init_by_tag(&dst_user, 4, dst_dims, dnnl_f32, dnnl_nchw), "md");
    if (p.groups > 1) {
      Check(dnnl_memory_desc_init_by_tag(&w_any, 5, gw_dims, dnnl_f32, dnnl_format_tag_any), "md");
      Check(dnnl_memory_desc_init_by_tag(&w_user, 5, gw_dims, dnnl_f32, dnnl_goihw), "md");
    } else {
      Check(dnnl_memory_desc_init_by_tag(&w_any, 4, w_dims, dnnl_f32, dnnl_format_tag_any), "md");
      Check(dnnl_memory_desc_init_by_tag(&w_user, 4, w_dims, dnnl_f32, dnnl_oihw), "md");
    }
    Check(dnnl_memory_desc_init_by_tag(&b_md, 1, b_dims, dnnl_f32, dnnl_x), "md");
    const dnnl_dims_t strides = {static_cast<dnnl_dim_t>(p.stride_h),
                                 static_cast<dnnl_dim_t>(p.stride_w)};
    const dnnl_dims_t dilates = {static_cast<dnnl_dim_t>(p.dilation_h) - 1,
                                 static_cast<dnnl_dim_t>(p.dilation_w) - 1};
    const dnnl_dims_t pad_l = {static_cast<dnnl_dim_t>(p.pad_top),
                               static_cast<dnnl_dim_t>(p.pad_left)};
    const dnnl_dims_t pad_r = {static_cast<dnnl_dim_t>(p.pad_bottom),
                               static_cast<dnnl_dim_t>(p.pad_right)};
    dnnl_convolution_desc_t cd;
    Check(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                     dnnl_convolution_auto, &src_any, &w_any, &b_md,
                                                     &dst_any, strides, dilates, pad_l, pad_r),
          "conv desc");
    Check(dnnl_primitive_desc_create(&pd_, &cd, nullptr, engine_, nullptr), "conv pd");
    const char* impl = nullptr;
    if (dnnl_primitive_desc_query(pd_, dnnl_query_impl_info_str, 0, &impl) != dnnl_success) {
      impl = nullptr;
    }
    impl_ = impl;
    Check(dnnl_primitive_create(&prim_, pd_), "conv primitive");
    src_ = Make(dnnl_primitive_desc_query_md(pd_, dnnl_query_src_md, 0));
    w_ = Make(dnnl_primitive_desc_query_md(pd_, dnnl_query_weights_md, 0));
    dst_ = Make(dnnl_primitive_desc_query_md(pd_, dnnl_query_dst_md, 0));
    b_ = Make(&b_md);
    void* bh = nullptr;
    Check(dnnl_memory_get_data_handle(b_, &bh), "bias handle");
    std::memcpy(bh, bias, p.m * sizeof(float));
    Reorder(&src_user, const_cast<float*>(x), src_, true);
    Reorder(&w_user, const_cast<float*>(w), w_, true);
    dst_user_ = dst_user;
  }
  ~OnednnConv() {
    for (dnnl_memory_t mem : {src_, w_, dst_, b_}) dnnl_memory_destroy(mem);
    dnnl_primitive_destroy(prim_);
    dnnl_primitive_desc_destroy(pd_);
    dnnl_stream_destroy(stream_);
    dnnl_engine_destroy(engine_);
  }

  void Run() {
    const dnnl_exec_arg_t args[] = {
        {DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, w_}, {DNNL_ARG_BIAS, b_}, {DNNL_ARG_DST, dst_}};
    Check(dnnl_primitive_execute(prim_, stream_, 4, args), "execute");
    Check(dnnl_stream_wait(stream_), "wait");
  }

  void Output(float* y) { Reorder(&dst_user_, y, dst_, false); }
  const char* impl() const { return impl_ ? impl_ : "?"; }

 private:
  dnnl_memory_t Make(const dnnl_memory_desc_t* md) {
    dnnl_memory_t mem;
    Check(dnnl_memory_create(&mem, md, engine_, DNNL_MEMORY_ALLOCATE), "memory");
    return mem;
  }
  // to_lib: user buffer (plain layout `user`) into `lib`; else `lib` into the user buffer.
  void Reorder(const dnnl_memory_desc_t* user, float* data, dnnl_memory_t lib, bool to_lib) {
    dnnl_memory_t u;
    Check(dnnl_memory_create(&u, user, engine_, data), "user memory");
    const dnnl_memory_desc_t* lib_md;
    Check(dnnl_memory_get_memory_desc(lib, &lib_md), "lib md");
    dnnl_primitive_desc_t rpd;
    Check(to_lib
              ? dnnl_reorder_primitive_desc_create(&rpd, user, engine_, lib_md, engine_, nullptr)
              : dnnl_reorder_primitive_desc_create(&rpd, lib_md, engine_, user, engine_, nullptr),
          "reorder pd");
    dnnl_primitive_t r;
    Check(dnnl_primitive_create(&r, rpd), "reorder");
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, to_lib ? u : lib},
                                    {DNNL_ARG_TO, to_lib ? lib : u}};
    Check(dnnl_primitive_execute(r, stream_, 2, args), "reorder execute");
    Check(dnnl_stream_wait(stream_), "wait");
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(u);
  }

  conv::ConvParams p_;
  dnnl_engine_t engine_ = nullptr;
  dnnl_stream_t stream_ = nullptr;
  dnnl_primitive_desc_t pd_ = nullptr;
  dnnl_primitive_t prim_ = nullptr;
  dnnl_memory_t src_ = nullptr, w_ = nullptr, dst_ = nullptr, b_ = nullptr;
  dnnl_memory_desc_t dst_user_;
  const char* impl_ = nullptr;  // owned by pd_
};

// kiln's buffers start on a cache line, as the runtime's tensors do (support/tensor.cc) and
// as oneDNN's own memory objects do. A std::vector of a large size starts 16 bytes past a page
// (glibc's mmap'd chunks): every 64-byte block of NCHW16c then straddles two lines. Measured,
// conv::Run, median of 21 interleaved rounds, 24 -> 144 at 56x56 236.4 -> 231.1 GFLOP/s
// (16 bytes off), 144 -> 24 at 56x56 174.9 -> 172.0.
template <class T>
struct LineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kLine{64};
  LineAllocator() = default;
  template <class U>
  LineAllocator(const LineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kLine)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kLine); }
  template <class U>
  bool operator==(const LineAllocator<U>&) const { return true; }
};
using Buffer = std::vector<float, LineAllocator<float>>;

// --cpu-time: the calling thread's CPU time instead of wall time (with --threads 1 every side
// runs on the calling thread), so that time slices lost to other processes on a shared machine
// do not count; cache interference still does.
bool g_cpu_time = false;

struct Clock {
  static double Now() {
    if (g_cpu_time) {
      timespec ts;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

double Seconds(double a, double b) { return b - a; }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Main(int argc, char** argv) {
  int threads = 1;
  double seconds = 0.3;
  std::string filter;
  bool measure = false, blocked = false, cold = false;
  conv::Algorithm algo = conv::Algorithm::kAuto, vs = conv::Algorithm::kAuto;
  bool has_vs = false, set3x3 = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (a == "--filter" && i + 1 < argc) {
      filter = argv[++i];
    } else if (a == "--measure") {
      measure = true;
    } else if (a == "--cpu-time") {
      g_cpu_time = true;
    } else if (a == "--algo" && i + 1 < argc) {
      algo = ParseAlgorithm(argv[++i]);
    } else if (a == "--vs" && i + 1 < argc) {
      vs = ParseAlgorithm(argv[++i]);
      has_vs = true;
    } else if (a == "--blocked") {
      blocked = true;
    } else if (a == "--cold") {
      cold = true;
    } else if (a == "--set" && i + 1 < argc) {
      set3x3 = std::string(argv[++i]) == "3x3";
    } else {
      std::fprintf(stderr,
                   "usage: bench_conv [--threads N] [--seconds S] [--filter S] [--measure] "
                   "[--algo A] [--vs B] [--set 3x3] [--blocked] [--cold]\n");
      return 2;
    }
  }
  if (threads < 1) threads = 1;
  omp_set_num_threads(threads);
  auto pool_or = ThreadPool::Create(static_cast<size_t>(threads));
  if (!pool_or.ok()) {
    std::fprintf(stderr, "%s\n", pool_or.status().message().c_str());
    return 1;
  }
  std::unique_ptr<ThreadPool> pool = std::move(pool_or.value());
  ThreadPool* tp = threads > 1 ? pool.get() : nullptr;

  const std::string onednn_isa = OnednnMatchKilnIsa();
  const double peak0 = MeasureFmaPeak(1, 0.3, true);
  std::printf("# isa=%s threads=%d %s (%s); fma peak (1 core) %.1f GFLOP/s\n",
              IsaName(ActiveIsa()), threads, OnednnInfo().c_str(), onednn_isa.c_str(), peak0);
  std::printf(
      "# columns: conv NAME threads kiln=GFLOP/s onednn=GFLOP/s (medians) ratio best_ratio algo "
      "kiln_frac_peak max_rel_diff [min-max ms kiln | onednn] onednn_impl\n");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  double log_ratio_sum = 0.0, log_best_sum = 0.0;
  int count = 0;
  for (const Layer& layer : set3x3 ? Layers3x3() : Layers()) {
    if (!filter.empty() && layer.name.find(filter) == std::string::npos) continue;
    const conv::ConvParams& p = layer.p;
    const size_t oh = p.out_h(), ow = p.out_w();
    std::vector<float> x(p.n * p.c * p.h * p.w), w(p.m * p.c / p.groups * p.kh * p.kw), bias(p.m);
    for (float& v : x) v = dist(rng);
    for (float& v : w) v = dist(rng);
    for (float& v : bias) v = dist(rng);

    conv::PrepareOptions po;
    po.algorithm = algo;
    if (measure) {
      auto a = conv::MeasureAlgorithm(p, tp);
      if (a.ok()) po.algorithm = *a;
    }
    const conv::Algorithm chosen = po.algorithm == conv::Algorithm::kAuto
                                       ? conv::ChooseAlgorithm(p, ActiveIsa())
                                       : po.algorithm;
    if (blocked && conv::SupportsBlocked(conv::Algorithm::kDepthwise, p, ActiveIsa())) {
      po.layout = conv::Layout::kNchwc;
    } else if (blocked && chosen == conv::Algorithm::kWinograd) {
      po.algorithm = chosen;
      po.layout = conv::Layout::kNchwc;
    } else if (blocked && po.algorithm == conv::Algorithm::kAuto && PointwiseBlocked(p)) {
      po.algorithm = conv::Algorithm::kDirectNchwc;
    } else if (blocked && po.algorithm == conv::Algorithm::kAuto &&
               conv::Supports(conv::Algorithm::kStemNchwc, p)) {
      // An image stem ahead of blocked layers runs kStemNchwc: NCHW in, NCHWc out
      // (lower/native_conv.cc).
      po.algorithm = conv::Algorithm::kStemNchwc;
    }
    auto prepared = conv::PrepareConv(p, w.data(), po);
    if (!prepared.ok()) {
      std::fprintf(stderr, "%s: %s\n", layer.name.c_str(), prepared.status().message().c_str());
      return 1;
    }
    const size_t cb = prepared->block();
    Buffer xk(conv::NchwcSize(p.n, p.c, p.h, p.w, cb)), yk(conv::NchwcSize(p.n, p.m, oh, ow, cb));
    std::vector<float> y(p.n * p.m * oh * ow);
    if (prepared->input_layout() == conv::Layout::kNchwc) {
      conv::NchwToNchwc(p.n, p.c, p.h, p.w, cb, x.data(), xk.data());
    } else {
      xk.assign(x.begin(), x.end());
    }
    Buffer ws(prepared->WorkspaceSize(static_cast<size_t>(threads)));
    conv::RunOptions ro;
    ro.pool = tp;
    ro.epilogue.bias_kind = gemm::BiasKind::kPerRow;
    ro.epilogue.bias = bias.data();
    ro.workspace = ws.empty() ? nullptr : ws.data();
    OnednnConv ref(p, x.data(), w.data(), bias.data());

    // The second kiln algorithm (--vs), on its own layout.
    conv::PrepareOptions vo;
    vo.algorithm = vs;
    auto other = has_vs && conv::Supports(vs, p) ? conv::PrepareConv(p, w.data(), vo)
                                                 : Expected<conv::PreparedConv>(conv::PreparedConv());
    if (!other.ok()) {
      std::fprintf(stderr, "%s: %s\n", layer.name.c_str(), other.status().message().c_str());
      return 1;
    }
    const bool run_vs = other->algorithm() != conv::Algorithm::kAuto;
    const size_t vb = run_vs ? other->block() : 1;
    Buffer xv(run_vs ? conv::NchwcSize(p.n, p.c, p.h, p.w, vb) : 0);
    Buffer yv(run_vs ? conv::NchwcSize(p.n, p.m, oh, ow, vb) : 0);
    const bool vs_in_blocked = run_vs && other->input_layout() == conv::Layout::kNchwc;
    if (vs_in_blocked) conv::NchwToNchwc(p.n, p.c, p.h, p.w, vb, x.data(), xv.data());
    if (run_vs && !vs_in_blocked) xv.assign(x.begin(), x.end());
    Buffer wsv(run_vs ? other->WorkspaceSize(static_cast<size_t>(threads)) : 0);
    conv::RunOptions rv = ro;
    rv.workspace = wsv.empty() ? nullptr : wsv.data();
    auto run_vs_kiln = [&] {
      if (!run_vs) return;
      const Status st = conv::Run(*other, xv.data(), yv.data(), rv);
      if (!st.ok()) {
        std::fprintf(stderr, "%s (vs): %s\n", layer.name.c_str(), st.message().c_str());
        std::exit(1);
      }
    };

    auto run_kiln = [&] {
      const Status st = conv::Run(*prepared, xk.data(), yk.data(), ro);
      if (!st.ok()) {
        std::fprintf(stderr, "%s: %s\n", layer.name.c_str(), st.message().c_str());
        std::exit(1);
      }
    };
    // Warm up, then size the repetitions from one timed call of each.
    run_kiln();
    run_vs_kiln();
    ref.Run();
    auto t0 = Clock::Now();
    run_kiln();
    run_vs_kiln();
    ref.Run();
    const double pair = Seconds(t0, Clock::Now());
    const int reps = std::clamp(static_cast<int>(seconds / std::max(pair, 1e-6)), 5, 2000);
    std::vector<double> tk, to, tv;
    // --cold: before each timed call, caches hold the input but not the weights (as in a model,
    // where each layer's weights come from L3 or memory once per inference).
    std::vector<float> trash(cold ? (size_t{64} << 20) / sizeof(float) : 0);
    auto evict = [&](const auto& input) {
      if (!cold) return;
      for (size_t i = 0; i < trash.size(); i += 16) trash[i] += 1.0f;
      volatile float sink = 0.0f;
      for (size_t i = 0; i < input.size(); i += 16) sink = sink + input[i];
    };
    // One call of a side: 0 kiln, 1 oneDNN, 2 the --vs algorithm.
    auto timed = [&](int side) {
      if (side == 2 && !run_vs) return;
      if (side == 1) {
        evict(x);
      } else {
        evict(xk);
      }
      const double a = Clock::Now();
      side == 0 ? run_kiln() : side == 1 ? ref.Run() : run_vs_kiln();
      (side == 0 ? tk : side == 1 ? to : tv).push_back(Seconds(a, Clock::Now()));
    };
    if (threads == 1) {
      for (int r = 0; r < reps; ++r) {
        for (int side = 0; side < 3; ++side) timed(side);
      }
    } else {
      // Alternating call by call, each side's idle threads (kiln's pool spins up to 2 ms,
      // libgomp's spin count) took a core from the other's next call: 64 -> 64 at 56x56, 2
      // threads, measured kiln 253 / oneDNN 480 GFLOP/s, and 455 / 45 with GOMP_SPINCOUNT=10000.
      // So each side runs a batch of calls, after a pause that lets every spinning thread
      // sleep, and the side that goes first turns each round.
      constexpr int kRounds = 11;
      const int batch = std::max(1, reps / kRounds);
      for (int r = 0; r < kRounds; ++r) {
        for (int j = 0; j < 3; ++j) {
          const int side = (j + r) % 3;
          if (side == 2 && !run_vs) continue;
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          for (int i = 0; i < batch; ++i) timed(side);
        }
      }
    }
    // Check the answers agree.
    std::vector<float> yo(y.size());
    ref.Output(yo.data());
    if (cb > 1) {
      conv::NchwcToNchw(p.n, p.m, oh, ow, cb, yk.data(), y.data());
    } else {
      std::copy(yk.begin(), yk.begin() + static_cast<ptrdiff_t>(y.size()), y.begin());
    }
    double max_abs = 0.0, max_diff = 0.0;
    for (size_t i = 0; i < y.size(); ++i) {
      max_abs = std::max(max_abs, static_cast<double>(std::fabs(yo[i])));
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(yo[i] - y[i])));
    }
    const double flops = p.Flops();
    const double gk = flops / Median(tk) * 1e-9, go = flops / Median(to) * 1e-9;
    const double best_ratio =
        *std::min_element(to.begin(), to.end()) / *std::min_element(tk.begin(), tk.end());
    std::printf(
        "conv %s %d kiln=%.1f onednn=%.1f ratio=%.2f best_ratio=%.2f algo=%s "
        "frac_peak=%.2f "
        "max_rel_diff=%.1e [%.3f-%.3f | %.3f-%.3f ms] %s\n",
        layer.name.c_str(), threads, gk, go, gk / go, best_ratio,
        conv::AlgorithmName(prepared->algorithm()), gk / (peak0 * threads),
        max_diff / std::max(max_abs, 1e-30), 1e3 * *std::min_element(tk.begin(), tk.end()),
        1e3 * *std::max_element(tk.begin(), tk.end()),
        1e3 * *std::min_element(to.begin(), to.end()),
        1e3 * *std::max_element(to.begin(), to.end()), ref.impl());
    if (run_vs) {
      std::vector<float> y2(y.size());
      if (vb > 1) {
        conv::NchwcToNchw(p.n, p.m, oh, ow, vb, yv.data(), y2.data());
      } else {
        std::copy(yv.begin(), yv.begin() + static_cast<ptrdiff_t>(y2.size()), y2.begin());
      }
      double vdiff = 0.0;
      for (size_t i = 0; i < y.size(); ++i) {
        vdiff = std::max(vdiff, static_cast<double>(std::fabs(yo[i] - y2[i])));
      }
      std::printf("  vs %s=%.1f vs_best_ratio=%.2f vs_max_rel_diff=%.1e [%.3f ms min]\n",
                  conv::AlgorithmName(other->algorithm()), flops / Median(tv) * 1e-9,
                  *std::min_element(tv.begin(), tv.end()) / *std::min_element(tk.begin(), tk.end()),
                  vdiff / std::max(max_abs, 1e-30), 1e3 * *std::min_element(tv.begin(), tv.end()));
    }
    std::fflush(stdout);
    log_ratio_sum += std::log(gk / go);
    log_best_sum += std::log(best_ratio);
    ++count;
  }
  const double peak1 = MeasureFmaPeak(1, 0.3, true);
  std::printf(
      "# geomean ratio kiln/onednn %.2f (medians), %.2f (best times) over %d layers; "
      "peak %.1f at start, %.1f at end\n",
      count ? std::exp(log_ratio_sum / count) : 0.0, count ? std::exp(log_best_sum / count) : 0.0,
      count, peak0, peak1);
  return 0;
}

}  // namespace
}  // namespace kiln::bench

int main(int argc, char** argv) {
  kiln::bench::ShortenLibrarySpins(argv);
  return kiln::bench::Main(argc, argv);
}
