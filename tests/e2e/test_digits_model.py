#!/usr/bin/env python3
"""End-to-end checks of the committed digits model (models/digits_cnn.onnx).

    test_digits_model.py                 onnxruntime loads the model; held-out accuracy > 95%
    test_digits_model.py --kiln KILN     also: `KILN run` on the held-out set matches
                                         onnxruntime (rtol 1e-4) and reaches > 95% itself

Exits 0 on success, 1 on failure, 77 (ctest's skip code here) if onnxruntime is missing.
"""

import argparse
import os
import subprocess
import sys
import tempfile

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(REPO_ROOT, "models", "digits_cnn.onnx")
SAMPLES = os.path.join(REPO_ROOT, "models", "digits_samples")
MIN_ACCURACY = 0.95
RTOL = 1e-4

try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)


def ort_logits(x):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(MODEL, opts, providers=["CPUExecutionProvider"])
    inputs = [(i.name, i.shape, i.type) for i in sess.get_inputs()]
    outputs = [(o.name, o.shape, o.type) for o in sess.get_outputs()]
    expect_in = [("input", ["N", 1, 8, 8], "tensor(float)")]
    expect_out = [("logits", ["N", 10], "tensor(float)")]
    if inputs != expect_in or outputs != expect_out:
        raise AssertionError(f"model signature {inputs} -> {outputs}, "
                             f"expected {expect_in} -> {expect_out}")
    (logits,) = sess.run(None, {"input": x})
    return logits


def kiln_logits(kiln, x):
    with tempfile.TemporaryDirectory(prefix="kiln_digits_") as tmp:
        in_path = os.path.join(tmp, "input.npy")
        out_dir = os.path.join(tmp, "out")
        np.save(in_path, x)
        cmd = [kiln, "run", MODEL, "--input", f"input={in_path}", "--output-dir", out_dir]
        print("$ " + " ".join(cmd), flush=True)
        try:
            rc = subprocess.run(cmd).returncode
        except OSError as e:
            return None, f"cannot run kiln: {e}"
        out_path = os.path.join(out_dir, "logits.npy")
        if rc != 0 or not os.path.exists(out_path):
            return None, f"kiln run exited {rc}" + (
                "" if os.path.exists(out_path) else f", wrote no {out_path}")
        return np.load(out_path), None


def accuracy(logits, y):
    return float((logits.argmax(axis=1) == y).mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kiln", help="path of the kiln binary; also check `kiln run`")
    args = ap.parse_args()

    x = np.load(os.path.join(SAMPLES, "heldout_x.npy"))
    y = np.load(os.path.join(SAMPLES, "heldout_y.npy"))
    samples = np.load(os.path.join(SAMPLES, "samples.npy"))
    labels = np.load(os.path.join(SAMPLES, "labels.npy"))
    ok = True

    def check(cond, msg):
        nonlocal ok
        print(f"{'ok  ' if cond else 'FAIL'} {msg}")
        ok = ok and cond

    check(x.dtype == np.float32 and x.shape[1:] == (1, 8, 8) and y.dtype == np.int64
          and len(x) == len(y), f"held-out set: x {x.dtype} {list(x.shape)}, y {y.dtype} "
          f"{list(y.shape)}")
    check(np.array_equal(samples, x[:16]) and np.array_equal(labels, y[:16]),
          "samples.npy/labels.npy are the first 16 held-out samples")

    ref = ort_logits(x)
    acc = accuracy(ref, y)
    check(acc > MIN_ACCURACY, f"onnxruntime held-out accuracy {acc:.4f} > {MIN_ACCURACY} "
          f"({len(y)} samples)")

    if args.kiln:
        got, error = kiln_logits(args.kiln, x)
        if error:
            check(False, error)
        elif got.shape != ref.shape:
            check(False, f"kiln logits shape {list(got.shape)} != {list(ref.shape)}")
        else:
            max_abs = float(np.max(np.abs(got.astype(np.float64) - ref)))
            rel = max_abs / float(np.max(np.abs(ref)))
            check(rel <= RTOL, f"kiln vs onnxruntime: max_abs_diff {max_abs:.3e} "
                  f"rel_err {rel:.3e} <= {RTOL:.0e}")
            kacc = accuracy(got, y)
            check(kacc > MIN_ACCURACY, f"kiln held-out accuracy {kacc:.4f} > {MIN_ACCURACY}")

    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
