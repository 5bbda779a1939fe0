#!/usr/bin/env bash
# Installs everything kiln needs on a fresh Debian 12 machine (run as root), idempotently:
# Debian packages for the build, tests and benchmarks, and a Python virtual environment
# (.venv, on top of Debian's torch/torchvision/sklearn) with onnx and onnxruntime.
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  protobuf-compiler libprotobuf-dev libonnx-dev libonnx-testdata
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  libflatbuffers-dev flatbuffers-compiler libxxhash-dev libcpuinfo-dev
  clang libclang-rt-14-dev
  libopenblas-dev libblis-dev libdnnl-dev
  python3 python3-venv python3-pip python3-numpy python3-sklearn python3-torch python3-torchvision
)

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's python3 (not a pyenv shim) so that Debian's torch is visible inside the venv.
if [ ! -x .venv/bin/python ]; then
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
if ! .venv/bin/python -c "import onnx, onnxruntime" 2>/dev/null; then
  # numpy<2: Debian's torch 1.13 is built against numpy 1.x.
  .venv/bin/pip install -q "numpy<2" onnx onnxruntime
fi
echo "setup: ok"
