#!/usr/bin/env bash
# Installs, from Debian 12's archive, everything normserve needs. Idempotent:
# packages already present are left alone and nothing is fetched then.
#   install-deps.sh               build + run the service and its tests
#   install-deps.sh --deploy      also the container tools the deploy tests use
#   install-deps.sh --build-only  only what building the service needs (images)
set -euo pipefail

build_packages=(
  cmake ninja-build g++ pkg-config git ca-certificates curl
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler grpc-proto
  libabsl-dev prometheus-cpp-dev libspdlog-dev libfmt-dev
)
test_packages=(
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-grpcio python3-protobuf python3-numpy python3-yaml
)
# catatonit: the pause process `podman kube play` needs (not a hard dependency).
deploy_packages=(podman buildah runc debootstrap catatonit)
# kubectl from Debian's kubernetes-client, unless one is already installed
# (another package owning /usr/bin/kubectl would make the install fail).
command -v kubectl >/dev/null || deploy_packages+=(kubernetes-client)

case "${1:-}" in
  --build-only) wanted=("${build_packages[@]}") ;;
  --deploy) wanted=("${build_packages[@]}" "${test_packages[@]}" "${deploy_packages[@]}") ;;
  "") wanted=("${build_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: install-deps.sh [--deploy | --build-only]" >&2; exit 2 ;;
esac

missing=()
for package in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#wanted[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
as_root=()
[[ $(id -u) -eq 0 ]] || as_root=(sudo)
"${as_root[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends \
  "${missing[@]}"
