// Reference signal kernels: DFT (a direct O(n^2) sum, the obviously correct form), STFT, the
// Hann/Hamming/Blackman windows and MelWeightMatrix. Sums are float64.
#pragma once

#include <cstdint>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ref {

// The direct DFT costs (transforms * inputs * outputs) multiply-adds; beyond this bound it is an
// error rather than a run that looks like a hang.
inline constexpr int64_t kMaxDftWork = int64_t{1} << 32;

// x: [..., n, ..., C] with C = 1 (real) or 2 (complex) last, transformed along `axis` (not the
// last). `length` zero-pads or truncates the signal. Forward output: [..., length or
// length/2+1 when onesided, ..., 2]. Inverse scales by 1/length; inverse + onesided reads a
// half spectrum and gives the real signal [..., length, ..., 1].
Status Dft(const Tensor& x, int64_t axis, int64_t length, bool inverse, bool onesided,
           Tensor* out);

// signal [batch, length, C]; window (nullptr: rectangular of frame_length). Output
// [batch, frames, bins, 2], frames = (length - frame_length) / frame_step + 1.
Status Stft(const Tensor& signal, int64_t frame_step, const Tensor* window, int64_t frame_length,
            bool onesided, Tensor* out);

enum class WindowKind { kHann, kHamming, kBlackman };
Status Window(WindowKind kind, int64_t size, bool periodic, DType out_type, Tensor* out);

// [dft_length / 2 + 1, num_mel_bins] triangular filters, as ONNX's reference builds them.
Status MelWeightMatrix(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate,
                       double lower_hz, double upper_hz, DType out_type, Tensor* out);

}  // namespace kiln::ref
