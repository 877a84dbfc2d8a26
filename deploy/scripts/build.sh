#!/usr/bin/env bash
# Configures and builds normserve into build/ (CUDA backend when nvcc is found
# at /usr/local/cuda or on PATH; CPU backend always). Extra arguments go to
# the CMake configure step, e.g. -DNORMSERVE_BUILD_TESTS=OFF.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j"$(nproc)"
