// Reference normalizations. Tensors are viewed as [n, c, spatial] (channel-wise ops) or
// [outer, inner] (LayerNorm); statistics accumulate in double and variances are population
// variances (divided by the count), as ONNX specifies.
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::ref {

struct NCS {
  int64_t n = 1, c = 1, spatial = 1;
};

// y = (x - mean) / sqrt(var + eps) * scale + bias. Parameters hold one value per channel, or
// (per_element, BatchNorm's old spatial=0) one per channel-and-spatial position.
template <class T>
void BatchNormInference(const NCS& s, const T* x, const T* scale, const T* bias, const T* mean,
                        const T* var, double eps, bool per_element, T* y);

// Training mode: normalizes with the batch's statistics and returns the running statistics
// running = input * momentum + batch * (1 - momentum) in running_mean / running_var (nullable).
template <class T>
void BatchNormTraining(const NCS& s, const T* x, const T* scale, const T* bias, const T* input_mean,
                       const T* input_var, double eps, double momentum, T* y, T* running_mean,
                       T* running_var);

// Per (n, c) plane: y = (x - mean) / sqrt(var + eps) * scale[c] + bias[c].
template <class T>
void InstanceNorm(const NCS& s, const T* x, const T* scale, const T* bias, double eps, T* y);

// Channels split into `groups` groups normalized together; scale/bias have one entry per
// channel, or per group when per_group.
template <class T>
void GroupNorm(const NCS& s, int64_t groups, const T* x, const T* scale, const T* bias,
               bool per_group, double eps, T* y);

// Each of `outer` rows of `inner` elements: y = (x - mean) * inv_std * scale + bias, where
// scale and bias (nullable) hold `inner` values. mean / inv_std (nullable) get one per row.
template <class T>
void LayerNorm(int64_t outer, int64_t inner, const T* x, const T* scale, const T* bias, double eps,
               T* y, T* mean, T* inv_std);

// Local response normalization across channels.
template <class T>
void Lrn(const NCS& s, const T* x, int64_t size, double alpha, double beta, double bias, T* y);

// y = (x - mean) / (sqrt(var) + 1e-9) with statistics over the dims where reduce[d] is true.
template <class T>
void MeanVarianceNorm(const std::vector<int64_t>& dims, const std::vector<bool>& reduce, const T* x,
                      T* y);

}  // namespace kiln::ref
