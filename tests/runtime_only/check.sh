#!/usr/bin/env bash
# Runs the runtime-only program on two compiled ONNX test models:
#   test_Conv2d (every step native)       -> must run and print its output;
#   test_softsign (a reference partition) -> must refuse with a clear message, exit 1, no crash.
#   check.sh KILN KILN_RUN_MODULE DIR
set -uo pipefail
KILN=$1 RUN=$2
DATA=/usr/share/libonnx-testdata/data
if [[ ! -d $DATA ]]; then echo "SKIP: no $DATA"; exit 77; fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln_rt_only.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

"$KILN" compile "$DATA/pytorch-converted/test_Conv2d/model.onnx" -o "$WORK/conv.kiln" >/dev/null || exit 1
"$RUN" "$WORK/conv.kiln" 2 > "$WORK/conv.out" 2>&1 || { cat "$WORK/conv.out"; echo "FAIL: native module"; exit 1; }
grep -q '^output 0: float32\[' "$WORK/conv.out" || { cat "$WORK/conv.out"; echo "FAIL: no output"; exit 1; }
cat "$WORK/conv.out"

"$KILN" compile "$DATA/node/test_softsign/model.onnx" -o "$WORK/softsign.kiln" >/dev/null || exit 1
"$RUN" "$WORK/softsign.kiln" > "$WORK/softsign.out" 2>&1
rc=$?
cat "$WORK/softsign.out"
if [[ $rc -ne 1 ]] || ! grep -q 'reference interpreter, which this program does not link' "$WORK/softsign.out"; then
  echo "FAIL: a module with a reference partition must be refused clearly (rc=$rc)"; exit 1
fi
echo "PASS"
