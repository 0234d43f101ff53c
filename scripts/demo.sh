#!/usr/bin/env bash
# The demo (`make demo`): the C API end to end (examples/c/demo.c), the `rill` command
# line on a real Paddle MNIST model and its reference image, then the Python package:
# recognize_digits trains an MLP and a CNN, saves them as inference models, reloads them
# and prints their test accuracy and where its last training step's time went (a
# timeline for ui.perfetto.dev); `rill dot` then draws the saved CNN (Graphviz) and
# `rill trace summary` the CNN step's time per op type; last, examples/dist_train
# trains through the launcher (2 pservers x 2 trainers) and in one process, and prints
# both accuracies.
#   scripts/demo.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
SHARED=${RILL_SHARED:-../shared}

printf '==== 1. a program built through the C API, saved, loaded back ====\n'
rm -rf "$BUILD/demo_model"
"$BUILD/rill_demo" "$BUILD/demo_model"

MODEL="$SHARED/models/mnist_mlp_handwriting"
printf '\n==== 2. rill run on a real Paddle model: %s ====\n' "$MODEL"
if [ ! -d "$MODEL" ]; then
  echo "skipped: $MODEL is not there (the shared models live beside the checkout)"
else
  "$BUILD/rill" inspect "$MODEL" | sed -n '/^feed targets/,$p'
  out=$("$BUILD/rill" run "$MODEL" --input "image=$MODEL/refs/input_image.npy" --output "$BUILD/demo_mnist")
  printf '%s\n' "$out"
  digit=$(printf '%s\n' "$out" | sed -n 's/^  argmax per row: \([0-9]*\).*/\1/p' | head -n1)
  printf '\nthe model reads the handwritten digit as: %s\n' "${digit:-?}"
fi

printf '\n==== 3. Python: recognize_digits (train, save, reload, evaluate) ====\n'
case "$BUILD" in /*) ABS_BUILD=$BUILD ;; *) ABS_BUILD=$PWD/$BUILD ;; esac
rm -rf "$BUILD/demo_digits"
RILL_LIB="$ABS_BUILD/librill.so" PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" \
  "${PYTHON:-python3}" examples/recognize_digits/train.py --save "$BUILD/demo_digits" \
  --min-accuracy 0.95 --profile "$BUILD/demo_digits"

printf '\n==== 4. a picture of the saved CNN: rill dot ====\n'
"$BUILD/rill" dot "$BUILD/demo_digits/cnn" -o "$BUILD/demo_digits/cnn.dot"
if command -v dot >/dev/null 2>&1; then
  dot -Tsvg "$BUILD/demo_digits/cnn.dot" -o "$BUILD/demo_digits/cnn.svg"
  echo "wrote $BUILD/demo_digits/cnn.dot and its rendering $BUILD/demo_digits/cnn.svg"
else
  echo "wrote $BUILD/demo_digits/cnn.dot (Graphviz's dot is not installed to render it)"
fi

printf '\n==== 5. where one CNN training step spends its time: rill trace summary ====\n'
"$BUILD/rill" trace summary "$BUILD/demo_digits/cnn_step.json" --svg "$BUILD/demo_digits/cnn_step_ops.svg"
echo "the step's timeline: $BUILD/demo_digits/cnn_step.json (open it in ui.perfetto.dev or chrome://tracing)"

printf '\n==== 6. distributed training: 2 pservers x 2 trainers, then one local process ====\n'
# The parameter-server runtime is there when `rill ops` lists CPU kernels for its ops.
missing=""
for op in send recv send_barrier fetch_barrier listen_and_serv; do
  if "$BUILD/rill" ops "$op" | grep -qx 'kernels: none'; then missing="$missing $op"; fi
done
if [ -n "$missing" ]; then
  echo "skipped: this build has no CPU kernel for:$missing (the parameter-server runtime)"
  exit 0
fi
rm -rf "$BUILD/demo_dist" && mkdir -p "$BUILD/demo_dist"
dist_env=(env RILL_LIB="$ABS_BUILD/librill.so" PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}")
timeout 300 "${dist_env[@]}" "${PYTHON:-python3}" -m rill.distributed.launch \
  --servers 2 --workers 2 examples/dist_train/train.py --steps 100 \
  --save-dir "$BUILD/demo_dist/model" | tee "$BUILD/demo_dist/job.log"
timeout 120 "${dist_env[@]}" "${PYTHON:-python3}" examples/dist_train/train.py \
  --local --steps 100 2>/dev/null | tee "$BUILD/demo_dist/local.log"
d=$(sed -n 's/.*distributed: test accuracy \([0-9.]*\).*/\1/p' "$BUILD/demo_dist/job.log")
l=$(sed -n 's/^local: test accuracy \([0-9.]*\).*/\1/p' "$BUILD/demo_dist/local.log")
printf '\ntest accuracy: distributed %s, local %s (the distributed model: %s)\n' \
  "${d:-?}" "${l:-?}" "$BUILD/demo_dist/model"
