#!/usr/bin/env python3
"""Export torchvision architectures with random weights to ONNX.

    export_models.py NAME... [--out DIR] [--opset 13]
    export_models.py all

Weights are random (weights=None, fixed seed) because nothing may be downloaded; these models
test kiln's correctness against onnxruntime and its speed, not accuracy. Each model is exported
in eval mode with batch 1, input "input" [1,3,224,224] float32 and output "output", then loaded
and run once in onnxruntime as a check. Files that already exist are skipped.

DIR defaults to $KILN_MODEL_CACHE, else ~/.cache/kiln/models/v2.
"""

import argparse
import os
import sys
import time

SEED = 0

# name -> keyword arguments for the torchvision constructor (besides weights=None).
MODELS = {
    "resnet18": {},
    "resnet50": {},
    "mobilenet_v2": {},
    "mobilenet_v3_large": {},
    "efficientnet_b0": {},
    "squeezenet1_1": {},
    "shufflenet_v2_x1_0": {},
    # Without aux_logits=False the eval graph still carries the aux heads' weights;
    # init_weights=True silences the warning about the changed default init.
    "googlenet": {"aux_logits": False, "init_weights": True},
    "densenet121": {},
    "regnet_y_400mf": {},
}


def default_out_dir():
    return os.environ.get("KILN_MODEL_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "kiln", "models", "v2")  # v2: calibrated BatchNorm


def check_with_ort(path):
    import numpy as np
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    x = np.random.RandomState(SEED).standard_normal((1, 3, 224, 224)).astype(np.float32)
    (y,) = sess.run(None, {"input": x})
    if not np.all(np.isfinite(y)):
        raise RuntimeError(f"{path}: onnxruntime produced non-finite outputs")
    return y.shape


def calibrate_batchnorm(model, torch):
    """Sets BatchNorm running statistics from a few random batches.

    With torchvision's default init (running mean 0, var 1) activations shrink layer after layer,
    and mobilenet_v2's logits end up near 1e-9: a comparison of such outputs proves little.
    Statistics measured on data keep every layer's activations near unit scale, as in a
    trained model.
    """
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average over the calibration batches
    model.train()
    gen = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for _ in range(2):
            model(torch.randn(4, 3, 224, 224, generator=gen))
    model.eval()


def export_one(name, out_dir, opset):
    import torch
    import torchvision

    path = os.path.join(out_dir, f"{name}.onnx")
    if os.path.exists(path):
        print(f"{name}: exists, skipped ({path})")
        return path
    torch.manual_seed(SEED)
    t0 = time.time()
    model = getattr(torchvision.models, name)(weights=None, **MODELS[name]).eval()
    calibrate_batchnorm(model, torch)
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(SEED))
    tmp = path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(model, x, tmp, input_names=["input"], output_names=["output"],
                          opset_version=opset, do_constant_folding=True)
    t_export = time.time() - t0
    shape = check_with_ort(tmp)
    os.replace(tmp, path)  # only a checked model gets the real name
    size_mb = os.path.getsize(path) / 1e6
    print(f"{name}: {size_mb:.1f} MB, export {t_export:.1f} s, "
          f"ort check {time.time() - t0 - t_export:.1f} s, output {list(shape)} -> {path}")
    return path


def main():
    ap = argparse.ArgumentParser(
        description="Export torchvision models (random weights) to ONNX.",
        epilog="names: " + " ".join(MODELS) + " (or 'all')")
    ap.add_argument("names", nargs="+", metavar="NAME")
    ap.add_argument("--out", default=None, help="output folder (default: $KILN_MODEL_CACHE "
                    "or ~/.cache/kiln/models/v2)")
    ap.add_argument("--opset", type=int, default=13)
    args = ap.parse_args()

    names = list(MODELS) if "all" in args.names else args.names
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        ap.error(f"unknown model(s): {' '.join(unknown)}; known: {' '.join(MODELS)}")

    import torch
    torch.set_num_threads(1)
    out_dir = args.out or default_out_dir()
    os.makedirs(out_dir, exist_ok=True)
    failed = []
    for name in names:
        try:
            export_one(name, out_dir, args.opset)
        except Exception as e:  # report every model, then fail
            print(f"{name}: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
            failed.append(name)
    if failed:
        print(f"failed: {' '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
