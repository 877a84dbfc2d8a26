#!/usr/bin/env bash
# Builds, on this (Debian, internet) machine, the git-ignored folders that let the GPU machine
# (Python 3.12, PyTorch + Triton, no internet) run the peers beside our bench:
#   .quack_a/  Quack 0.6.5 and its wheels, with the first 32 MB of the CuTe-DSL cu13 library
#   .quack_b/  the rest of that library (it is 66 MB as tar.xz: more than one transfer, whose
#              limit of 64 MiB includes .devdeps and the tracked files), and the cuda-bindings
#              and torch-c-dlpack-ext wheels (in .quack_a they took it past that limit:
#              51.9 MB + .devdeps 10.3 + the tree 5.3 in November 2026)
#   .whl/      Liger-Kernel 0.8.5
#   .peers/    shared/perf/peers_bench.py and fi_norm.so (FlashInfer 0.7.2's header-only norm)
# Then two device calls on one warm machine (idle_release_s is short: issue them back to back):
#   carry .quack_a .devdeps:  mkdir -p /tmp/stash && cp .quack_a/* /tmp/stash/
#   carry .quack_b .devdeps .whl .peers:  OUT=$OUT bash bench/cuda/peers_call.sh
#   (or, the peers and ours interleaved in one process: OUT=$OUT bash bench/cuda/cells_call.sh)
#   bench/cuda/make_peer_carry.sh [SHARED_PERF_DIR]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
perf=${1:-$repo/../shared/perf}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$repo"
download() {  # wheels for CPython 3.12 on manylinux x86_64, without their dependencies
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 -d "$@"
}
download "$work/q" quack-kernels==0.6.5 nvidia-cutlass-dsl==4.8.1 \
  nvidia-cutlass-dsl-libs-base==4.8.1 nvidia-cutlass-dsl-libs-core==4.8.1 \
  nvidia-cutlass-dsl-libs-cu13==4.8.1 apache-tvm-ffi torch-c-dlpack-ext einops cuda-bindings \
  cuda-pathfinder protobuf==5.29.3
download "$work/w" liger-kernel==0.8.5
download "$work/fi" flashinfer-python==0.7.2.post1

rm -rf .quack_a .quack_b .whl .peers && mkdir -p .quack_a .quack_b .whl .peers
# The cu13 wheel unpacked, recompressed and split; peers_call.sh reassembles and checks it.
mkdir "$work/cu13" && python3 -m zipfile -e "$work"/q/nvidia_cutlass_dsl_libs_cu13-*.whl "$work/cu13"
tar -C "$work/cu13" -cf - . | xz -6 -T0 > "$work/cu13.tar.xz"
(cd "$work" && split -b 32M cu13.tar.xz cu13.tar.xz.part_)
sha256sum < "$work/cu13.tar.xz" > .quack_a/cu13.tar.xz.sha256
cp .quack_a/cu13.tar.xz.sha256 .quack_b/
mv "$work/cu13.tar.xz.part_aa" .quack_a/ && mv "$work"/cu13.tar.xz.part_a[b-z] .quack_b/
find "$work/q" -name '*.whl' ! -name '*libs_cu13*' ! -name 'cuda_bindings-*' \
  ! -name 'torch_c_dlpack_ext-*' -exec cp {} .quack_a/ \;
cp "$work"/q/cuda_bindings-*.whl "$work"/q/torch_c_dlpack_ext-*.whl .quack_b/
cp "$work"/w/*.whl .whl/
cp "$perf/peers_bench.py" .peers/
(cd "$work/fi" && python3 -m zipfile -e flashinfer_python-*.whl .)
nvcc -O3 -std=c++17 -DENABLE_BF16 -gencode arch=compute_90a,code=sm_90a -Xcompiler -fPIC \
  -shared -cudart static -I"$work/fi/flashinfer/data/include" -o .peers/fi_norm.so \
  "$perf/fi_norm.cu"
du -sh .quack_a .quack_b .whl .peers
