#!/usr/bin/env bash
# The whole test suite on a fresh machine: install, build (warnings are errors), run every test;
# then the same unit and conformance tests in the AddressSanitizer+UBSan build, and the model
# loader's fuzzer for a bounded time. Exits non-zero on the first failing stage.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)

stage() { echo; echo "=== $* ==="; }

stage "release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_WERROR=ON >/dev/null
cmake --build build -j"$jobs"

stage "sanitizer build (ASan + UBSan)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON -DKILN_WERROR=ON >/dev/null
cmake --build build-asan -j"$jobs"

stage "fuzzer build (clang, libFuzzer)"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKILN_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_model_loader fuzz_model_run fuzz_module_file

stage "sanitizer tests"
# The e2e tests run whole ImageNet models: the release run covers them.
(cd build-asan && ctest --output-on-failure -j"$jobs" -LE e2e)

stage "fuzzing the model loader, the op kernels (60 s each) and the .kiln loader (45 s)"
(cd build-fuzz && ctest --output-on-failure -R fuzz_)

stage "release tests"
(cd build && ctest --output-on-failure -j"$jobs")
