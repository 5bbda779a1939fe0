#!/usr/bin/env python3
"""Compare the .npy outputs in two folders.

    compare_outputs.py DIR_A DIR_B [--rtol 1e-4]

DIR_B is the reference. For every DIR_B/<name>.npy this prints the largest absolute difference
from DIR_A/<name>.npy and the relative error: that difference divided by the largest absolute
value in the reference (so small outputs near zero do not blow the ratio up). Exits 1 if any
relative error exceeds rtol, an output is missing in DIR_A, shapes differ, or a value is NaN/Inf
in one file but not the other; exits 0 otherwise.
"""

import argparse
import os
import sys

import numpy as np


def compare(a, b):
    """(max abs diff, relative error, problem string or None)."""
    if a.shape != b.shape:
        return float("nan"), float("nan"), f"shape {list(a.shape)} != reference {list(b.shape)}"
    if a.dtype.kind == "b" or b.dtype.kind == "b":
        diff = float(np.count_nonzero(a != b))
        return diff, diff, None
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    fa, fb = np.isfinite(a64), np.isfinite(b64)
    # Non-finite values must match exactly: same positions, same NaN/+Inf/-Inf.
    if not np.array_equal(fa, fb) or not np.array_equal(a64[~fa], b64[~fb], equal_nan=True):
        return float("nan"), float("nan"), "non-finite values differ"
    if a64.size == 0 or not fb.any():
        return 0.0, 0.0, None
    max_abs = float(np.max(np.abs(a64[fa] - b64[fb])))
    scale = float(np.max(np.abs(b64[fb])))
    rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    return max_abs, rel, None


def main():
    ap = argparse.ArgumentParser(description="Compare .npy outputs; DIR_B is the reference.")
    ap.add_argument("dir_a")
    ap.add_argument("dir_b", help="reference folder")
    ap.add_argument("--rtol", type=float, default=1e-4,
                    help="largest allowed max|a-b| / max|b| per output (default 1e-4)")
    args = ap.parse_args()

    names = sorted(f[:-4] for f in os.listdir(args.dir_b) if f.endswith(".npy")) \
        if os.path.isdir(args.dir_b) else []
    if not names:
        print(f"FAIL: no .npy files in reference folder {args.dir_b}")
        return 1
    if not os.path.isdir(args.dir_a):
        print(f"FAIL: {args.dir_a} is not a folder (no outputs written?)")
        return 1
    extra = sorted(f[:-4] for f in os.listdir(args.dir_a)
                   if f.endswith(".npy") and f[:-4] not in names)
    ok = True
    for name in names:
        path_a = os.path.join(args.dir_a, name + ".npy")
        if not os.path.exists(path_a):
            print(f"FAIL {name}: missing in {args.dir_a}")
            ok = False
            continue
        a = np.load(path_a)
        b = np.load(os.path.join(args.dir_b, name + ".npy"))
        max_abs, rel, problem = compare(a, b)
        if problem is None and a.dtype != b.dtype:
            problem = f"dtype {a.dtype} != reference {b.dtype}"
        bad = problem is not None or not rel <= args.rtol
        ok = ok and not bad
        print(f"{'FAIL' if bad else 'ok  '} {name}: shape {list(b.shape)} max_abs_diff "
              f"{max_abs:.3e} rel_err {rel:.3e} (rtol {args.rtol:.0e})"
              + (f": {problem}" if problem else ""))
    for name in extra:
        print(f"note {name}: only in {args.dir_a}, not compared")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
