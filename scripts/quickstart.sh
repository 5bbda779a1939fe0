#!/usr/bin/env bash
# kiln's main job on a fresh machine: install what is missing, build, and classify the held-out
# handwritten digits with the small CNN that ships in models/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target kiln
echo
build/kiln classify models/digits_cnn.onnx \
  --input models/digits_samples/heldout_x.npy --labels models/digits_samples/heldout_y.npy --show 16
