// Readers the prepacked-weight kernels (conv2d, gemm) share. A module may be hostile: every
// blob index and size and every param is checked before a kernel trusts it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "kernels/gemm/gemm.h"
#include "runtime/module.h"
#include "support/status.h"

namespace kiln::runtime::prepacked {

// The bytes of the step's i-th blob.
inline Expected<std::span<const std::byte>> StepBlob(const Step& step, const Module& module, size_t i) {
  if (i >= step.blobs.size()) return Status::Error("blob ", i, " of the step is missing");
  const int32_t id = step.blobs[i];
  if (id < 0 || static_cast<size_t>(id) >= module.blobs.size()) {
    return Status::Error("the step's blob ", id, " does not exist");
  }
  const Blob& b = module.blobs[static_cast<size_t>(id)];
  if (!module.weights || b.offset > module.weights_size ||
      b.size > module.weights_size - b.offset) {
    return Status::Error("blob ", id, " lies outside the module's weights");
  }
  return module.BlobBytes(id);
}

// An int param in [lo, hi].
inline Expected<size_t> SizeParam(const StepParams& params, const std::string& key, int64_t lo,
                           int64_t hi) {
  KILN_ASSIGN_OR_RETURN(int64_t v, params.Int(key));
  if (v < lo || v > hi) {
    return Status::Error("step parameter '", key, "' = ", v, " is outside [", lo, ", ", hi, "]");
  }
  return static_cast<size_t>(v);
}

// The epilogue's activation from the params (named by gemm::ActivationName).
inline Status ReadActivation(const StepParams& params, gemm::Epilogue* ep) {
  KILN_ASSIGN_OR_RETURN(std::string name, params.String("activation"));
  bool found = false;
  for (gemm::Activation a :
       {gemm::Activation::kNone, gemm::Activation::kRelu, gemm::Activation::kClip,
        gemm::Activation::kSilu, gemm::Activation::kHardSwish, gemm::Activation::kGelu}) {
    if (name == gemm::ActivationName(a)) {
      ep->activation = a;
      found = true;
    }
  }
  if (!found) return Status::Error("unknown activation '", name, "'");
  ep->clip_min = static_cast<float>(params.FloatOr("clip_min", 0.0));
  ep->clip_max = static_cast<float>(params.FloatOr("clip_max", 6.0));
  if (ep->activation == gemm::Activation::kClip && !(ep->clip_min <= ep->clip_max)) {
    return Status::Error("clip bounds [", ep->clip_min, ", ", ep->clip_max, "] are not ordered");
  }
  return Status::Ok();
}

}  // namespace kiln::runtime::prepacked
