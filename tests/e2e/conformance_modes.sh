#!/usr/bin/env bash
# Acceptance check: `kiln conformance --compiled` (passes, lowering, .kiln written and mapped,
# the runtime) passes exactly the cases that the reference interpreter passes, and fails none.
#
#   conformance_modes.sh KILN_BINARY SUITE_DIR...
set -uo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 KILN_BINARY SUITE_DIR..." >&2
  exit 2
fi
KILN=$1
shift
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln_conf_modes.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

status=0
for suite in "$@"; do
  name=$(basename "$suite")
  "$KILN" conformance "$suite" > "$WORK/$name.ref" 2>&1
  "$KILN" conformance --compiled "$suite" > "$WORK/$name.compiled" 2>&1
  echo "$name reference: $(tail -n 1 "$WORK/$name.ref")"
  echo "$name compiled:  $(tail -n 1 "$WORK/$name.compiled")"
  grep '^FAIL' "$WORK/$name.compiled" && status=1
  if ! diff <(grep '^PASS' "$WORK/$name.ref" | sort) <(grep '^PASS' "$WORK/$name.compiled" | sort); then
    echo "FAIL $name: the two modes pass different cases (< reference only, > compiled only)"
    status=1
  fi
done
[[ $status -eq 0 ]] && echo "PASS: both modes pass the same cases"
exit $status
