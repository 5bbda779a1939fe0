#!/usr/bin/env python3
"""Train a small CNN on sklearn's 8x8 digits and export it to ONNX.

The model is kiln's first end-to-end workload: small enough to commit, trained in seconds on
one core, and built from the ops every image model needs (Conv, BatchNormalization, Relu,
MaxPool, Flatten, Gemm). BatchNormalization is kept as its own node on purpose so that kiln's
BN-into-Conv folding has something to fold.

Writes (relative to the repository root unless --out-dir is given):
  models/digits_cnn.onnx          opset 13, input "input" [N,1,8,8] f32, output "logits" [N,10]
  models/digits_samples/*.npy     held-out samples and labels (see the README written there)

Deterministic: fixed seed, fixed split, one thread.
"""

import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_digits

SEED = 0
HELDOUT_FRACTION = 0.2
EPOCHS = 30
BATCH = 32
LR = 1e-3
# load_digits pixels are integers in [0, 16]; map them to [-1, 1].
PIXEL_SCALE = 8.0
PIXEL_SHIFT = 8.0

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 8x8 -> 4x4
            nn.Conv2d(16, 32, 3, padding=1, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 4x4 -> 2x2
        )
        self.flatten = nn.Flatten()
        self.head = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        return self.head(self.flatten(self.features(x)))


def normalize(images):
    """uint-valued [0,16] 8x8 images -> float32 [N,1,8,8] in [-1,1]."""
    x = (np.asarray(images, dtype=np.float32) - PIXEL_SHIFT) / PIXEL_SCALE
    return x.reshape(-1, 1, 8, 8).astype(np.float32)


def split(n):
    """Fixed permutation of range(n): (train indices, held-out indices)."""
    perm = np.random.RandomState(SEED).permutation(n)
    n_held = int(round(n * HELDOUT_FRACTION))
    return perm[n_held:], perm[:n_held]


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        pred = model(torch.from_numpy(x)).argmax(dim=1).numpy()
    return float((pred == y).mean())


def write_readme(path, n_held):
    text = f"""# digits_samples

Held-out data for `models/digits_cnn.onnx`, written by `scripts/train_digits.py`.

| file | dtype | shape | contents |
|---|---|---|---|
| `samples.npy` | float32 | [16,1,8,8] | the first 16 held-out images |
| `labels.npy` | int64 | [16] | their labels (0-9) |
| `heldout_x.npy` | float32 | [{n_held},1,8,8] | the whole held-out set |
| `heldout_y.npy` | int64 | [{n_held}] | its labels |

Source: `sklearn.datasets.load_digits()` (1797 8x8 images, pixel values 0..16).
Split: `numpy.random.RandomState({SEED}).permutation(1797)`; the first {n_held} indices are held
out, the rest train the model.

Normalization (already applied to every `.npy` image here; apply it to any new input):

    x = (pixels - {PIXEL_SHIFT}) / {PIXEL_SCALE}      # [0,16] -> [-1,1], float32, shape [N,1,8,8]

The model's output `logits` is [N,10]; the predicted digit is its argmax.
"""
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", default=os.path.join(REPO_ROOT, "models"),
                    help="where digits_cnn.onnx and digits_samples/ go (default: models/)")
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    np.random.seed(SEED)
    torch.use_deterministic_algorithms(True)

    digits = load_digits()
    x_all = normalize(digits.images)
    y_all = digits.target.astype(np.int64)
    train_idx, held_idx = split(len(y_all))
    x_train, y_train = x_all[train_idx], y_all[train_idx]
    x_held, y_held = x_all[held_idx], y_all[held_idx]

    model = DigitsCNN()
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    loss_fn = nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x_train), torch.from_numpy(y_train)
    gen = torch.Generator().manual_seed(SEED)
    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(len(yt), generator=gen)
        for i in range(0, len(order), BATCH):
            b = order[i:i + BATCH]
            opt.zero_grad()
            loss = loss_fn(model(xt[b]), yt[b])
            loss.backward()
            opt.step()

    train_acc = accuracy(model, x_train, y_train)
    held_acc = accuracy(model, x_held, y_held)
    print(f"train accuracy:    {train_acc:.4f} ({len(y_train)} samples)")
    print(f"held-out accuracy: {held_acc:.4f} ({len(y_held)} samples)")
    if held_acc <= 0.95:
        print("error: held-out accuracy is not above 0.95", file=sys.stderr)
        return 1

    os.makedirs(args.out_dir, exist_ok=True)
    onnx_path = os.path.join(args.out_dir, "digits_cnn.onnx")
    model.eval()
    torch.onnx.export(
        model, torch.from_numpy(x_held[:1]), onnx_path,
        input_names=["input"], output_names=["logits"],
        dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
        opset_version=13,
        # Keep BatchNormalization as a node (kiln folds it itself): TrainingMode.EVAL would fuse it
        # into the Conv during export, PRESERVE with the model in eval mode exports eval BN.
        do_constant_folding=False,
        training=torch.onnx.TrainingMode.PRESERVE,
    )
    print(f"wrote {onnx_path} ({os.path.getsize(onnx_path)} bytes)")

    sdir = os.path.join(args.out_dir, "digits_samples")
    os.makedirs(sdir, exist_ok=True)
    np.save(os.path.join(sdir, "samples.npy"), np.ascontiguousarray(x_held[:16]))
    np.save(os.path.join(sdir, "labels.npy"), np.ascontiguousarray(y_held[:16]))
    np.save(os.path.join(sdir, "heldout_x.npy"), np.ascontiguousarray(x_held))
    np.save(os.path.join(sdir, "heldout_y.npy"), np.ascontiguousarray(y_held))
    write_readme(os.path.join(sdir, "README.md"), len(y_held))
    print(f"wrote {sdir}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
