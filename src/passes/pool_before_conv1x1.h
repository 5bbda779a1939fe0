// Average pooling moved in front of the 1x1 convolution that feeds it: AveragePool(Conv1x1(X))
// becomes Conv1x1(AveragePool(X)). Both are linear per pixel and channel (the conv mixes
// channels at one pixel, plus a per-channel bias; the pool averages pixels of one channel), so
// they commute exactly in real arithmetic when the pool has no padding; the conv then runs on
// (kh * kw) / (sh * sw) times fewer pixels. DenseNet-121's transitions (BN -> ReLU -> 1x1 conv
// -> 2x2 average pool, stride 2) run their convs on a quarter of the pixels: 5.6 of ~48 ms.
// (The pool now reads C channels instead of M; the transitions halve the channels, so it reads
// twice as much, a small fraction of the conv's time saved.)
//
// Matched: Conv (default domain) with kernel 1x1 (from W's dims), strides, dilations 1, no
// padding (pads 0 and auto_pad NOTSET/VALID), 4-D X of static dims, whose output Y only an
// AveragePool reads, directly or through a Pad of all-zero pads (PyTorch exports one before
// DenseNet's pools; it is erased) that Y alone feeds (Y, and the Pad's output, neither graph
// outputs nor read by subgraphs); the AveragePool 2-D with
// pads 0, auto_pad NOTSET/VALID, ceil_mode 0 and dilations 1 (any kernel and strides). Runs
// before fuse_conv_activation (an activation between them blocks the match anyway).
#pragma once
#include "passes/pass.h"
namespace kiln::passes { std::unique_ptr<Pass> CreatePoolBeforeConv1x1Pass(); }
