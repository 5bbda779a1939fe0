#include "runtime/kernel_registry.h"

#include <atomic>

#include "runtime/kernels/families.h"

namespace kiln::runtime {
namespace {

std::atomic<KernelFactory> g_reference_partition{nullptr};

}  // namespace

void SetReferencePartitionFactory(KernelFactory factory) { g_reference_partition = factory; }

Expected<std::unique_ptr<StepKernel>> CreateKernel(const Step& step, const Module& module) {
  if (step.kernel == kReferencePartitionKernel) {
    KernelFactory f = g_reference_partition.load();
    if (f == nullptr)
      return Status::Error("step '", step.name, "' (", step.op,
                           ") runs on the reference interpreter, which this program does not "
                           "link (call runtime_ref::EnableReferencePartitions)");
    return f(step, module);
  }
  for (auto family : {ConvKernels, GemmKernels, EltwiseKernels, PoolKernels, TensorKernels,
                      ReorderKernels, SlicePadKernels, BatchNormKernels,
                      BlockedEltwiseKernels})
    for (const KernelEntry& e : family())
      if (e.name == step.kernel) {
        auto k = e.create(step, module);
        if (!k.ok()) return Status::Error("step '", step.name, "' (", step.op, "): ", k.status().message());
        return k;
      }
  return Status::Error("step '", step.name, "' needs kernel '", step.kernel,
                       "', which this runtime does not have");
}

}  // namespace kiln::runtime
