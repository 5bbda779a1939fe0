#!/usr/bin/env python3
"""Run an ONNX model with onnxruntime and save its outputs as .npy files.

    ort_run.py MODEL [--input NAME=FILE.npy]... --output-dir DIR [--threads N]
               [--random-inputs-dir DIR2]

Writes DIR/<output_name>.npy for every output. With --random-inputs-dir, every input not given
by --input is generated deterministically (numpy RandomState seeded by --seed, standard normal
for float inputs, zeros for integer/bool inputs; symbolic dims are 1), saved as
DIR2/<input_name>.npy and used. onnxruntime runs sequentially with N intra-op threads and one
inter-op thread, on the CPU provider, as the reference kiln is compared against.
"""

import argparse
import os
import sys

import numpy as np
import onnxruntime as ort

# onnxruntime's type strings -> numpy dtypes.
ORT_TYPES = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int8)": np.int8,
    "tensor(int16)": np.int16,
    "tensor(int32)": np.int32,
    "tensor(int64)": np.int64,
    "tensor(uint8)": np.uint8,
    "tensor(uint16)": np.uint16,
    "tensor(uint32)": np.uint32,
    "tensor(uint64)": np.uint64,
    "tensor(bool)": np.bool_,
}


def random_input(meta, rng):
    dtype = ORT_TYPES.get(meta.type)
    if dtype is None:
        raise SystemExit(f"error: input '{meta.name}' has unsupported type {meta.type}")
    # Symbolic (str) or unknown (None) dims become 1.
    shape = [d if isinstance(d, int) and d >= 0 else 1 for d in meta.shape]
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    return np.zeros(shape, dtype=dtype)


def parse_inputs(items):
    inputs = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"error: --input expects NAME=FILE.npy, got '{item}'")
        inputs[name] = np.load(path)
    return inputs


def main():
    ap = argparse.ArgumentParser(description="Run an ONNX model with onnxruntime; save "
                                 "outputs as DIR/<output_name>.npy.")
    ap.add_argument("model")
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    ap.add_argument("--output-dir", required=True, metavar="DIR")
    ap.add_argument("--threads", type=int, default=1, metavar="N",
                    help="intra-op threads (default 1)")
    ap.add_argument("--random-inputs-dir", metavar="DIR2",
                    help="generate missing inputs, save them here as <input_name>.npy")
    ap.add_argument("--seed", type=int, default=0, help="seed for random inputs (default 0)")
    args = ap.parse_args()

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(args.model, opts, providers=["CPUExecutionProvider"])

    feeds = parse_inputs(args.input)
    model_inputs = sess.get_inputs()
    known = {m.name for m in model_inputs}
    for name in feeds:
        if name not in known:
            raise SystemExit(f"error: model has no input '{name}' (inputs: {sorted(known)})")
    rng = np.random.RandomState(args.seed)
    for meta in model_inputs:  # model order, so the random stream is reproducible
        if meta.name in feeds:
            continue
        if not args.random_inputs_dir:
            raise SystemExit(f"error: input '{meta.name}' not given "
                             "(use --input or --random-inputs-dir)")
        feeds[meta.name] = random_input(meta, rng)
        os.makedirs(args.random_inputs_dir, exist_ok=True)
        np.save(os.path.join(args.random_inputs_dir, f"{meta.name}.npy"), feeds[meta.name])

    outputs = sess.run(None, feeds)
    os.makedirs(args.output_dir, exist_ok=True)
    for meta, value in zip(sess.get_outputs(), outputs):
        path = os.path.join(args.output_dir, f"{meta.name}.npy")
        np.save(path, np.asarray(value))
        print(f"{meta.name}: {value.dtype} {list(value.shape)} -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
