#!/usr/bin/env bash
# Packs the server, the load generator and the server tests, built here with
# CUDA, into .carry/ (git-ignored) with every shared library they load, so
# that a GPU machine without gRPC can run them (LD_LIBRARY_PATH=.carry/lib).
# Usage: pack_for_gpu.sh [build dir, default build]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
rm -rf .carry && mkdir -p .carry/bin .carry/lib
binaries=("$build/server/normserve-server" "$build/client/bench/normserve-bench"
          "$build/tests/server/normserve_server_test")
cp "${binaries[@]}" .carry/bin/
for binary in "${binaries[@]}"; do
  # Everything but the C and C++ runtimes and the loader: the target has
  # newer ones, which its own programs need.
  ldd "$binary" | awk '/=> \// {print $3}' |
    grep -vE '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
    xargs -r -I{} cp -L -n {} .carry/lib/
done
du -sh .carry
