#include "kernels/ref/signal.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace kiln::ref {
namespace {

// Writes double values into a float32 / float64 / float16 / bfloat16 / integer tensor.
// Converts n doubles into t's elements [offset, offset + n).
Status StoreAt(const double* v, int64_t n, Tensor* t, int64_t offset) {
  const DType type = t->dtype();
  Status st = Status::Ok();
  switch (type) {
    case DType::kFloat16:
      for (int64_t i = 0; i < n; ++i)
        t->data<uint16_t>()[offset + i] = FloatToHalf(static_cast<float>(v[i]));
      break;
    case DType::kBFloat16:
      for (int64_t i = 0; i < n; ++i)
        t->data<uint16_t>()[offset + i] = FloatToBFloat16(static_cast<float>(v[i]));
      break;
    default:
      KILN_DISPATCH_NUMERIC(type, T,
                            st = Status::Error("unsupported output type ", DTypeName(type)),
                            for (int64_t i = 0; i < n; ++i) t->data<T>()[offset + i] =
                                static_cast<T>(v[i]));
  }
  return st;
}

Status Store(const std::vector<double>& v, DType type, const std::vector<int64_t>& dims,
             Tensor* out) {
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Make(type, dims, "output"));
  KILN_RETURN_IF_ERROR(StoreAt(v.data(), static_cast<int64_t>(v.size()), &t, 0));
  *out = std::move(t);
  return Status::Ok();
}

}  // namespace

Status Dft(const Tensor& x, int64_t axis, int64_t length, bool inverse, bool onesided,
           Tensor* out) {
  if (x.rank() < 2) return Status::Error("DFT: input must have rank >= 2, got ", DescribeTensor(x));
  const int64_t c = x.dim(x.rank() - 1);
  if (c != 1 && c != 2)
    return Status::Error("DFT: the last dim must be 1 (real) or 2 (complex), got ",
                         DescribeTensor(x));
  if (axis < 0 || axis >= x.rank() - 1)
    return Status::Error("DFT: axis ", axis, " must name a signal dim of ", DescribeTensor(x));
  if (length < 1) return Status::Error("DFT: dft_length must be positive, got ", length);
  if (!IsFloat(x.dtype())) return Status::Error("DFT: input must be float, got ", DescribeTensor(x));
  const int64_t n_in = x.dim(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dim(i);
  for (int64_t i = axis + 1; i < x.rank() - 1; ++i) inner *= x.dim(i);
  const bool real_out = inverse && onesided;
  const int64_t n_out = real_out ? length : onesided ? length / 2 + 1 : length;
  // Inverse onesided reads bins 0..length/2 and mirrors the rest (Hermitian symmetry).
  const int64_t n_used = real_out ? std::min(n_in, length / 2 + 1) : std::min(n_in, length);
  const double work = static_cast<double>(outer) * inner * n_out * (real_out ? length : n_used);
  if (work > static_cast<double>(kMaxDftWork))
    return Status::Error("DFT: ", work, " multiply-adds exceed the reference kernel's limit of ",
                         kMaxDftWork);
  std::vector<int64_t> dims = x.dims();
  dims[axis] = n_out;
  dims.back() = real_out ? 1 : 2;
  KILN_ASSIGN_OR_RETURN(int64_t total, CheckedNumel(dims, "DFT output"));
  std::vector<double> y(total, 0.0);
  const double sign = inverse ? 1.0 : -1.0;
  const double scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  const double two_pi = 2 * std::numbers::pi;
  auto in = [&](int64_t o, int64_t t, int64_t i, int part) {
    if (part >= c) return 0.0;
    return x.AsDouble(((o * n_in + t) * inner + i) * c + part);
  };
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<double> re(real_out ? length : n_used), im(re.size());
      for (int64_t t = 0; t < n_used; ++t) {
        re[t] = in(o, t, i, 0);
        im[t] = in(o, t, i, 1);
      }
      if (real_out)
        for (int64_t k = length / 2 + 1; k < length; ++k) {
          re[k] = re[length - k];
          im[k] = -im[length - k];
        }
      for (int64_t k = 0; k < n_out; ++k) {
        double sr = 0, si = 0;
        for (size_t t = 0; t < re.size(); ++t) {
          // Reduce k * t modulo length first so the angle stays exact for long signals.
          const double a = sign * two_pi * static_cast<double>((k * static_cast<int64_t>(t)) % length) /
                           static_cast<double>(length);
          const double cs = std::cos(a), sn = std::sin(a);
          sr += re[t] * cs - im[t] * sn;
          si += re[t] * sn + im[t] * cs;
        }
        const int64_t base = ((o * n_out + k) * inner + i) * (real_out ? 1 : 2);
        y[base] = sr * scale;
        if (!real_out) y[base + 1] = si * scale;
      }
    }
  }
  return Store(y, x.dtype(), dims, out);
}

Status Stft(const Tensor& signal, int64_t frame_step, const Tensor* window, int64_t frame_length,
            bool onesided, Tensor* out) {
  if (signal.rank() != 3 || (signal.dim(2) != 1 && signal.dim(2) != 2))
    return Status::Error("STFT: signal must be [batch, length, 1 or 2], got ",
                         DescribeTensor(signal));
  if (frame_step < 1) return Status::Error("STFT: frame_step must be positive, got ", frame_step);
  if (window != nullptr) {
    if (window->rank() != 1)
      return Status::Error("STFT: window must be 1-D, got ", DescribeTensor(*window));
    if (frame_length >= 0 && frame_length != window->dim(0))
      return Status::Error("STFT: frame_length ", frame_length, " differs from the window's ",
                           window->dim(0));
    frame_length = window->dim(0);
  }
  const int64_t batch = signal.dim(0), len = signal.dim(1), c = signal.dim(2);
  if (frame_length < 1 || frame_length > len)
    return Status::Error("STFT: frame_length ", frame_length, " must be in [1, ", len, "]");
  if (onesided && c == 2) return Status::Error("STFT: onesided needs a real signal");
  const int64_t frames = (len - frame_length) / frame_step + 1;
  // Frames become the batch of one DFT over axis 2 of [batch, frames, frame_length, c].
  KILN_ASSIGN_OR_RETURN(Tensor framed, Tensor::Make(DType::kFloat64,
                                                    {batch, frames, frame_length, c}, "frames"));
  double* f = framed.data<double>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t fr = 0; fr < frames; ++fr)
      for (int64_t t = 0; t < frame_length; ++t) {
        const double w = window != nullptr ? window->AsDouble(t) : 1.0;
        for (int64_t p = 0; p < c; ++p)
          *f++ = w * signal.AsDouble((b * len + fr * frame_step + t) * c + p);
      }
  Tensor spectrum;
  KILN_RETURN_IF_ERROR(Dft(framed, 2, frame_length, false, onesided, &spectrum));
  std::vector<double> v(spectrum.numel());
  for (int64_t i = 0; i < spectrum.numel(); ++i) v[i] = spectrum.data<double>()[i];
  return Store(v, signal.dtype(), spectrum.dims(), out);
}

Status Window(WindowKind kind, int64_t size, bool periodic, DType out_type, Tensor* out) {
  if (size < 0) return Status::Error("window size must be >= 0, got ", size);
  // The output is made (and its size checked) first; the doubles go through a small block, so a
  // huge size never builds a hidden buffer twice the output's size.
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Make(out_type, {size}, "window"));
  const double denom = static_cast<double>(periodic ? size : size - 1);
  const double two_pi = 2 * std::numbers::pi;
  constexpr int64_t kBlock = 1024;
  double v[kBlock] = {};
  for (int64_t start = 0; start < size; start += kBlock) {
    const int64_t n = std::min(kBlock, size - start);
    for (int64_t j = 0; j < n; ++j) {
      const double a = denom == 0 ? 0.0 : two_pi * static_cast<double>(start + j) / denom;
      switch (kind) {
        case WindowKind::kHann: v[j] = 0.5 - 0.5 * std::cos(a); break;
        case WindowKind::kHamming: v[j] = 25.0 / 46 - 21.0 / 46 * std::cos(a); break;
        case WindowKind::kBlackman: v[j] = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a); break;
      }
    }
    KILN_RETURN_IF_ERROR(StoreAt(v, n, &t, start));
  }
  if (size == 0) KILN_RETURN_IF_ERROR(StoreAt(v, 0, &t, 0));  // still refuse a bad type
  *out = std::move(t);
  return Status::Ok();
}

Status MelWeightMatrix(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate,
                       double lower_hz, double upper_hz, DType out_type, Tensor* out) {
  if (num_mel_bins < 1 || dft_length < 1 || sample_rate < 1)
    return Status::Error("MelWeightMatrix: num_mel_bins, dft_length and sample_rate must be "
                         "positive");
  if (!(lower_hz >= 0) || !(upper_hz > lower_hz) || !std::isfinite(upper_hz))
    return Status::Error("MelWeightMatrix: need 0 <= lower_edge_hertz < upper_edge_hertz, got ",
                         lower_hz, " and ", upper_hz);
  const int64_t bins = dft_length / 2 + 1;
  KILN_ASSIGN_OR_RETURN(int64_t total, CheckedNumel({bins, num_mel_bins}, "MelWeightMatrix"));
  if (total > (int64_t{1} << 31)) return Status::Error("MelWeightMatrix: output is too large");
  auto to_mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  const double low = to_mel(lower_hz), high = to_mel(upper_hz);
  // ONNX's reference divides the mel range by num_mel_bins + 2 points; kept for agreement.
  const double step = (high - low) / static_cast<double>(num_mel_bins + 2);
  std::vector<int64_t> edge(num_mel_bins + 2);
  for (int64_t i = 0; i < num_mel_bins + 2; ++i) {
    const double hz = 700 * (std::pow(10.0, (i * step + low) / 2595) - 1);
    if (!(hz * (dft_length + 1) / sample_rate < 1e15))
      return Status::Error("MelWeightMatrix: upper_edge_hertz ", upper_hz, " is too large");
    edge[i] = static_cast<int64_t>(std::floor((dft_length + 1) * hz / sample_rate));
  }
  std::vector<double> v(total, 0.0);
  auto set = [&](int64_t j, int64_t i, double w) -> Status {
    if (j < 0 || j >= bins)
      return Status::Error("MelWeightMatrix: upper_edge_hertz ", upper_hz,
                           " lies above the Nyquist bin of dft_length ", dft_length);
    v[j * num_mel_bins + i] = w;
    return Status::Ok();
  };
  for (int64_t i = 0; i < num_mel_bins; ++i) {
    const int64_t lo = edge[i], mid = edge[i + 1], hi = edge[i + 2];
    if (mid == lo) {
      KILN_RETURN_IF_ERROR(set(mid, i, 1.0));
    } else {
      for (int64_t j = lo; j <= mid; ++j)
        KILN_RETURN_IF_ERROR(set(j, i, static_cast<double>(j - lo) / (mid - lo)));
    }
    for (int64_t j = mid; j < hi; ++j)
      KILN_RETURN_IF_ERROR(set(j, i, static_cast<double>(hi - j) / (hi - mid)));
  }
  return Store(v, out_type, {bins, num_mel_bins}, out);
}

}  // namespace kiln::ref
