// The native kernel families; kernel_registry.cc lists them explicitly.
#pragma once

#include <span>

#include "runtime/kernel_registry.h"

namespace kiln::runtime {

std::span<const KernelEntry> ConvKernels();      // conv.cc
std::span<const KernelEntry> GemmKernels();      // gemm.cc
std::span<const KernelEntry> EltwiseKernels();   // eltwise.cc
std::span<const KernelEntry> PoolKernels();      // pool.cc
std::span<const KernelEntry> TensorKernels();    // tensor.cc: reshape, concat, transpose, ...
std::span<const KernelEntry> ReorderKernels();   // reorder.cc: NCHW <-> NCHWc
std::span<const KernelEntry> SlicePadKernels();  // slice_pad.cc: slice, pad
std::span<const KernelEntry> BatchNormKernels(); // batchnorm.cc: batchnorm (+ activation)
std::span<const KernelEntry> BlockedEltwiseKernels();  // blocked_eltwise.cc: NCHWc broadcasts

}  // namespace kiln::runtime
