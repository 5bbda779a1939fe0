#!/bin/sh
# Rewrites the # EXPECTED section of golden pass tests from what `kiln opt` prints now.
# Usage: tests/passes/update_golden.sh KILN_BINARY FILE...   (review the diff before committing)
set -e
kiln=$1; shift
for f in "$@"; do
  passes=$(sed -n 's/^# RUN: passes=//p' "$f")
  tmp=$(mktemp)
  sed '/^# EXPECTED/,$d' "$f" > "$tmp.head"
  sed -n '/^# INPUT/,/^# EXPECTED/p' "$f" | sed '1d;/^# EXPECTED/d' > "$tmp.in"
  { cat "$tmp.head"; echo "# EXPECTED"; "$kiln" opt "$tmp.in" --passes="$passes" --verify; } > "$tmp"
  mv "$tmp" "$f"
  rm -f "$tmp.head" "$tmp.in"
done
