// fp32 GEMM: C = act(op(C) + A * B + bias), row-major, with strides, threads and prepacking.
//
// Drivers are portable C++ (no intrinsics): they pack A and B into microkernel panels, block for
// the caches that GetCpuInfo() reports, split the work over a ThreadPool, and call the
// microkernel chosen from the table in ukernel_table.h. The epilogue is applied to each tile while
// it is hot: bias and clamps in the microkernel, SiLU/HardSwish/GELU by a vector kernel after it.
//
// A conv computes W[M = Cout x K] * im2col[K x N = HW] with a per-row bias: prepack W with PackA.
// A Gemm/MatMul layer computes X[M x K] * W[K x N] with a per-column bias: prepack W with PackB.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include "support/cpu.h"
#include "support/status.h"
#include "support/thread_pool.h"

namespace kiln::gemm {

enum class Activation {
  kNone,
  kRelu,       // max(x, 0)
  kClip,       // min(max(x, clip_min), clip_max); ReLU6 is Clip(0, 6)
  kSilu,       // x * sigmoid(x)
  kHardSwish,  // x * max(0, min(1, x / 6 + 1/2))  (ONNX HardSwish)
  kGelu,       // 0.5 x (1 + erf(x / sqrt 2))       (ONNX Gelu, approximate = "none")
};
const char* ActivationName(Activation act);

enum class BiasKind {
  kNone,
  kPerRow,     // bias[M]: one value per row of C (per output channel of a conv)
  kPerColumn,  // bias[N]: one value per column of C
};

struct Epilogue {
  BiasKind bias_kind = BiasKind::kNone;
  const float* bias = nullptr;
  Activation activation = Activation::kNone;
  float clip_min = 0.0f;
  float clip_max = 6.0f;
};

// Cache blocking; zero means "derive from the cache sizes". Benchmarks sweep these.
struct Blocking {
  size_t kc = 0;
  size_t mc = 0;
  size_t nc = 0;
};

// Which way the product runs. The microkernel's vectors lie along N; when N is small or odd
// (a 1x1 convolution over 7x7 pixels: N = 49 fills 49 of 64 lanes), C^T = B^T * A^T puts them
// along M instead, and the microkernel stores each tile transposed.
enum class Orientation {
  kAuto,        // transposed when that fills the lanes enough better to pay for the transposes
  kNormal,
  kTransposed,
};

struct Options {
  bool trans_a = false;     // A is stored K x M (lda >= M)
  bool trans_b = false;     // B is stored N x K (ldb >= K)
  bool accumulate = false;  // C = act(C + A * B + bias); otherwise C's old contents are ignored
  Epilogue epilogue;
  ThreadPool* pool = nullptr;      // null: run on the caller only
  std::optional<IsaLevel> isa;     // caps the ISA below ActiveIsa() (tests, benchmarks)
  Blocking blocking;
  Orientation orientation = Orientation::kAuto;  // tests, benchmarks; a packed A fixes it
};

// C[M x N] (ldc >= N) from A[M x K] (lda >= K) and B[K x N] (ldb >= N); see Options for
// transposes. Errors: null pointers with non-zero sizes, short leading dimensions, missing bias.
Status Sgemm(size_t m, size_t n, size_t k, const float* a, size_t lda, const float* b,
             size_t ldb, float* c, size_t ldc, const Options& options = {});

// An operand packed once into microkernel panels for one ISA level (immutable; shareable
// between threads). Panel layout: MR (for A) or NR (for B) values per k, padded with zeros; an A
// packed for the transposed product (PackA's n_hint) has panels of NR rows instead.
class PackedMatrix {
 public:
  PackedMatrix() = default;
  size_t rows() const { return rows_; }  // M for A, K for B (the logical, untransposed shape)
  size_t cols() const { return cols_; }  // K for A, N for B
  IsaLevel isa() const { return isa_; }
  size_t panel_width() const { return panel_; }
  const float* data() const { return data_.get(); }
  // Padded panels: ceil(rows or cols / panel) * panel * K floats.
  size_t size_bytes() const;
  // Made by PackA (true) or PackB (false).
  bool is_a() const { return is_a_; }

  // Rebuilds an operand that PackA (is_a) or PackB laid out, viewing `bytes` bytes at `data`
  // (kept alive by `owner`: an mmap of a compiled module, say) instead of copying them. The
  // metadata may come from a hostile file, so everything is checked: rows and cols >= 1, `isa`
  // one this process runs and a level the packers record, `panel` the width of that level's
  // microkernel (MR or NR for A, NR for B), and `bytes` exactly the packed size. `data` needs
  // float alignment only.
  static Expected<PackedMatrix> View(bool is_a, size_t rows, size_t cols, size_t panel,
                                     IsaLevel isa, const float* data, size_t bytes,
                                     std::shared_ptr<const void> owner);

 private:
  friend struct PackedMatrixAccess;  // the driver in gemm.cc
  size_t rows_ = 0, cols_ = 0, panel_ = 0;
  IsaLevel isa_ = IsaLevel::kScalar;
  bool is_a_ = false;
  std::shared_ptr<const float> data_;
};

// Packs A[M x K] (or, with trans_a, A stored K x M) for SgemmPackedA. n_hint: the N it will be
// multiplied with (0: unknown). When the transposed product suits that N better (see
// Orientation), the panels are laid out for it, and SgemmPackedA then always runs transposed
// (any N stays correct, only the speed depends on the hint).
Expected<PackedMatrix> PackA(size_t m, size_t k, const float* a, size_t lda, bool trans_a = false,
                             std::optional<IsaLevel> isa = std::nullopt, size_t n_hint = 0);
// Packs B[K x N] (or, with trans_b, B stored N x K) for SgemmPackedB.
Expected<PackedMatrix> PackB(size_t k, size_t n, const float* b, size_t ldb, bool trans_b = false,
                             std::optional<IsaLevel> isa = std::nullopt);

// C[M x N] from a packed A and B[K x N]; options.trans_a and options.isa are ignored (the
// packing fixed them), options.trans_b applies to b.
Status SgemmPackedA(const PackedMatrix& a, size_t n, const float* b, size_t ldb, float* c,
                    size_t ldc, const Options& options = {});
// C[M x N] from A[M x K] and a packed B; options.trans_b and options.isa are ignored.
Status SgemmPackedB(size_t m, const float* a, size_t lda, const PackedMatrix& b, float* c,
                    size_t ldc, const Options& options = {});

}  // namespace kiln::gemm
