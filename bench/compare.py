#!/usr/bin/env python3
"""kiln against onnxruntime (and OpenVINO / Apache TVM when installed) on the same ONNX files.

Same file, same inputs, batch as the model declares (symbolic dims become 1), same thread count.
The engines run in short alternating blocks (kiln K runs, onnxruntime K runs, ...) for several
rounds, so that a busy minute on a shared machine hits all of them (BENCHMARKING.md, rule 1).
Each row also carries the largest output difference against onnxruntime (rule 6).

Between blocks the harness pauses (--settle, 50 ms): onnxruntime's intra-op threads keep
spinning for about 25 ms after its last run, and a block that starts inside that window runs
beside them. Measured on ShuffleNet at 2 threads (kiln runs right after an onnxruntime block,
one warm-up run): the first three or four runs took 7.2-8.4 ms against 2.5-2.7 ms for the rest
and for a block started after a pause; a kiln process exits after its block, so onnxruntime's
blocks never met the reverse.

  bench/compare.py MODEL.onnx... [--threads N] [--rounds R] [--iters K] [--out-prefix P]

Writes P.json and P.md besides printing the table; ends with the geometric mean of the ratios
onnxruntime_ms / kiln_ms (above 1: kiln is faster).
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent

ONNX_TYPES = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int16)": np.int16,
    "tensor(int8)": np.int8, "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_,
}


def default_kiln():
    if os.environ.get("KILN_BIN"):
        return os.environ["KILN_BIN"]
    for build in sorted(REPO.glob("build*/kiln")):
        return str(build)
    return "kiln"


def file_name_for(name):
    # The file `kiln run --output-dir` writes for output NAME.
    for c in "/\\:":
        name = name.replace(c, "_")
    return name + ".npy"


def make_inputs(session, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) and d >= 0 else 1 for d in i.shape]
        dtype = ONNX_TYPES.get(i.type)
        if dtype is None:
            raise RuntimeError(f"input '{i.name}': type {i.type} is not supported here")
        if np.issubdtype(dtype, np.floating):
            feeds[i.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[i.name] = rng.integers(0, 3, size=shape).astype(dtype)
    return feeds


def ort_session(path, threads):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


class PyEngine:
    """An in-process engine: `run()` does one inference on the fixed inputs."""

    def __init__(self, name, run):
        self.name, self.run, self.ms = name, run, []

    def block(self, iters, settle=0.0):
        time.sleep(settle)
        for _ in range(iters):
            t = time.perf_counter()
            self.run()
            self.ms.append((time.perf_counter() - t) * 1e3)


def optional_engines(path, feeds, threads, skipped):
    """OpenVINO and TVM join when their Python packages are installed."""
    engines = []
    try:
        import openvino as ov
        core = ov.Core()
        compiled = core.compile_model(str(path), "CPU", {
            "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
            "NUM_STREAMS": 1})
        request = compiled.create_infer_request()
        engines.append(PyEngine("openvino", lambda: request.infer(feeds)))
    except ImportError:
        skipped.add("openvino (no Python package)")
    except Exception as e:  # noqa: BLE001 -- a failing optional engine must not stop the run
        print(f"  openvino failed on {path.name}: {e}", file=sys.stderr)
    try:
        import onnx
        import tvm
        from tvm import relay
        from tvm.contrib import graph_executor
        os.environ.setdefault("TVM_NUM_THREADS", str(threads))
        mod, params = relay.frontend.from_onnx(
            onnx.load(str(path)), {k: v.shape for k, v in feeds.items()})
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="llvm", params=params)
        module = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        for k, v in feeds.items():
            module.set_input(k, v)
        engines.append(PyEngine("tvm", module.run))
    except ImportError:
        skipped.add("tvm (no Python package)")
    except Exception as e:  # noqa: BLE001
        print(f"  tvm failed on {path.name}: {e}", file=sys.stderr)
    return engines


def compare_model(path, args, skipped, tmp):
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    session = ort_session(path, args.threads)
    feeds = make_inputs(session, args.seed)
    input_args = []
    for name, value in feeds.items():
        f = tmp / file_name_for("in_" + name)
        np.save(f, value)
        input_args += ["--input", f"{name}={f}"]

    # Compiled once, as a user deploys it; every timed kiln process maps the same .kiln file.
    module = tmp / (path.stem + ".kiln")
    comp = subprocess.run([args.kiln, "compile", str(path), "-O2", "-o", str(module)],
                          capture_output=True, text=True, env=env)
    if comp.returncode != 0:
        raise RuntimeError(f"kiln compile failed: {comp.stderr.strip() or comp.stdout.strip()}")

    # The answer first: one kiln run against onnxruntime on the same inputs.
    out_dir = tmp / "out"
    shutil.rmtree(out_dir, ignore_errors=True)
    run = subprocess.run([args.kiln, "run", str(module), *input_args, "--threads", str(args.threads),
                          "--output-dir", str(out_dir)], capture_output=True, text=True, env=env)
    if run.returncode != 0:
        raise RuntimeError(f"kiln run failed: {run.stderr.strip() or run.stdout.strip()}")
    names = [o.name for o in session.get_outputs()]
    ref = session.run(names, feeds)
    max_abs, max_ref = 0.0, 0.0
    for name, r in zip(names, ref):
        k = np.load(out_dir / file_name_for(name))
        r = np.asarray(r)
        if k.shape != r.shape:
            raise RuntimeError(f"output '{name}': kiln shape {k.shape}, onnxruntime {r.shape}")
        if r.size:
            max_abs = max(max_abs, float(np.max(np.abs(k.astype(np.float64) - r))))
            max_ref = max(max_ref, float(np.max(np.abs(r.astype(np.float64)))))
    max_rel = max_abs / max_ref if max_ref > 0 else max_abs

    ort = PyEngine("onnxruntime", lambda: session.run(names, feeds))
    others = optional_engines(path, feeds, args.threads, skipped)
    for e in [ort, *others]:  # warm-up: first runs allocate and pack
        for _ in range(args.warmup):
            e.run()
        e.ms.clear()
    kiln_ms = []
    bench_json = tmp / "bench.json"
    for _ in range(args.rounds):
        cmd = [args.kiln, "bench", str(module), *input_args, "--threads", str(args.threads),
               "--warmup", "1", "--iters", str(args.iters), "--json", str(bench_json)]
        time.sleep(args.settle)
        b = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if b.returncode != 0:
            raise RuntimeError(f"kiln bench failed: {b.stderr.strip()}")
        result = json.loads(bench_json.read_text())
        kiln_ms += result["iters_ms"]
        kiln_threads = result["threads"]
        for e in [ort, *others]:
            e.block(args.iters, args.settle)

    def stats(ms):
        return {"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms),
                "runs": len(ms)}

    row = {"model": path.stem, "file": str(path), "threads": args.threads,
           "kiln_threads": kiln_threads, "kiln": stats(kiln_ms), "onnxruntime": stats(ort.ms),
           "max_abs_diff": max_abs, "max_rel_err": max_rel}
    k = row["kiln"]["median_ms"]
    row["ratio"] = row["onnxruntime"]["median_ms"] / k
    for e in others:
        row[e.name] = stats(e.ms)
        row[f"ratio_{e.name}"] = row[e.name]["median_ms"] / k
    return row


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def table(rows, extra):
    head = ["model", "threads", "kiln_ms", "ort_ms", "ratio"]
    for e in extra:
        head += [f"{e}_ms", f"ratio_{e}"]
    head += ["max_abs_diff", "max_rel_err"]
    body = []
    for r in rows:
        if "error" in r:
            body.append([r["model"], str(r["threads"]), "error: " + r["error"]])
            continue
        line = [r["model"], str(r["threads"]), f"{r['kiln']['median_ms']:.2f}",
                f"{r['onnxruntime']['median_ms']:.2f}", f"{r['ratio']:.3f}"]
        for e in extra:
            line += ([f"{r[e]['median_ms']:.2f}", f"{r['ratio_' + e]:.3f}"] if e in r
                     else ["-", "-"])
        line += [f"{r['max_abs_diff']:.2e}", f"{r['max_rel_err']:.2e}"]
        body.append(line)
    return head, body


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="+", type=Path, help="ONNX files")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=5, help="alternating blocks per engine")
    p.add_argument("--iters", type=int, default=4, help="timed runs per block")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs of each in-process engine")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--settle", type=float, default=0.05,
                   help="seconds of pause before each block (lets the other engine's threads idle)")
    p.add_argument("--kiln", default=default_kiln(), help="the kiln binary ($KILN_BIN)")
    p.add_argument("--out-prefix", default="compare", help="writes PREFIX.json and PREFIX.md")
    args = p.parse_args()

    rows, skipped = [], set()
    with tempfile.TemporaryDirectory(prefix="kiln-compare-") as tmp_name:
        tmp = Path(tmp_name)
        for path in args.models:
            print(f"{path.name}: {args.rounds} rounds x {args.iters} runs per engine ...",
                  file=sys.stderr, flush=True)
            try:
                rows.append(compare_model(path, args, skipped, tmp))
            except Exception as e:  # noqa: BLE001 -- one bad model must not hide the others
                rows.append({"model": path.stem, "file": str(path), "threads": args.threads,
                             "error": str(e).splitlines()[0][:200]})
    extra = sorted({k for r in rows for k in ("openvino", "tvm") if k in r})
    head, body = table(rows, extra)
    ok = [r for r in rows if "error" not in r]
    summary = {"onnxruntime": geomean([r["ratio"] for r in ok])}
    for e in extra:
        summary[e] = geomean([r[f"ratio_{e}"] for r in ok if f"ratio_{e}" in r])
    kiln_threads = sorted({r["kiln_threads"] for r in ok})

    # An error row is shorter than the header (its message fills the third column), and when
    # every row is an error some columns have no cell at all.
    widths = [max([len(h), *(len(b[i]) for b in body if i < len(b))]) for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    for b in body:
        print("  ".join(c.ljust(w) for c, w in zip(b, widths)))
    notes = [f"geomean ratio onnxruntime/kiln {summary['onnxruntime']:.3f} ({len(ok)} models)"]
    notes += [f"geomean ratio {e}/kiln {summary[e]:.3f}" for e in extra]
    notes.append("ratio > 1: kiln is faster; medians over "
                 f"{args.rounds}x{args.iters} alternating runs per engine, "
                 f"{args.settle * 1e3:.0f} ms pause before each block")
    if kiln_threads and kiln_threads != [args.threads]:
        notes.append(f"kiln used {kiln_threads} thread(s) (reference interpreter), others "
                     f"{args.threads}")
    for r in ok:  # BENCHMARKING.md, rule 2: a wide min-max spread means a busy machine
        for e in ["kiln", "onnxruntime", *extra]:
            if e in r and r[e]["max_ms"] - r[e]["min_ms"] > 0.2 * r[e]["median_ms"]:
                notes.append(f"warning: {r['model']} {e}: min {r[e]['min_ms']:.2f} ms, max "
                             f"{r[e]['max_ms']:.2f} ms (wide spread: the machine was busy; "
                             "run again)")
    if skipped:
        notes.append("skipped: " + ", ".join(sorted(skipped)))
    for n in notes:
        print(n)

    Path(f"{args.out_prefix}.json").write_text(json.dumps(
        {"threads": args.threads, "rounds": args.rounds, "iters": args.iters, "rows": rows,
         "geomean_ratio": summary, "skipped": sorted(skipped)}, indent=2) + "\n")
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(b + [""] * (len(head) - len(b))) + " |" for b in body]
    Path(f"{args.out_prefix}.md").write_text("\n".join(md) + "\n\n" +
                                            "\n".join(f"- {n}" for n in notes) + "\n")
    return 1 if not ok else 0


if __name__ == "__main__":
    sys.exit(main())
