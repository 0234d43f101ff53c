#!/usr/bin/env bash
# scripts/gpu-check.sh OUTDIR: every GPU check in one command, on a bare x86-64 machine
# with an NVIDIA GPU, its driver, nvcc, CMake and ninja, and a Python with NVIDIA's
# cuDNN and cuBLAS wheels (doc/design/cuda.md gives the steps). It
#   1. unpacks rill's Debian packages, downloaded beforehand into .gpu-deps/, into a
#      private prefix (never into /) and points LD_LIBRARY_PATH at them and at cuDNN and
#      cuBLAS wherever the machine has them;
#   2. uses the build named by RILL_GPU_BUILD, or build-gpu/ or build/ when they hold the
#      CUDA backend and its tests (a build made on another machine and copied beside the
#      checkout), else builds the GPU targets into build-gpu/;
#   3. runs the GPU tests (the CUDA kernels against the CPU's, the shared models on the
#      GPU, the runtime's errors), the Python ones, bench_cuda, and the training steps,
#      the recurrent layers and inference against PyTorch's on the same GPU;
# writing gpu-check.log and one file per step into OUTDIR. Each step has its own time
# limit; the whole stays well inside 8 minutes. Exit status: the number of failed steps.
set -uo pipefail
if [ $# -ne 1 ]; then
  echo "usage: scripts/gpu-check.sh OUTDIR" >&2
  exit 2
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1" || exit 2
OUT=$(cd "$1" && pwd)
exec > >(tee "$OUT/gpu-check.log") 2>&1
START=$(date +%s)
FAILED=0
elapsed() { echo $(( $(date +%s) - START )); }
note() { echo; echo "== $* ($(elapsed) s)"; }

# run NAME LIMIT_S CMD...: CMD's output into OUTDIR/NAME.txt, its tail here.
run() {
  local name=$1 limit=$2
  shift 2
  note "$name"
  timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.txt" 2>&1
  local rc=$?
  tail -n 40 "$OUT/$name.txt"
  echo "-- $name: exit $rc"
  if [ "$rc" -ne 0 ]; then FAILED=$((FAILED + 1)); fi
  return 0
}

note "machine"
uname -a
nvidia-smi -L 2>&1 | tee "$OUT/gpu.txt" || echo "nvidia-smi: not found"
lscpu | grep -m1 "Model name" || true

# ---- 1. libraries ----
DEPS=$ROOT/.gpu-deps
PREFIX=$DEPS/root
LIBPATH=""
if ls "$DEPS"/*.deb >/dev/null 2>&1; then
  note "unpacking $(ls "$DEPS"/*.deb | wc -l) Debian packages into $PREFIX"
  mkdir -p "$PREFIX"
  for deb in "$DEPS"/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$PREFIX"
    else
      (cd "$PREFIX" && ar p "$deb" "$(ar t "$deb" | grep '^data.tar')" | tar -x -a -f - 2>/dev/null ||
        ar p "$deb" "$(ar t "$deb" | grep '^data.tar')" | tar -x --zstd -f -)
    fi
  done
  for d in usr/lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu/openblas-pthread lib/x86_64-linux-gnu; do
    [ -d "$PREFIX/$d" ] && LIBPATH="$LIBPATH:$PREFIX/$d"
  done
  export PATH="$PREFIX/usr/bin:$PATH"
  export PKG_CONFIG_SYSROOT_DIR="$PREFIX"
  export PKG_CONFIG_PATH="$PREFIX/usr/lib/x86_64-linux-gnu/pkgconfig:$PREFIX/usr/share/pkgconfig"
fi
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  [ -d "$d" ] && LIBPATH="$LIBPATH:$d"
done
PY=${PYTHON:-python3}
WHEEL_LIBS=$("$PY" - <<'PYEOF' 2>/dev/null
import importlib, os
dirs = []
for name in ('nvidia.cudnn', 'nvidia.cublas', 'nvidia.cuda_runtime', 'nvidia.cuda_nvrtc'):
    try:
        mod = importlib.import_module(name)
    except Exception:
        continue
    for p in getattr(mod, '__path__', []):
        if os.path.isdir(os.path.join(p, 'lib')):
            dirs.append(os.path.join(p, 'lib'))
print(':'.join(dirs))
PYEOF
)
[ -n "$WHEEL_LIBS" ] && LIBPATH="$LIBPATH:$WHEEL_LIBS"
export LD_LIBRARY_PATH="${LIBPATH#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"

# ---- 2. the build ----
GPU_TARGETS="rill rill_cli rill_cuda cuda_test_cuda_runtime cuda_test_cuda_kernels cuda_test_cuda_models
             cuda_test_cuda_programs bench_cuda bench_train"
has_gpu_build() { [ -f "$1/librill_cuda.so" ] && [ -x "$1/cuda_test_cuda_kernels" ] && [ -x "$1/bench_cuda" ]; }
BUILD=${RILL_GPU_BUILD:-}
if [ -z "$BUILD" ]; then
  for b in "$ROOT/build-gpu" "$ROOT/build"; do
    if has_gpu_build "$b"; then BUILD=$b; break; fi
  done
fi
if [ -z "$BUILD" ]; then
  BUILD=$ROOT/build-gpu
  GEN=""
  command -v ninja >/dev/null && GEN="-G Ninja"
  # The emulated backend (cmake/cuda.cmake) is for machines without a GPU.
  run configure 120 cmake -S "$ROOT" -B "$BUILD" $GEN -DCMAKE_BUILD_TYPE=Release -DRILL_CUDA=ON \
    -DRILL_CUDA_EMULATOR=OFF
  run build 240 cmake --build "$BUILD" --target $GPU_TARGETS -j "$(nproc)"
else
  note "using the build in $BUILD"
fi
if ! has_gpu_build "$BUILD"; then
  echo "gpu-check: no usable GPU build in $BUILD"
  exit 1
fi

SHARED=${RILL_SHARED_DIR:-}
for s in "$ROOT/shared" "$ROOT/../shared"; do
  if [ -z "$SHARED" ] && [ -d "$s/models" ]; then SHARED=$(cd "$s" && pwd); fi
done
export RILL_SHARED_DIR="$SHARED" RILL_BINARY_DIR="$BUILD"
echo "shared models: ${SHARED:-none found}"

# ---- 3. the checks ----
run cuda_test_cuda_runtime 60 "$BUILD/cuda_test_cuda_runtime" --jobs 1 --verbose
run cuda_test_cuda_kernels 120 "$BUILD/cuda_test_cuda_kernels" --jobs 1 --verbose
run cuda_test_cuda_models 150 "$BUILD/cuda_test_cuda_models" --jobs 1 --verbose
run cuda_test_cuda_programs 120 "$BUILD/cuda_test_cuda_programs" --jobs 1 --verbose
if "$PY" -c "import pytest, numpy" 2>/dev/null && [ -f "$BUILD/librill.so" ]; then
  run python_test_cuda 90 env RILL_LIB="$BUILD/librill.so" PYTHONPATH="$ROOT/python" \
    "$PY" -m pytest -q -rs "$ROOT/tests/python/test_cuda.py" "$ROOT/tests/python/test_cuda_pinned.py"
else
  note "python_test_cuda: skipped (no pytest/numpy for $PY, or no librill.so)"
fi
run bench_cuda 150 "$BUILD/bench_cuda"
# The MLP and LeNet training steps on the GPU against PyTorch's on the same GPU.
if [ -x "$BUILD/bench_train" ]; then
  run bench_train_cuda 120 "$BUILD/bench_train" --device cuda:0
  if "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    run torch_train_cuda 120 "$PY" "$ROOT/bench/peers/torch_train.py" --device cuda
    rill_r=$(grep '^RESULT' "$OUT/bench_train_cuda.txt" || true)
    torch_r=$(grep '^RESULT' "$OUT/torch_train_cuda.txt" || true)
    if [ -n "$rill_r" ] && [ -n "$torch_r" ]; then
      ratio() { echo "$rill_r $torch_r" | awk -v k="$1" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1)
                  v[++n] = substr($i, length(k) + 2); if (n == 2 && v[2] > 0) printf "%.3f", v[1] / v[2] }'; }
      note "training step on the GPU, rill / PyTorch (target <= 1.0): mlp $(ratio mlp_ms), lenet $(ratio lenet_ms)"
    fi
  else
    note "torch_train_cuda: skipped (no PyTorch with CUDA for $PY)"
  fi
fi

# dynamic_lstm and dynamic_gru (forward and training step) on the GPU against PyTorch's
# cuDNN nn.LSTM / nn.GRU on the same GPU.
if [ -f "$BUILD/librill.so" ] && "$PY" -c "import torch, numpy; assert torch.cuda.is_available()" 2>/dev/null; then
  run bench_rnn_cuda 150 env RILL_LIB="$BUILD/librill.so" PYTHONPATH="$ROOT/python" \
    "$PY" "$ROOT/bench/bench_rnn.py" --device cuda:0 --rounds 2
else
  note "bench_rnn_cuda: skipped (no librill.so, or no PyTorch with CUDA for $PY)"
fi

# Inference on the GPU: rill's predictor against PyTorch running the same programs (the
# shared models and ResNet-50 with random weights), batch 1 and 64, in one process.
if [ -n "$SHARED" ] && [ -f "$BUILD/librill.so" ] &&
  "$PY" -c "import torch, numpy; assert torch.cuda.is_available()" 2>/dev/null; then
  run torch_infer_cuda 150 env RILL_LIB="$BUILD/librill.so" PYTHONPATH="$ROOT/python" \
    "$PY" "$ROOT/bench/peers/torch_infer.py" --device cuda:0 --rounds 3 --budget 0.15 --settle 0.05 \
    --models "$SHARED/models" --programs "$SHARED/programs"
else
  note "torch_infer_cuda: skipped (no shared models, no librill.so, or no PyTorch with CUDA for $PY)"
fi

# A machine with a GPU on which rill finds no device (a driver older than the build's
# CUDA runtime, a cuBLAS or cuDNN of another major version) would skip every GPU test:
# that is a failure here, with the reason.
if grep -q "^GPU [0-9]" "$OUT/gpu.txt" 2>/dev/null && grep -q "no CUDA device" "$OUT/bench_cuda.txt"; then
  echo "gpu-check: this machine has a GPU, but rill cannot use it: $(cat "$OUT/bench_cuda.txt")"
  FAILED=$((FAILED + 1))
fi

note "done: $FAILED failed step(s); logs in $OUT"
exit "$FAILED"
