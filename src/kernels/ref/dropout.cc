#include "kernels/ref/dropout.h"

#include <random>

namespace kiln::ref {

Status DropoutTrain(const Tensor& x, double ratio, uint32_t seed, Tensor* y, Tensor* mask) {
  if (!(ratio >= 0.0 && ratio < 1.0))
    return Status::Error("dropout ratio ", ratio, " must be in [0, 1)");
  const DType t = x.dtype();
  if (t != DType::kFloat32 && t != DType::kFloat64 && t != DType::kFloat16)
    return Status::Error("dropout needs float16, float32 or float64 data, got ", DTypeName(t));
  *y = Tensor(t, x.dims());
  *mask = Tensor(DType::kBool, x.dims());
  std::mt19937 gen(seed);
  const double scale = 1.0 / (1.0 - ratio);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const uint32_t a = gen() >> 5, b = gen() >> 6;
    const double u = (a * 67108864.0 + b) / 9007199254740992.0;
    const bool keep = u >= ratio;
    mask->data<bool>()[i] = keep;
    const double v = keep ? x.AsDouble(i) * scale : 0.0;
    switch (t) {
      case DType::kFloat32: y->data<float>()[i] = static_cast<float>(v); break;
      case DType::kFloat64: y->data<double>()[i] = v; break;
      default: y->data<uint16_t>()[i] = FloatToHalf(static_cast<float>(v)); break;
    }
  }
  return Status::Ok();
}

}  // namespace kiln::ref
