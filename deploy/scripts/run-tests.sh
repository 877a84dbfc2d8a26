#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to every test run: installs what
# is missing (apt-get, including the container tools), builds everything
# (with the CUDA backend when nvcc is present), runs the whole ctest suite
# (unit, integration, interop, client, container and deploy tests), then
# builds and tests the compute library once more without CUDA, as a machine
# with no CUDA toolkit would, runs the batching core under ThreadSanitizer and
# the request fuzz test (validation + CPU kernels) under Address- and
# UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash deploy/scripts/install-deps.sh --deploy
bash deploy/scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 1800

cmake -S . -B build-nocuda -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DNORMSERVE_KERNELS_ONLY=ON -DNORMSERVE_ENABLE_CUDA=OFF -DNORMSERVE_BUILD_BENCH=OFF
cmake --build build-nocuda -j"$(nproc)"
# Compute tests only (no servers, ports or timing), so they run side by side:
# their float64 references are single-threaded.
ctest --test-dir build-nocuda --output-on-failure -j"$(nproc)"

# The batching core has no gRPC in it (TSan cannot see into Debian's
# uninstrumented gRPC), so it is checked for races on its own.
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNORMSERVE_ENABLE_CUDA=OFF \
  -DNORMSERVE_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS=-fsanitize=thread \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread
cmake --build build-tsan -j"$(nproc)" --target normserve_batcher_test
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/server/normserve_batcher_test

# Randomised requests through validation and the CPU kernels, with every
# out-of-bounds access or undefined behaviour fatal.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNORMSERVE_ENABLE_CUDA=OFF \
  -DNORMSERVE_BUILD_BENCH=OFF \
  "-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
  "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined"
cmake --build build-asan -j"$(nproc)" --target normserve_request_fuzz_test normserve_batcher_test
build-asan/tests/fuzz/normserve_request_fuzz_test
build-asan/tests/server/normserve_batcher_test
