// Internal to kernels/gemm: one product as the driver runs it (run.cc), set up by the entry
// points (gemm.cc) from their operands and options. Not part of the library's interface.
#pragma once

#include <cstddef>
#include <limits>

#include "kernels/gemm/gemm.h"
#include "kernels/gemm/ukernel_table.h"
#include "support/thread_pool.h"

namespace kiln::gemm {

inline constexpr float kInf = std::numeric_limits<float>::infinity();

// One side of the product. Element (r, c) of the logical operand is p[r * rs + c * cs] when
// unpacked; when packed, panel q holds all of K at packed + q * panel_k * width.
struct Operand {
  const float* p = nullptr;
  size_t rs = 0, cs = 0;
  const float* packed = nullptr;
};

struct Problem {
  size_t m = 0, n = 0, k = 0;
  Operand a, b;
  float* c = nullptr;
  size_t ldc = 0;
  bool c_trans = false;  // C(i, j) is c[j * ldc + i]: the transposed product of Transpose()
  bool in_place_a = false;  // plain A with rs == 1 read by the microkernel without packing
  bool rows_a = false;  // plain A with cs == 1 read by the microkernel row by row (a_rows)
  const GemmUkernel* uk = nullptr;
  bool accumulate = false;
  const float* bias_m = nullptr;
  const float* bias_n = nullptr;
  float min = -kInf, max = kInf;
  ukernels::F32VUnaryParamFn act = nullptr;
  size_t kc = 0, mc = 0, nc = 0;
};

// Turns C = A * B into C^T = B^T * A^T: operands swap and transpose (a packed A of NR-row panels
// becomes a packed B), biases swap sides, and tiles are stored transposed into the same C.
void Transpose(Problem& pb);

// Runs pb (operands, epilogue and C set) over the pool's threads: a matrix-vector product when N
// is 1, else tiles of the microkernel, in the orientation asked for (kAuto: the driver's choice).
void Run(Problem& pb, ThreadPool* pool, Blocking want, Orientation orientation);

}  // namespace kiln::gemm
