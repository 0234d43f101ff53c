#!/usr/bin/env bash
# Runs every test: the C suites (release build), again under AddressSanitizer +
# UndefinedBehaviorSanitizer, the threaded suites under ThreadSanitizer, the Python
# suites, and each fuzz target for a bounded time. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
PYTHON=${PYTHON:-python3}
FLAGS=()
[ "${CI:-}" = "true" ] && FLAGS+=(-DRILL_WERROR=ON)

section() { printf '\n==== %s ====\n' "$*"; }

section "C tests (release)"
(cd "$BUILD" && ctest --output-on-failure -j "$JOBS")

section "C tests (release) on the baseline paths: RILL_CPU_ISA=generic"
# The kernels' AVX2 paths are chosen at run time (framework/base/isa.h); capping the
# level tests the paths that CPUs without AVX2 (and arm64) take.
(cd "$BUILD" && RILL_CPU_ISA=generic ctest --output-on-failure -j "$JOBS")

section "C tests under AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DRILL_SANITIZE=address,undefined \
  -DRILL_BUILD_BENCH=OFF -DRILL_CUDA=OFF "${FLAGS[@]}" >/dev/null
cmake --build build-asan -j "$JOBS" >/dev/null
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j "$JOBS")

section "threaded C tests under ThreadSanitizer"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DRILL_SANITIZE=thread \
  -DRILL_BUILD_BENCH=OFF -DRILL_CUDA=OFF "${FLAGS[@]}" >/dev/null
cmake --build build-tsan -j "$JOBS" >/dev/null
# OpenBLAS is not instrumented: TSan cannot see how its own threads synchronise, and
# reports races inside its kernels (sgemm_beta_*) on them. Its GEMMs run on the thread
# that calls them here, so every thread the run has is one of rill's, fully checked.
# libzmq is not instrumented either: tests/threads/tsan.supp says what that hides.
tsan_supp="$PWD/tests/threads/tsan.supp"
(cd build-tsan && OPENBLAS_NUM_THREADS=1 \
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$tsan_supp" \
  ctest --output-on-failure -j "$JOBS" -L threads) || exit 1

section "install, then build a C project against the installed package"
prefix=$(mktemp -d)
cmake --install "$BUILD" --prefix "$prefix" >/dev/null
cmake -S tests/install -B "$prefix/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/consumer-build" >/dev/null
LD_LIBRARY_PATH="$prefix/lib" "$prefix/consumer-build/consumer"
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs rill
rm -rf "$prefix"

if [ -d tests/python ] && ls tests/python/test_*.py >/dev/null 2>&1; then
  section "Python tests"
  RILL_LIB="$PWD/$BUILD/librill.so" PYTHONPATH="$PWD/python" "$PYTHON" -m pytest -q tests/python
  # The emulated CUDA backend (cmake/cuda.cmake) is built where the toolkit is found.
  if [ -f "$BUILD/librill_cuda_emu.so" ]; then
    section "Python CUDA tests on the emulated CUDA backend"
    RILL_CUDA_LIB="$PWD/$BUILD/librill_cuda_emu.so" RILL_LIB="$PWD/$BUILD/librill.so" PYTHONPATH="$PWD/python" \
      "$PYTHON" -m pytest -q tests/python/test_cuda.py
    section "Python tests with every executor on the emulated device (control flow, sequences, optimizers, layers, detection, readers, the profiler)"
    # The emulated device's memory faults on any host read (doc/design/cuda.md): these
    # suites' programs (While, StaticRNN, DynamicRNN, cond, beam search, LoD, optimizers
    # and detection ops without device kernels, the Fluid API and the predictor) then show
    # any host code reading a tensor where a device op left it. The suites left out
    # train for many steps (minutes each on the emulated device), compare long training
    # runs with Paddle's at 1e-5 (the device sums in another order), or start processes.
    on_device=()
    for t in control_flow while_grad static_rnn dynamic_rnn layers_cond ifelse_switch cond_grad beam_search cudnn_lstm \
      seqops lod_propagation optimizers_paddle18 loss_layers losses small_layers resize profiler \
      activation_math chunk_eval crf ctr_layers dataset dataset_more deformable_conv detection detection_map \
      detection_nms detection_rpn double_grad dynamic_rnn_nested fluid_api fluid_api_survey fluid_misc_api framework \
      gradients_twice inference layers lod_reset mask_labels metrics norms paddle18_conditional_block \
      paddle18_recurrent paddle_random prelu program_c readers roi_more roi_perspective sequence_ops \
      sequence_softmax tensor_api tensor_array_to_tensor tensor_manip variable_math vision vision_more; do
      on_device+=("tests/python/test_$t.py")
    done
    RILL_TEST_EXECUTOR_PLACE=cuda:0 RILL_CUDA_LIB="$PWD/$BUILD/librill_cuda_emu.so" RILL_LIB="$PWD/$BUILD/librill.so" \
      PYTHONPATH="$PWD/python" "$PYTHON" -m pytest -q "${on_device[@]}"
  fi
fi

if ls tests/fuzz/fuzz_*.c >/dev/null 2>&1; then
  section "fuzz targets, ${FUZZ_SECONDS}s each"
  CC=clang cmake -S . -B build-fuzz -DRILL_FUZZ=ON -DRILL_BUILD_TESTS=OFF \
    -DRILL_BUILD_BENCH=OFF -DRILL_CUDA=OFF "${FLAGS[@]}" >/dev/null
  cmake --build build-fuzz -j "$JOBS" >/dev/null
  for f in tests/fuzz/fuzz_*.c; do
    name=$(basename "$f" .c)
    corpus=$(mktemp -d)
    # tests/fuzz/<name>.seeds lists glob patterns under ../shared whose small files seed
    # the corpus.
    if [ -f "tests/fuzz/$name.seeds" ]; then
      while read -r pattern; do
        [ -z "$pattern" ] || [ "${pattern#\#}" != "$pattern" ] && continue
        for seed in ../shared/$pattern; do
          [ -f "$seed" ] && [ "$(stat -c %s "$seed")" -le 65536 ] && cp "$seed" "$corpus/$(echo "${seed#../shared/}" | tr / _)"
        done
      done < "tests/fuzz/$name.seeds"
    fi
    echo "-- $name ($(ls "$corpus" | wc -l) seeds)"
    status=0
    build-fuzz/"$name" -max_total_time="$FUZZ_SECONDS" -max_len=65536 -rss_limit_mb=2048 \
      -print_final_stats=1 "$corpus" >"$corpus.log" 2>&1 || status=$?
    grep -E "stat::number_of_executed_units" "$corpus.log" || true
    if [ "$status" -ne 0 ]; then
      tail -n 60 "$corpus.log"
      echo "$name found a failure"
      exit 1
    fi
    rm -rf "$corpus" "$corpus.log"
  done
fi
section "all tests passed"
