// The runtime's kernels by name, from an explicit table (no static self-registration, which
// static libraries silently drop). Native kernels live in runtime/kernels/, one family per
// file; the reference-partition kernel lives in runtime_ref/ (it needs the interpreter, which a
// deployed program need not link) and is installed by runtime_ref::EnableReferencePartitions().
#pragma once

#include <span>
#include <string_view>

#include "runtime/step_kernel.h"

namespace kiln::runtime {

struct KernelEntry {
  std::string_view name;
  KernelFactory create;
};

// The kernel step.kernel names, or an error: an unknown name, or a reference partition in a
// program that did not enable them.
Expected<std::unique_ptr<StepKernel>> CreateKernel(const Step& step, const Module& module);

// The step kernel name of reference partitions.
inline constexpr std::string_view kReferencePartitionKernel = "reference_partition";
void SetReferencePartitionFactory(KernelFactory factory);

}  // namespace kiln::runtime
