#include "kernels/ref/norm.h"

#include <cmath>

namespace kiln::ref {
namespace {

// Mean and population variance of `count` contiguous values, in two passes (the
// centred second pass keeps the variance accurate when the mean is large).
template <class T>
void MeanVar(const T* x, int64_t count, double* mean, double* var) {
  double s = 0;
  for (int64_t i = 0; i < count; ++i) s += static_cast<double>(x[i]);
  const double m = count > 0 ? s / static_cast<double>(count) : 0.0;
  double q = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double d = static_cast<double>(x[i]) - m;
    q += d * d;
  }
  *mean = m;
  *var = count > 0 ? q / static_cast<double>(count) : 0.0;
}

}  // namespace

template <class T>
void BatchNormInference(const NCS& s, const T* x, const T* scale, const T* bias, const T* mean,
                        const T* var, double eps, bool per_element, T* y) {
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t c = 0; c < s.c; ++c) {
      const int64_t base = (n * s.c + c) * s.spatial;
      for (int64_t i = 0; i < s.spatial; ++i) {
        const int64_t p = per_element ? c * s.spatial + i : c;
        const double inv = 1.0 / std::sqrt(static_cast<double>(var[p]) + eps);
        y[base + i] =
            static_cast<T>((static_cast<double>(x[base + i]) - mean[p]) * inv * scale[p] + bias[p]);
      }
    }
  }
}

template <class T>
void BatchNormTraining(const NCS& s, const T* x, const T* scale, const T* bias, const T* input_mean,
                       const T* input_var, double eps, double momentum, T* y, T* running_mean,
                       T* running_var) {
  const double count = static_cast<double>(s.n * s.spatial);
  for (int64_t c = 0; c < s.c; ++c) {
    double sum = 0;
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t i = 0; i < s.spatial; ++i) sum += x[(n * s.c + c) * s.spatial + i];
    const double mean = count > 0 ? sum / count : 0.0;
    double q = 0;
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t i = 0; i < s.spatial; ++i) {
        const double d = x[(n * s.c + c) * s.spatial + i] - mean;
        q += d * d;
      }
    const double var = count > 0 ? q / count : 0.0;
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t i = 0; i < s.spatial; ++i) {
        const int64_t k = (n * s.c + c) * s.spatial + i;
        y[k] = static_cast<T>((x[k] - mean) * inv * scale[c] + bias[c]);
      }
    if (running_mean)
      running_mean[c] = static_cast<T>(input_mean[c] * momentum + mean * (1 - momentum));
    if (running_var)
      running_var[c] = static_cast<T>(input_var[c] * momentum + var * (1 - momentum));
  }
}

template <class T>
void InstanceNorm(const NCS& s, const T* x, const T* scale, const T* bias, double eps, T* y) {
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t c = 0; c < s.c; ++c) {
      const int64_t base = (n * s.c + c) * s.spatial;
      double mean, var;
      MeanVar(x + base, s.spatial, &mean, &var);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t i = 0; i < s.spatial; ++i)
        y[base + i] = static_cast<T>((x[base + i] - mean) * inv * scale[c] + bias[c]);
    }
  }
}

template <class T>
void GroupNorm(const NCS& s, int64_t groups, const T* x, const T* scale, const T* bias,
               bool per_group, double eps, T* y) {
  const int64_t cpg = s.c / groups, group_size = cpg * s.spatial;
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t base = (n * s.c + g * cpg) * s.spatial;
      double mean, var;
      MeanVar(x + base, group_size, &mean, &var);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t i = 0; i < group_size; ++i) {
        const int64_t p = per_group ? g : g * cpg + i / s.spatial;
        y[base + i] = static_cast<T>((x[base + i] - mean) * inv * scale[p] + bias[p]);
      }
    }
  }
}

template <class T>
void LayerNorm(int64_t outer, int64_t inner, const T* x, const T* scale, const T* bias, double eps,
               T* y, T* mean_out, T* inv_std_out) {
  for (int64_t o = 0; o < outer; ++o) {
    const T* xr = x + o * inner;
    double mean, var;
    MeanVar(xr, inner, &mean, &var);
    const double inv = 1.0 / std::sqrt(var + eps);
    T* yr = y + o * inner;
    for (int64_t i = 0; i < inner; ++i) {
      double v = (xr[i] - mean) * inv * static_cast<double>(scale[i]);
      if (bias) v += bias[i];
      yr[i] = static_cast<T>(v);
    }
    if (mean_out) mean_out[o] = static_cast<T>(mean);
    if (inv_std_out) inv_std_out[o] = static_cast<T>(inv);
  }
}

template <class T>
void Lrn(const NCS& s, const T* x, int64_t size, double alpha, double beta, double bias, T* y) {
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t c = 0; c < s.c; ++c) {
      const int64_t lo = c - before < 0 ? 0 : c - before;
      const int64_t hi = c + after >= s.c ? s.c - 1 : c + after;
      for (int64_t i = 0; i < s.spatial; ++i) {
        double sq = 0;
        for (int64_t k = lo; k <= hi; ++k) {
          const double v = x[(n * s.c + k) * s.spatial + i];
          sq += v * v;
        }
        const int64_t idx = (n * s.c + c) * s.spatial + i;
        y[idx] =
            static_cast<T>(x[idx] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
      }
    }
  }
}

template <class T>
void MeanVarianceNorm(const std::vector<int64_t>& dims, const std::vector<bool>& reduce, const T* x,
                      T* y) {
  // Each element belongs to the group given by its index over the kept dims.
  int64_t numel = 1, groups = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    numel *= dims[d];
    if (!reduce[d]) groups *= dims[d];
  }
  std::vector<int64_t> group_of(numel);
  std::vector<int64_t> pos(dims.size(), 0);
  for (int64_t i = 0; i < numel; ++i) {
    int64_t g = 0;
    for (size_t d = 0; d < dims.size(); ++d)
      if (!reduce[d]) g = g * dims[d] + pos[d];
    group_of[i] = g;
    for (size_t d = dims.size(); d-- > 0;) {
      if (++pos[d] < dims[d]) break;
      pos[d] = 0;
    }
  }
  std::vector<double> sum(groups, 0.0), sq(groups, 0.0), count(groups, 0.0);
  for (int64_t i = 0; i < numel; ++i) {
    sum[group_of[i]] += x[i];
    count[group_of[i]] += 1;
  }
  for (int64_t g = 0; g < groups; ++g) sum[g] = count[g] > 0 ? sum[g] / count[g] : 0.0;
  for (int64_t i = 0; i < numel; ++i) {
    const double d = x[i] - sum[group_of[i]];
    sq[group_of[i]] += d * d;
  }
  for (int64_t i = 0; i < numel; ++i) {
    const int64_t g = group_of[i];
    const double sd = std::sqrt(count[g] > 0 ? sq[g] / count[g] : 0.0);
    y[i] = static_cast<T>((x[i] - sum[g]) / (sd + 1e-9));
  }
}

#define KILN_INSTANTIATE_NORM(T)                                                                   \
  template void BatchNormInference<T>(const NCS&, const T*, const T*, const T*, const T*,          \
                                      const T*, double, bool, T*);                                 \
  template void BatchNormTraining<T>(const NCS&, const T*, const T*, const T*, const T*, const T*, \
                                     double, double, T*, T*, T*);                                  \
  template void InstanceNorm<T>(const NCS&, const T*, const T*, const T*, double, T*);             \
  template void GroupNorm<T>(const NCS&, int64_t, const T*, const T*, const T*, bool, double, T*); \
  template void LayerNorm<T>(int64_t, int64_t, const T*, const T*, const T*, double, T*, T*, T*);  \
  template void Lrn<T>(const NCS&, const T*, int64_t, double, double, double, T*);                 \
  template void MeanVarianceNorm<T>(const std::vector<int64_t>&, const std::vector<bool>&,         \
                                    const T*, T*);
KILN_INSTANTIATE_NORM(float)
KILN_INSTANTIATE_NORM(double)
#undef KILN_INSTANTIATE_NORM

}  // namespace kiln::ref
