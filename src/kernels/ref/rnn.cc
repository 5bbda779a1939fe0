#include "kernels/ref/rnn.h"

#include <algorithm>
#include <cmath>

namespace kiln::ref {

double ApplyRnnActivation(const RnnActivation& a, double x) {
  using K = RnnActivation::Kind;
  switch (a.kind) {
    case K::kRelu: return std::max(x, 0.0);
    case K::kTanh: return std::tanh(x);
    case K::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case K::kAffine: return a.alpha * x + a.beta;
    case K::kLeakyRelu: return x >= 0 ? x : a.alpha * x;
    case K::kThresholdedRelu: return x > a.alpha ? x : 0.0;
    case K::kScaledTanh: return a.alpha * std::tanh(a.beta * x);
    case K::kHardSigmoid: return std::clamp(a.alpha * x + a.beta, 0.0, 1.0);
    case K::kElu: return x >= 0 ? x : a.alpha * (std::exp(x) - 1);
    case K::kSoftsign: return x / (1 + std::abs(x));
    case K::kSoftplus: return std::log1p(std::exp(-std::abs(x))) + std::max(x, 0.0);
  }
  return x;
}

int RnnActivationsPerDirection(RnnCell cell) {
  return cell == RnnCell::kRnn ? 1 : cell == RnnCell::kGru ? 2 : 3;
}

int RnnGates(RnnCell cell) { return cell == RnnCell::kRnn ? 1 : cell == RnnCell::kGru ? 3 : 4; }

namespace {

Status ExpectDims(const Tensor* t, const char* name, const std::vector<int64_t>& dims) {
  if (t != nullptr && t->dims() != dims)
    return Status::Error("'", name, "' must have shape ", DimsToString(dims), ", got ",
                         DescribeTensor(*t));
  return Status::Ok();
}

// Everything one (direction, batch entry) pass reads, with layout-aware indexing.
template <class T>
struct Pass {
  const RnnOptions& o;
  int64_t seq, batch, input, hidden, dirs;
  const T *x, *w, *r, *b, *h0, *c0, *p;
  T *y, *yh, *yc;

  int64_t XAt(int64_t t, int64_t n) const {
    return (o.batch_first ? n * seq + t : t * batch + n) * input;
  }
  int64_t StateAt(int64_t d, int64_t n) const {
    return (o.batch_first ? n * dirs + d : d * batch + n) * hidden;
  }
  int64_t YAt(int64_t t, int64_t d, int64_t n) const {
    return (o.batch_first ? (n * seq + t) * dirs + d : (t * dirs + d) * batch + n) * hidden;
  }
  double Clip(double v) const { return o.clip > 0 ? std::clamp(v, -o.clip, o.clip) : v; }

  // W row `row` of direction d times x_t, plus R row times `h`, plus both biases.
  double Gate(int64_t d, int64_t row, const T* xt, const std::vector<double>& h,
              bool with_r = true, bool with_rb = true) const {
    const int64_t gates_h = RnnGates(o.cell) * hidden;
    double acc = 0;
    const T* wr = w + (d * gates_h + row) * input;
    for (int64_t i = 0; i < input; ++i) acc += static_cast<double>(wr[i]) * xt[i];
    if (with_r) {
      const T* rr = r + (d * gates_h + row) * hidden;
      for (int64_t i = 0; i < hidden; ++i) acc += static_cast<double>(rr[i]) * h[i];
    }
    if (b != nullptr) {
      acc += static_cast<double>(b[d * 2 * gates_h + row]);
      if (with_rb) acc += static_cast<double>(b[d * 2 * gates_h + gates_h + row]);
    }
    return acc;
  }

  double RecurrentOnly(int64_t d, int64_t row, const std::vector<double>& h) const {
    const int64_t gates_h = RnnGates(o.cell) * hidden;
    const T* rr = r + (d * gates_h + row) * hidden;
    double acc = 0;
    for (int64_t i = 0; i < hidden; ++i) acc += static_cast<double>(rr[i]) * h[i];
    if (b != nullptr) acc += static_cast<double>(b[d * 2 * gates_h + gates_h + row]);
    return acc;
  }

  void Run(int64_t d, int64_t n, int64_t len) const {
    const int per_dir = RnnActivationsPerDirection(o.cell);
    const RnnActivation* act = &o.activations[d * per_dir];
    const bool backwards = d == 1 || o.reverse;
    const int64_t H = hidden;
    std::vector<double> h(H, 0.0), c(H, 0.0), next(H), cell_next(H), z(H), reset(H), reset_h(H);
    if (h0 != nullptr)
      for (int64_t j = 0; j < H; ++j) h[j] = static_cast<double>(h0[StateAt(d, n) + j]);
    if (c0 != nullptr)
      for (int64_t j = 0; j < H; ++j) c[j] = static_cast<double>(c0[StateAt(d, n) + j]);
    const T* pd = p != nullptr ? p + d * 3 * H : nullptr;
    for (int64_t step = 0; step < len; ++step) {
      const int64_t t = backwards ? len - 1 - step : step;
      const T* xt = x + XAt(t, n);
      switch (o.cell) {
        case RnnCell::kRnn:
          for (int64_t j = 0; j < H; ++j)
            next[j] = ApplyRnnActivation(act[0], Clip(Gate(d, j, xt, h)));
          break;
        case RnnCell::kGru: {
          for (int64_t j = 0; j < H; ++j) {
            z[j] = ApplyRnnActivation(act[0], Clip(Gate(d, j, xt, h)));
            reset[j] = ApplyRnnActivation(act[0], Clip(Gate(d, H + j, xt, h)));
            reset_h[j] = reset[j] * h[j];
          }
          for (int64_t j = 0; j < H; ++j) {
            // linear_before_reset applies the reset gate after R's product (and R's bias).
            const double pre =
                o.linear_before_reset
                    ? Gate(d, 2 * H + j, xt, h, false, false) + reset[j] * RecurrentOnly(d, 2 * H + j, h)
                    : Gate(d, 2 * H + j, xt, reset_h);
            const double hh = ApplyRnnActivation(act[1], Clip(pre));
            next[j] = (1 - z[j]) * hh + z[j] * h[j];
          }
          break;
        }
        case RnnCell::kLstm:
          for (int64_t j = 0; j < H; ++j) {
            double i_pre = Gate(d, j, xt, h);
            double f_pre = Gate(d, 2 * H + j, xt, h);
            if (pd != nullptr) {
              i_pre += static_cast<double>(pd[j]) * c[j];
              f_pre += static_cast<double>(pd[2 * H + j]) * c[j];
            }
            const double ig = ApplyRnnActivation(act[0], Clip(i_pre));
            const double fg = o.input_forget ? 1 - ig : ApplyRnnActivation(act[0], Clip(f_pre));
            const double cg = ApplyRnnActivation(act[1], Clip(Gate(d, 3 * H + j, xt, h)));
            cell_next[j] = fg * c[j] + ig * cg;
            double o_pre = Gate(d, H + j, xt, h);
            if (pd != nullptr) o_pre += static_cast<double>(pd[H + j]) * cell_next[j];
            const double og = ApplyRnnActivation(act[0], Clip(o_pre));
            next[j] = og * ApplyRnnActivation(act[2], cell_next[j]);
          }
          break;
      }
      h.swap(next);
      if (o.cell == RnnCell::kLstm) c.swap(cell_next);
      if (y != nullptr)
        for (int64_t j = 0; j < H; ++j) y[YAt(t, d, n) + j] = static_cast<T>(h[j]);
    }
    if (yh != nullptr)
      for (int64_t j = 0; j < H; ++j) yh[StateAt(d, n) + j] = static_cast<T>(h[j]);
    if (yc != nullptr)
      for (int64_t j = 0; j < H; ++j) yc[StateAt(d, n) + j] = static_cast<T>(c[j]);
  }
};

}  // namespace

Status RunRnn(const RnnOptions& o, const RnnInputs& in, RnnOutputs* out) {
  if (in.x == nullptr || in.w == nullptr || in.r == nullptr)
    return Status::Error("inputs 'X', 'W' and 'R' are required");
  const Tensor& x = *in.x;
  if (x.rank() != 3) return Status::Error("'X' must be 3-D, got ", DescribeTensor(x));
  const int64_t seq = x.dim(o.batch_first ? 1 : 0), batch = x.dim(o.batch_first ? 0 : 1);
  const int64_t input = x.dim(2), H = o.hidden, dirs = o.num_directions;
  const int64_t gates = RnnGates(o.cell);
  if (H <= 0) return Status::Error("hidden_size must be positive, got ", H);
  if (static_cast<int64_t>(o.activations.size()) != dirs * RnnActivationsPerDirection(o.cell))
    return Status::Error("expected ", dirs * RnnActivationsPerDirection(o.cell),
                         " activations, got ", o.activations.size());
  for (const Tensor* t : {in.w, in.r, in.b, in.initial_h, in.initial_c, in.p})
    if (t != nullptr && t->dtype() != x.dtype())
      return Status::Error("every float input must have X's type ", DTypeName(x.dtype()),
                           ", got ", DescribeTensor(*t));
  KILN_RETURN_IF_ERROR(ExpectDims(in.w, "W", {dirs, gates * H, input}));
  KILN_RETURN_IF_ERROR(ExpectDims(in.r, "R", {dirs, gates * H, H}));
  KILN_RETURN_IF_ERROR(ExpectDims(in.b, "B", {dirs, 2 * gates * H}));
  const std::vector<int64_t> state_dims =
      o.batch_first ? std::vector<int64_t>{batch, dirs, H} : std::vector<int64_t>{dirs, batch, H};
  KILN_RETURN_IF_ERROR(ExpectDims(in.initial_h, "initial_h", state_dims));
  KILN_RETURN_IF_ERROR(ExpectDims(in.initial_c, "initial_c", state_dims));
  KILN_RETURN_IF_ERROR(ExpectDims(in.p, "P", {dirs, 3 * H}));
  if (!in.seq_lens.empty()) {
    if (static_cast<int64_t>(in.seq_lens.size()) != batch)
      return Status::Error("'sequence_lens' has ", in.seq_lens.size(), " values for batch ",
                           batch);
    for (int64_t len : in.seq_lens)
      if (len < 0 || len > seq)
        return Status::Error("sequence length ", len, " is outside [0, ", seq, "]");
  }
  const std::vector<int64_t> y_dims = o.batch_first ? std::vector<int64_t>{batch, seq, dirs, H}
                                                    : std::vector<int64_t>{seq, dirs, batch, H};
  KILN_ASSIGN_OR_RETURN(out->y, Tensor::Make(x.dtype(), y_dims, "Y"));
  KILN_ASSIGN_OR_RETURN(out->y_h, Tensor::Make(x.dtype(), state_dims, "Y_h"));
  if (o.cell == RnnCell::kLstm) {
    KILN_ASSIGN_OR_RETURN(out->y_c, Tensor::Make(x.dtype(), state_dims, "Y_c"));
  }

  Status st = Status::Ok();
  KILN_DISPATCH_FLOAT(x.dtype(), T,
                      st = Status::Error("unsupported element type ", DTypeName(x.dtype())),
    {
      auto data = [](const Tensor* t) { return t != nullptr ? t->data<T>() : nullptr; };
      Pass<T> pass{o, seq, batch, input, H, dirs,
                   x.data<T>(), data(in.w), data(in.r), data(in.b), data(in.initial_h),
                   data(in.initial_c), data(in.p), out->y.data<T>(), out->y_h.data<T>(),
                   o.cell == RnnCell::kLstm ? out->y_c.data<T>() : nullptr};
      for (int64_t d = 0; d < dirs; ++d)
        for (int64_t n = 0; n < batch; ++n)
          pass.Run(d, n, in.seq_lens.empty() ? seq : in.seq_lens[n]);
    });
  return st;
}

}  // namespace kiln::ref
