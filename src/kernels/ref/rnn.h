// Reference recurrent cells: RNN, GRU and LSTM with ONNX's gate layouts, directions,
// per-batch sequence lengths and both layouts. Arithmetic is float64 whatever the element type.
#pragma once

#include <cstdint>
#include <vector>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ref {

enum class RnnCell { kRnn, kGru, kLstm };

struct RnnActivation {
  enum class Kind {
    kRelu,
    kTanh,
    kSigmoid,
    kAffine,
    kLeakyRelu,
    kThresholdedRelu,
    kScaledTanh,
    kHardSigmoid,
    kElu,
    kSoftsign,
    kSoftplus,
  };
  Kind kind = Kind::kTanh;
  double alpha = 0.0;
  double beta = 0.0;
};
double ApplyRnnActivation(const RnnActivation& a, double x);

// Activations per direction: RNN 1 (f), GRU 2 (f, g), LSTM 3 (f, g, h).
int RnnActivationsPerDirection(RnnCell cell);
// Gates: RNN 1, GRU 3 (z, r, h), LSTM 4 (i, o, f, c).
int RnnGates(RnnCell cell);

struct RnnOptions {
  RnnCell cell = RnnCell::kRnn;
  int64_t hidden = 0;
  int num_directions = 1;
  bool reverse = false;  // with one direction: run it backwards
  bool batch_first = false;  // layout = 1: X [batch, seq, input], Y [batch, seq, dirs, hidden]
  // num_directions * RnnActivationsPerDirection(cell) entries.
  std::vector<RnnActivation> activations;
  double clip = 0.0;  // 0: no clipping of gate pre-activations
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;  // LSTM: couple the forget gate to 1 - input gate
};

// Optional tensors are nullptr; seq_lens is empty when every sequence has full length.
struct RnnInputs {
  const Tensor* x = nullptr;
  const Tensor* w = nullptr;
  const Tensor* r = nullptr;
  const Tensor* b = nullptr;
  const Tensor* initial_h = nullptr;
  const Tensor* initial_c = nullptr;
  const Tensor* p = nullptr;
  std::vector<int64_t> seq_lens;
};

struct RnnOutputs {
  Tensor y, y_h, y_c;  // y_c only for LSTM
};

// Checks every shape against X, W and the options, then runs the cell. Positions past a batch
// entry's sequence length are zero in Y; Y_h / Y_c hold the state after its last valid step.
Status RunRnn(const RnnOptions& options, const RnnInputs& inputs, RnnOutputs* outputs);

}  // namespace kiln::ref
