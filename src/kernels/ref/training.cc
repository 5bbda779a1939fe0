#include "kernels/ref/training.h"

#include <cmath>
#include <initializer_list>

namespace kiln::ref {
namespace {

// x decides the type; every other tensor must match it in type and shape.
Status CheckGroup(std::initializer_list<const Tensor*> ts) {
  const Tensor& x = **ts.begin();
  if (x.dtype() != DType::kFloat32 && x.dtype() != DType::kFloat64)
    return Status::Error("optimizer tensors must be float32 or float64, got ", DescribeTensor(x));
  for (const Tensor* t : ts)
    if (t->dtype() != x.dtype() || t->dims() != x.dims())
      return Status::Error("optimizer tensor ", DescribeTensor(*t), " does not match ",
                           DescribeTensor(x));
  return Status::Ok();
}

void Store(Tensor* t, int64_t i, double v) {
  if (t->dtype() == DType::kFloat32) {
    t->data<float>()[i] = static_cast<float>(v);
  } else {
    t->data<double>()[i] = v;
  }
}

}  // namespace

Status AdagradStep(double rate, int64_t step, const AdagradParams& p, const Tensor& x,
                   const Tensor& g, const Tensor& h, Tensor* x_new, Tensor* h_new) {
  KILN_RETURN_IF_ERROR(CheckGroup({&x, &g, &h}));
  *x_new = Tensor(x.dtype(), x.dims());
  *h_new = Tensor(x.dtype(), x.dims());
  const double r = rate / (1.0 + static_cast<double>(step) * p.decay_factor);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double xv = x.AsDouble(i);
    const double gr = p.norm_coefficient * xv + g.AsDouble(i);
    const double hn = h.AsDouble(i) + gr * gr;
    Store(h_new, i, hn);
    Store(x_new, i, xv - r * gr / (std::sqrt(hn) + p.epsilon));
  }
  return Status::Ok();
}

Status MomentumStep(double rate, int64_t step, const MomentumParams& p, const Tensor& x,
                    const Tensor& g, const Tensor& v, Tensor* x_new, Tensor* v_new) {
  KILN_RETURN_IF_ERROR(CheckGroup({&x, &g, &v}));
  *x_new = Tensor(x.dtype(), x.dims());
  *v_new = Tensor(x.dtype(), x.dims());
  // The first step takes the whole gradient: there is no history for beta to damp yet.
  const double beta = step > 0 ? p.beta : 1.0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double xv = x.AsDouble(i);
    const double gr = p.norm_coefficient * xv + g.AsDouble(i);
    const double vn = p.alpha * v.AsDouble(i) + beta * gr;
    Store(v_new, i, vn);
    Store(x_new, i, xv - rate * (p.nesterov ? gr + p.alpha * vn : vn));
  }
  return Status::Ok();
}

Status AdamStep(double rate, int64_t step, const AdamParams& p, const Tensor& x, const Tensor& g,
                const Tensor& v, const Tensor& h, Tensor* x_new, Tensor* v_new, Tensor* h_new) {
  KILN_RETURN_IF_ERROR(CheckGroup({&x, &g, &v, &h}));
  *x_new = Tensor(x.dtype(), x.dims());
  *v_new = Tensor(x.dtype(), x.dims());
  *h_new = Tensor(x.dtype(), x.dims());
  double r = rate;
  if (step > 0) {
    const double t = static_cast<double>(step);
    r = rate * std::sqrt(1.0 - std::pow(p.beta, t)) / (1.0 - std::pow(p.alpha, t));
  }
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double xv = x.AsDouble(i);
    const double gr = p.norm_coefficient * xv + g.AsDouble(i);
    const double vn = p.alpha * v.AsDouble(i) + (1.0 - p.alpha) * gr;
    const double hn = p.beta * h.AsDouble(i) + (1.0 - p.beta) * gr * gr;
    Store(v_new, i, vn);
    Store(h_new, i, hn);
    Store(x_new, i, (1.0 - p.norm_coefficient_post) * (xv - r * vn / (std::sqrt(hn) + p.epsilon)));
  }
  return Status::Ok();
}

}  // namespace kiln::ref
