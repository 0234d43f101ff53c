#!/usr/bin/env bash
# Installs what rill needs to build and test, and nothing when all of it is present.
set -euo pipefail

debs=(cmake make gcc g++ clang pkg-config protobuf-c-compiler libprotobuf-c-dev libuv1-dev
      libopenblas-dev libzmq3-dev libcriterion-dev graphviz libclang-rt-14-dev
      libcurl4-openssl-dev libjson-c-dev etcd-server)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PY=${PYTHON:-python3}
if ! "$PY" -c 'import numpy, pytest, PIL' 2>/dev/null; then
  echo "installing Python packages: numpy pytest pillow"
  "$PY" -m pip install -q numpy pytest pillow
fi
