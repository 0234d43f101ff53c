#!/usr/bin/env bash
# Runs every benchmark in bench/. Each prints its figures as ratios against a baseline
# measured in the same run. When PyTorch is importable, bench_train is also compared
# with its PyTorch peer (bench/peers/torch_train.py); torch is never required.
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
for b in "$BUILD"/bench_*; do
  [ -x "$b" ] || continue
  printf '\n==== %s ====\n' "$(basename "$b")"
  if [ "$(basename "$b")" = bench_train ]; then
    out=$("$b")
    printf '%s\n' "$out"
    torch_py=""
    for py in python3 /usr/bin/python3; do
      if "$py" -c "import torch" 2>/dev/null; then torch_py=$py; break; fi
    done
    if [ -n "$torch_py" ]; then
      peer=$("$torch_py" bench/peers/torch_train.py)
      printf '%s\n' "$peer" | grep -v '^RESULT'
      r=$(printf '%s\n' "$out" | sed -n 's/^RESULT //p')
      t=$(printf '%s\n' "$peer" | sed -n 's/^RESULT //p')
      awk -v r="$r" -v t="$t" 'BEGIN {
        split(r, a, /[ =]/); split(t, b, /[ =]/);
        printf "rill / torch: mlp %.2f, lenet %.2f\n", a[2] / b[2], a[4] / b[4] }'
    else
      echo "torch peer skipped: no python3 here can import torch (make peers installs it)"
    fi
  else
    "$b"
  fi
done
