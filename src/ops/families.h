// The op families. Each is defined in its own file(s) under src/ops/ and listed in op_table.cc.
#pragma once

#include <span>

#include "ops/op_registry.h"

namespace kiln::ops {

std::span<const OpDef> UnaryOps();         // unary.cc: math, activations, Cast, CastLike
std::span<const OpDef> BinaryOps();        // binary.cc: arithmetic, compare, logic, Where, variadic
std::span<const OpDef> ConvOps();          // conv.cc: Conv, ConvTranspose, ConvInteger, QLinearConv
std::span<const OpDef> PoolOps();          // pool.cc: Max/Average/Lp/Global pooling, MaxUnpool
std::span<const OpDef> NormOps();          // norm.cc: BatchNorm, InstanceNorm, LayerNorm, LRN...
std::span<const OpDef> MatMulOps();        // matmul.cc: Gemm, MatMul, *Integer, QLinearMatMul, Einsum
std::span<const OpDef> ShapeOps();         // shape_ops.cc: Shape, Reshape, Squeeze, Constant...
std::span<const OpDef> MovementOps();      // movement.cc: Transpose, Concat, Split, Slice, Pad...
std::span<const OpDef> IndexingOps();      // indexing.cc: Gather*, Scatter*, OneHot, NonZero...
std::span<const OpDef> ReduceOps();        // reduce.cc: Reduce*, ArgMax, ArgMin
std::span<const OpDef> SoftmaxOps();       // softmax.cc: Softmax, LogSoftmax, Hardmax, losses
std::span<const OpDef> SortOps();          // sort.cc: TopK, CumSum, NonMaxSuppression
std::span<const OpDef> QuantOps();         // quant.cc: QuantizeLinear, DequantizeLinear...
std::span<const OpDef> ResizeOps();        // resize.cc: Resize, Upsample, GridSample
std::span<const OpDef> ControlFlowOps();   // control_flow.cc: If, Loop, Scan
std::span<const OpDef> RnnOps();           // rnn.cc: RNN, GRU, LSTM
std::span<const OpDef> SignalOps();        // signal.cc: DFT, STFT, windows, MelWeightMatrix
std::span<const OpDef> StringOps();        // strings.cc: StringNormalizer, TfIdfVectorizer
std::span<const OpDef> TrainingOps();      // training.cc: Adagrad, Adam, Momentum (preview domain)
std::span<const OpDef> LinalgOps();        // linalg.cc: Det
std::span<const OpDef> RandomOps();        // random.cc: seeded Bernoulli, RandomUniform(Like)...
std::span<const OpDef> SequenceOps();      // sequence.cc: Sequence*, SplitToSequence, Optional*...
std::span<const OpDef> SequenceMapOps();   // sequence_map.cc: SequenceMap (joins SequenceOps)
std::span<const OpDef> KilnOps();          // kiln_ops.cc: kiln.FusedConv/FusedGemm, fused activations

}  // namespace kiln::ops
