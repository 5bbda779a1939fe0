// Small helpers the native eltwise, pool and tensor kernels share: reading a step's params
// defensively (a module may be hostile: every count and index is checked before it is used)
// and checking tensors at run time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/step_kernel.h"
#include "support/status.h"

namespace kiln::runtime::kernel_util {

// Rank limit of the kernels' stack tables (broadcast strides, transposes, reductions).
inline constexpr size_t kMaxRank = 16;

inline Status CheckArity(const Step& step, size_t inputs, size_t outputs) {
  if (step.inputs.size() != inputs || step.outputs.size() != outputs)
    return Status::Error("kernel '", step.kernel, "' takes ", inputs, " input(s) and ", outputs,
                         " output(s); the step has ", step.inputs.size(), " and ",
                         step.outputs.size());
  return Status::Ok();
}

// The value info of a step input/output, or an error when the id is out of range.
inline Expected<const ValueInfo*> Info(const Module& module, int32_t id) {
  if (id < 0 || static_cast<size_t>(id) >= module.values.size())
    return Status::Error("value id ", id, " is not in the module");
  return &module.values[static_cast<size_t>(id)];
}

// The element type every input and the output share, or an error. `allowed` lists the types
// this kernel runs.
inline Expected<DType> CommonDType(const Step& step, const Module& module,
                                   std::span<const DType> allowed) {
  std::optional<DType> t;
  for (auto ids : {std::span<const int32_t>(step.inputs), std::span<const int32_t>(step.outputs)})
    for (int32_t id : ids) {
      KILN_ASSIGN_OR_RETURN(const ValueInfo* v, Info(module, id));
      if (t && *t != v->dtype)
        return Status::Error("values '", module.values[step.inputs[0]].name, "' and '", v->name,
                             "' must share one element type");
      t = v->dtype;
    }
  if (!t) return Status::Error("the step has no values");
  for (DType a : allowed)
    if (a == *t) return *t;
  return Status::Error("kernel '", step.kernel, "' does not run ", DTypeName(*t));
}

// The module rank of a value, or nullopt when unknown.
inline std::optional<size_t> Rank(const Module& module, int32_t id) {
  const ValueInfo& v = module.values[static_cast<size_t>(id)];
  if (!v.rank_known) return std::nullopt;
  return v.dims.size();
}

// Input dims handed to InferShapes / WorkspaceBytes: present, within the rank limit.
inline Expected<const Dims*> InputDims(std::span<const Dims* const> inputs, size_t i,
                                       const Step& step) {
  if (i >= inputs.size() || inputs[i] == nullptr)
    return Status::Error("step '", step.name, "': input ", i, " is missing");
  if (inputs[i]->size() > kMaxRank)
    return Status::Error("step '", step.name, "': input ", i, " has rank ", inputs[i]->size(),
                         " (at most ", kMaxRank, ")");
  for (int64_t d : *inputs[i])
    if (d < 0) return Status::Error("step '", step.name, "': input ", i, " has a negative dim");
  return inputs[i];
}

// Run-time check of an input tensor: present, of the step's type.
inline Status CheckTensor(const Tensor* t, DType dtype, const Step& step, const char* what) {
  if (t == nullptr || !t->defined())
    return Status::Error("step '", step.name, "': ", what, " is missing");
  if (t->dtype() != dtype)
    return Status::Error("step '", step.name, "': ", what, " is ", DescribeTensor(*t),
                         ", expected ", DTypeName(dtype));
  if (t->numel() > 0 && t->raw() == nullptr)
    return Status::Error("step '", step.name, "': ", what, " has no data");
  if (t->rank() > static_cast<int64_t>(kMaxRank))
    return Status::Error("step '", step.name, "': ", what, " has rank ", t->rank(), " (at most ",
                         kMaxRank, ")");
  return Status::Ok();
}

// The output must already have the dims InferShapes gave (kernels here never make outputs).
inline Status CheckOutput(const Tensor* t, DType dtype, std::span<const int64_t> dims,
                          const Step& step) {
  if (t == nullptr || !t->defined() || t->dtype() != dtype ||
      !std::equal(t->dims().begin(), t->dims().end(), dims.begin(), dims.end()) ||
      (t->numel() > 0 && t->raw() == nullptr))
    return Status::Error("step '", step.name, "': the output was not planned as ", DTypeName(dtype),
                         DimsToString(std::vector<int64_t>(dims.begin(), dims.end())));
  return Status::Ok();
}

// Normalizes an axis in [-rank, rank) to [0, rank), or an error.
inline Expected<size_t> NormalizeAxis(int64_t axis, size_t rank, const Step& step) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    return Status::Error("step '", step.name, "': axis ", axis, " is out of range for rank ", rank);
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

}  // namespace kiln::runtime::kernel_util
