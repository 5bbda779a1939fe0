#include "kernels/ref/pool.h"

#include <cmath>
#include <limits>

namespace kiln::ref {
namespace {

// Calls visit(input_offset, inside) for every position of the window of output (od, oh, ow);
// `inside` is false for positions in the padding, whose offset must not be read.
template <class Visit>
inline void ForWindow(const ConvGeometry& g, int64_t od, int64_t oh, int64_t ow, Visit&& visit) {
  for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
    const int64_t id = od * g.stride[0] + kd * g.dilation[0] - g.pad_begin[0];
    for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
      const int64_t ih = oh * g.stride[1] + kh * g.dilation[1] - g.pad_begin[1];
      for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
        const int64_t iw = ow * g.stride[2] + kw * g.dilation[2] - g.pad_begin[2];
        const bool inside =
            id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2];
        visit(id, ih, iw, inside);
      }
    }
  }
}

// Runs body(plane_in, plane_out_index_base, od, oh, ow, out_index) for every output element.
template <class Body>
void ForOutputs(const ConvGeometry& g, Body&& body) {
  const int64_t planes = g.batch * g.in_channels;
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow)
          body(pl, od, oh, ow, ((pl * g.out[0] + od) * g.out[1] + oh) * g.out[2] + ow);
}

}  // namespace

template <class T>
void MaxPool(const PoolGeometry& p, const T* x, T* y, int64_t* indices, bool col_major) {
  const ConvGeometry& g = p.g;
  const int64_t in_size = g.in_size();
  ForOutputs(g, [&](int64_t pl, int64_t od, int64_t oh, int64_t ow, int64_t o) {
    const T* xp = x + pl * in_size;
    T best = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::lowest();
    int64_t best_index = -1;
    ForWindow(g, od, oh, ow, [&](int64_t id, int64_t ih, int64_t iw, bool inside) {
      if (!inside) return;
      const int64_t off = (id * g.in[1] + ih) * g.in[2] + iw;
      if (best_index < 0 || xp[off] > best) {
        best = xp[off];
        best_index = col_major ? id + g.in[0] * (ih + g.in[1] * iw) : off;
      }
    });
    y[o] = best;
    if (indices) indices[o] = best_index < 0 ? 0 : pl * in_size + best_index;
  });
}

template <class T>
void AveragePool(const PoolGeometry& p, const T* x, T* y, bool count_include_pad) {
  const ConvGeometry& g = p.g;
  const int64_t in_size = g.in_size();
  ForOutputs(g, [&](int64_t pl, int64_t od, int64_t oh, int64_t ow, int64_t o) {
    const T* xp = x + pl * in_size;
    double sum = 0;
    int64_t count = 0;
    ForWindow(g, od, oh, ow, [&](int64_t id, int64_t ih, int64_t iw, bool inside) {
      if (inside) {
        sum += static_cast<double>(xp[(id * g.in[1] + ih) * g.in[2] + iw]);
        ++count;
      } else if (count_include_pad && id >= -g.pad_begin[0] && id < g.in[0] + p.pad_end[0] &&
                 ih >= -g.pad_begin[1] && ih < g.in[1] + p.pad_end[1] && iw >= -g.pad_begin[2] &&
                 iw < g.in[2] + p.pad_end[2]) {
        ++count;
      }
    });
    y[o] = count > 0 ? static_cast<T>(sum / static_cast<double>(count))
                     : std::numeric_limits<T>::quiet_NaN();
  });
}

template <class T>
void LpPool(const PoolGeometry& p, const T* x, T* y, double power) {
  const ConvGeometry& g = p.g;
  const int64_t in_size = g.in_size();
  ForOutputs(g, [&](int64_t pl, int64_t od, int64_t oh, int64_t ow, int64_t o) {
    const T* xp = x + pl * in_size;
    double sum = 0;
    ForWindow(g, od, oh, ow, [&](int64_t id, int64_t ih, int64_t iw, bool inside) {
      if (inside)
        sum +=
            std::pow(std::fabs(static_cast<double>(xp[(id * g.in[1] + ih) * g.in[2] + iw])), power);
    });
    y[o] = static_cast<T>(std::pow(sum, 1.0 / power));
  });
}

template <class T>
void GlobalPool(GlobalPoolKind kind, int64_t planes, int64_t plane_size, const T* x, T* y,
                double power) {
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* xp = x + pl * plane_size;
    double acc = kind == GlobalPoolKind::kMax ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t i = 0; i < plane_size; ++i) {
      const double v = static_cast<double>(xp[i]);
      if (kind == GlobalPoolKind::kMax)
        acc = v > acc || std::isnan(v) ? v : acc;
      else if (kind == GlobalPoolKind::kAverage)
        acc += v;
      else
        acc += std::pow(std::fabs(v), power);
    }
    if (kind == GlobalPoolKind::kAverage) acc /= static_cast<double>(plane_size);
    if (kind == GlobalPoolKind::kLp) acc = std::pow(acc, 1.0 / power);
    y[pl] = static_cast<T>(acc);
  }
}

template <class T>
Status MaxUnpool(const T* x, const int64_t* indices, int64_t n, T* y, int64_t y_numel) {
  for (int64_t i = 0; i < n; ++i) {
    if (indices[i] < 0 || indices[i] >= y_numel)
      return Status::Error("index ", indices[i], " at position ", i, " is outside the output of ",
                           y_numel, " elements");
    y[indices[i]] = x[i];
  }
  return Status::Ok();
}

template void MaxPool<float>(const PoolGeometry&, const float*, float*, int64_t*, bool);
template void MaxPool<double>(const PoolGeometry&, const double*, double*, int64_t*, bool);
template void MaxPool<int8_t>(const PoolGeometry&, const int8_t*, int8_t*, int64_t*, bool);
template void MaxPool<uint8_t>(const PoolGeometry&, const uint8_t*, uint8_t*, int64_t*, bool);
template void AveragePool<float>(const PoolGeometry&, const float*, float*, bool);
template void AveragePool<double>(const PoolGeometry&, const double*, double*, bool);
template void LpPool<float>(const PoolGeometry&, const float*, float*, double);
template void LpPool<double>(const PoolGeometry&, const double*, double*, double);
template void GlobalPool<float>(GlobalPoolKind, int64_t, int64_t, const float*, float*, double);
template void GlobalPool<double>(GlobalPoolKind, int64_t, int64_t, const double*, double*, double);
template Status MaxUnpool<float>(const float*, const int64_t*, int64_t, float*, int64_t);
template Status MaxUnpool<double>(const double*, const int64_t*, int64_t, double*, int64_t);

}  // namespace kiln::ref
