#!/usr/bin/env bash
# Installs the peers the benchmarks compare rill with, when they are missing. None of them
# is needed to build or test rill: a peer that cannot be installed is skipped by the
# benchmark that uses it, which says so.
#   PyTorch (CPU): Debian's python3-torch, for the system interpreter (/usr/bin/python3);
#                  PyPI's torch wheel drags in gigabytes of CUDA libraries.
#   ONNX Runtime, paddle2onnx, PaddlePaddle: from PyPI, for $PYTHON.
set -uo pipefail
PY=${PYTHON:-python3}
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

if ! "$PY" -c 'import torch' 2>/dev/null && ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "installing the PyTorch peer: python3-torch"
  $SUDO apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      python3-torch >/dev/null ||
    echo "note: python3-torch could not be installed; the PyTorch comparison will be skipped"
fi

# GNU time measures rill's peak memory in the inference peer benchmark.
if ! [ -x /usr/bin/time ]; then
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    --no-install-recommends time >/dev/null || echo "note: GNU time could not be installed"
fi

want=()
"$PY" -c 'import onnxruntime' 2>/dev/null || want+=(onnxruntime)
"$PY" -c 'import paddle2onnx' 2>/dev/null || want+=(paddle2onnx)
"$PY" -c 'import paddle' 2>/dev/null || want+=(paddlepaddle)
if [ ${#want[@]} -gt 0 ]; then
  echo "installing Python peers: ${want[*]}"
  "$PY" -m pip install -q "${want[@]}" ||
    echo "note: some Python peers could not be installed; their comparisons will be skipped"
fi
exit 0
