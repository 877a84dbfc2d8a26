# Sourced (after cpu_image.sh) by gpu_image_test.sh: local stand-ins for the
# GPU variant's base images (docker.io/nvidia/cuda:*-devel/-runtime-ubuntu24.04),
# which no registry here can serve.
#
#   ensure_cuda_stand_ins   # $NORMSERVE_CUDA_DEVEL_IMAGE, $NORMSERVE_CUDA_RUNTIME_IMAGE
#                           # (made once, ~6 s; `podman rmi` them to remake)
#
# They are NOT NVIDIA's images and are tagged under localhost/normserve-stand-in
# so nothing mistakes them for those. Both start from the debootstrapped
# bookworm base of ensure_base_image:
#   devel   + the pieces of this machine's CUDA toolkit that building normserve
#             with CUDA needs: nvcc and the tools it runs (cudafe++, cicc and
#             libdevice, ptxas, fatbinary, nvlink, crt stubs), the headers, and
#             cudart (the static library the server links; the shared one only
#             because CMake's FindCUDAToolkit requires it to exist), laid out as
#             NVIDIA's images do: /usr/local/cuda -> cuda-X.Y, lib64 and include
#             under targets/x86_64-linux. About 220 MB of the toolkit's 2.7 GB.
#   runtime + nothing: the server links cudart statically, so the driver's
#             libcuda, which the NVIDIA container toolkit injects on a GPU host,
#             is all it needs.
# Both carry the environment of NVIDIA's images (PATH, LD_LIBRARY_PATH,
# CUDA_VERSION, NVIDIA_* variables the container toolkit reads).

NORMSERVE_CUDA_HOME=${NORMSERVE_CUDA_HOME:-/usr/local/cuda}

# The toolkit's release ("13.0"), from nvcc.
cuda_release() {
  "$NORMSERVE_CUDA_HOME/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p'
}

ensure_cuda_stand_ins() {
  local release
  release=$(cuda_release)
  [[ -n $release ]] || die "cannot read the CUDA release from $NORMSERVE_CUDA_HOME/bin/nvcc"
  NORMSERVE_CUDA_DEVEL_IMAGE=localhost/normserve-stand-in/cuda:$release-devel
  NORMSERVE_CUDA_RUNTIME_IMAGE=localhost/normserve-stand-in/cuda:$release-runtime
  if ! podman image exists "$NORMSERVE_CUDA_RUNTIME_IMAGE"; then
    make_stand_in "$NORMSERVE_CUDA_RUNTIME_IMAGE" "$release" ""
  fi
  if ! podman image exists "$NORMSERVE_CUDA_DEVEL_IMAGE"; then
    local stage
    stage=$(mktemp -d /tmp/normserve-cuda-stage.XXXXXX)
    stage_cuda_toolkit "$stage" "$release"
    make_stand_in "$NORMSERVE_CUDA_DEVEL_IMAGE" "$release" "$stage"
    rm -rf "$stage"
  fi
  log "CUDA stand-ins: $NORMSERVE_CUDA_DEVEL_IMAGE, $NORMSERVE_CUDA_RUNTIME_IMAGE"
}

# Copies the toolkit pieces into STAGE/cuda-RELEASE, plus the cuda symlink.
stage_cuda_toolkit() {
  local stage=$1 release=$2 from=$NORMSERVE_CUDA_HOME
  local to=$stage/cuda-$release
  mkdir -p "$to/bin" "$to/nvvm" "$to/targets/x86_64-linux/include" "$to/targets/x86_64-linux/lib"
  cp -a "$from"/bin/{nvcc,nvcc.profile,cudafe++,ptxas,fatbinary,nvlink,crt} "$to/bin/"
  cp -a "$from"/nvvm/{bin,libdevice} "$to/nvvm/"
  # include/ and lib64/ may be symlinks (to targets/...): copy what they hold.
  cp -a "$from/include/." "$to/targets/x86_64-linux/include/"
  cp -a "$from"/lib64/{libcudart_static.a,libcudadevrt.a,libcudart.so*} \
    "$to/targets/x86_64-linux/lib/"
  ln -s targets/x86_64-linux/include "$to/include"
  ln -s targets/x86_64-linux/lib "$to/lib64"
  ln -s "cuda-$release" "$stage/cuda"
}

# Commits IMAGE: the base image, STAGE's contents (if any) under /usr/local,
# and NVIDIA's environment.
make_stand_in() {
  local image=$1 release=$2 stage=$3 container started
  started=$(now)
  container=$(buildah from --pull=never --quiet "$NORMSERVE_BASE_IMAGE")
  [[ -z $stage ]] || buildah copy --quiet "$container" "$stage" /usr/local >/dev/null
  buildah config \
    --env PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64 \
    --env CUDA_VERSION="$release" \
    --env NVIDIA_VISIBLE_DEVICES=all \
    --env NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    --env NVIDIA_REQUIRE_CUDA="cuda>=$release" \
    --label org.opencontainers.image.description="normserve test stand-in, not NVIDIA's image: Debian 12 + CUDA $release pieces copied from the build host" \
    "$container"
  buildah commit --quiet --rm "$container" "$image" >/dev/null
  log "made $image in $(($(now) - started)) s"
}
