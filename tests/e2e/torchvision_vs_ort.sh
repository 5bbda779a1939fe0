#!/usr/bin/env bash
# Acceptance check: kiln's outputs match onnxruntime's on torchvision models.
#
#   torchvision_vs_ort.sh KILN_BINARY [MODEL_NAME...]     (default: resnet18 mobilenet_v2)
#
# For each model: export it (random weights, cached in $KILN_MODEL_CACHE or
# ~/.cache/kiln/models/v2), make a seeded random input and the reference output with onnxruntime,
# compile it with `KILN compile -O2 -o M.kiln`, run the .kiln with `KILN run`, and compare with
# rtol 1e-4 (max|kiln-ort| / max|ort|).
# Python: $KILN_PYTHON, else the repository's .venv, else python3.
# Exit 0 if every model matches, 1 otherwise, 77 (ctest skip) if the Python tools are missing.
set -uo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 KILN_BINARY [MODEL_NAME...]" >&2
  exit 2
fi
KILN=$1
shift
MODELS=("$@")
[[ ${#MODELS[@]} -gt 0 ]] || MODELS=(resnet18 mobilenet_v2)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=${KILN_PYTHON:-$ROOT/.venv/bin/python}
[[ -x $PY ]] || PY=python3
if ! "$PY" -c "import torch, torchvision, onnxruntime, numpy" 2>/dev/null; then
  echo "SKIP: $PY lacks torch/torchvision/onnxruntime/numpy (run scripts/setup.sh)"
  exit 77
fi
CACHE=${KILN_MODEL_CACHE:-$HOME/.cache/kiln/models/v2}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln_e2e_tv.XXXXXX")

"$PY" "$ROOT/scripts/export_models.py" --out "$CACHE" "${MODELS[@]}" || {
  echo "FAIL: export_models.py"; exit 1; }

failed=()
for name in "${MODELS[@]}"; do
  echo "=== $name"
  model=$CACHE/$name.onnx
  dir=$WORK/$name
  if ! "$PY" "$ROOT/scripts/ort_run.py" "$model" --output-dir "$dir/ort" \
         --random-inputs-dir "$dir/inputs" --threads 1; then
    echo "FAIL $name: onnxruntime"; failed+=("$name"); continue
  fi
  start=$EPOCHREALTIME
  if ! "$KILN" compile "$model" -O2 -o "$dir/$name.kiln"; then
    echo "FAIL $name: kiln compile exited non-zero"; failed+=("$name"); continue
  fi
  if ! "$KILN" run "$dir/$name.kiln" --input "input=$dir/inputs/input.npy" --output-dir "$dir/kiln"; then
    echo "FAIL $name: kiln run exited non-zero"; failed+=("$name"); continue
  fi
  awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "kiln compile + run: %.1f s\n", b - a }' 
  if ! "$PY" "$ROOT/scripts/compare_outputs.py" "$dir/kiln" "$dir/ort" --rtol 1e-4; then
    failed+=("$name")
  fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "FAIL: ${failed[*]} (files kept in $WORK)"
  exit 1
fi
rm -rf "$WORK"
echo "PASS: ${MODELS[*]}"
