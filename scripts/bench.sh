#!/usr/bin/env bash
# Runs every benchmark in bench/. Each prints its figures as ratios against a baseline
# measured in the same run. When PyTorch is importable, bench_train is also compared
# with its PyTorch peer (bench/peers/torch_train.py); torch is never required.
# bench/bench_python.py measures the Python package against the C API and bench_train;
# bench/bench_rnn.py the LSTM and GRU layers against PyTorch's (BENCH_RNN_ARGS adds options);
# bench/bench_dist.py the sync-mode efficiency of a parameter-server job (Paddle 1.8
# beside when RILL_BENCH_PADDLE_PYTHON is set; BENCH_DIST_ARGS adds options), and
# bench/bench_dist_snapshot.py what cluster snapshots add to that job's step and start
# (BENCH_DIST_SNAPSHOT_ARGS adds options).
# Then bench/peers/infer_peers.py runs the real models in ../shared/models with rill,
# ONNX Runtime and Paddle Inference and prints the ratios; a peer that cannot be imported
# is skipped with a message. INFER_PEERS_ARGS adds options to it (e.g. "--rounds 1").
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
for b in "$BUILD"/bench_*; do
  [ -x "$b" ] || continue
  printf '\n==== %s ====\n' "$(basename "$b")"
  if [ "$(basename "$b")" = bench_train ]; then
    torch_py=""
    for py in python3 /usr/bin/python3; do
      if "$py" -c "import torch" 2>/dev/null; then torch_py=$py; break; fi
    done
    # With the PyTorch peer, the two processes take turns TRAIN_PAIRS times and each
    # side keeps its best step time, so a burst of load on the shared machine during one
    # process does not decide the ratio.
    pairs=1
    [ -n "$torch_py" ] && pairs=${TRAIN_PAIRS:-3}
    best_r="" best_t=""
    for ((k = 0; k < pairs; k++)); do
      out=$("$b")
      [ "$k" -eq 0 ] && printf '%s\n' "$out" | grep -v '^RESULT'
      best_r=$(printf '%s\n%s\n' "$best_r" "$(printf '%s\n' "$out" | sed -n 's/^RESULT //p')" |
        awk -f scripts/best_result.awk)
      if [ -n "$torch_py" ]; then
        peer=$("$torch_py" bench/peers/torch_train.py)
        [ "$k" -eq 0 ] && printf '%s\n' "$peer" | grep -v '^RESULT'
        best_t=$(printf '%s\n%s\n' "$best_t" "$(printf '%s\n' "$peer" | sed -n 's/^RESULT //p')" |
          awk -f scripts/best_result.awk)
      fi
    done
    if [ -n "$torch_py" ]; then
      echo "best of $pairs alternating runs: rill $best_r; torch $best_t"
      awk -v r="$best_r" -v t="$best_t" 'BEGIN {
        split(r, a, /[ =]/); split(t, b, /[ =]/);
        printf "rill / torch step time: mlp %.2f, lenet %.2f (below 1: rill faster)\n",
          a[2] / b[2], a[4] / b[4] }'
    else
      echo "torch peer skipped: no python3 here can import torch (make peers installs it)"
    fi
  else
    "$b"
  fi
done

printf '\n==== bench_python (the Python package: Executor.run overhead, MLP step vs C) ====\n'
case "$BUILD" in /*) ABS_BUILD=$BUILD ;; *) ABS_BUILD=$PWD/$BUILD ;; esac
RILL_LIB="$ABS_BUILD/librill.so" PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" \
  "${PYTHON:-python3}" bench/bench_python.py "$BUILD"

printf '\n==== bench_rnn (LSTM and GRU layers vs PyTorch nn.LSTM / nn.GRU) ====\n'
# shellcheck disable=SC2086
RILL_LIB="$ABS_BUILD/librill.so" PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" \
  "${PYTHON:-python3}" bench/bench_rnn.py ${BENCH_RNN_ARGS:-}

printf '\n==== bench_while (a while loop against the same ops unrolled) ====\n'
RILL_LIB="$ABS_BUILD/librill.so" PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" \
  "${PYTHON:-python3}" bench/bench_while.py

printf '\n==== bench_multislot (MultiSlot lines parsed and batched vs str.split) ====\n'
RILL_LIB="$ABS_BUILD/librill.so" PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" \
  "${PYTHON:-python3}" bench/bench_multislot.py

printf '\n==== bench_dist (sync-mode efficiency: 2 pservers x 2 trainers vs one process) ====\n'
# Paddle Fluid 1.8 runs beside when RILL_BENCH_PADDLE_PYTHON names a Python that has it.
# shellcheck disable=SC2086
RILL_LIB="$ABS_BUILD/librill.so" PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" \
  "${PYTHON:-python3}" bench/bench_dist.py ${BENCH_DIST_ARGS:-}

printf '\n==== bench_dist_snapshot (cluster snapshots: step with / without, recovery) ====\n'
# shellcheck disable=SC2086
RILL_LIB="$ABS_BUILD/librill.so" PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" \
  "${PYTHON:-python3}" bench/bench_dist_snapshot.py ${BENCH_DIST_SNAPSHOT_ARGS:-}

printf '\n==== infer_peers (rill vs ONNX Runtime / Paddle Inference on ../shared/models) ====\n'
models=../shared/models
if [ ! -d "$models" ]; then
  echo "infer_peers skipped: $models is missing"
  exit 0
fi
infer_py=""
for py in python3 /usr/bin/python3; do
  if "$py" -c "import numpy, importlib.util as u, sys;
sys.exit(0 if u.find_spec('onnxruntime') or u.find_spec('paddle') else 1)" 2>/dev/null; then
    infer_py=$py; break
  fi
done
if [ -z "$infer_py" ]; then
  echo "infer_peers skipped: no python3 here can import numpy and onnxruntime or paddle" \
    "(make peers installs onnxruntime, paddle2onnx and paddlepaddle)"
  exit 0
fi
# shellcheck disable=SC2086
"$infer_py" bench/peers/infer_peers.py --models "$models" --rill-bin "$BUILD/rill" \
  ${INFER_PEERS_ARGS:-}
