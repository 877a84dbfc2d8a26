# Sourced by the container tests: builds, or finds already built, the CPU
# image of normserve (or, with build_image, any variant) without a Docker
# daemon.
#
#   source tests/deploy/lib/cpu_image.sh
#   ensure_container_tools SRC_DIR  # podman, buildah, runc, catatonit, debootstrap;
#                                   # writes containers.conf, exports CONTAINERS_CONF
#   ensure_base_image               # docker.io/library/debian:bookworm-slim, made here
#   build_cpu_image SRC_DIR         # podman build --pull=never -t $NORMSERVE_IMAGE
#   build_image SRC_DIR IMAGE [NAME=VALUE...]  # the same with other build arguments
#
# The base image is not pulled (no registry is reachable): it is
# `debootstrap --variant=minbase bookworm` from Debian's archive, imported with
# podman and tagged with the name the Dockerfile's FROM uses. The rootfs
# tarball is cached under $NORMSERVE_DEPLOY_CACHE (default
# /var/cache/normserve-deploy) so a second run skips debootstrap (30-90 s on
# a fresh 2-core machine).
#
# Containers run with host networking only (containers.conf netns="host") and
# runc (crun fails on these machines' cgroup setup); default ulimits stay
# within the hard limits of the calling shell. The containers.conf is this
# run's own (CONTAINERS_CONF): nothing under /etc/containers changes.

PYTHON=${PYTHON:-/usr/bin/python3}
NORMSERVE_IMAGE=${NORMSERVE_IMAGE:-localhost/normserve:cpu}
NORMSERVE_BASE_IMAGE=docker.io/library/debian:bookworm-slim
NORMSERVE_DEPLOY_CACHE=${NORMSERVE_DEPLOY_CACHE:-/var/cache/normserve-deploy}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

log() { echo "[$(date +%H:%M:%S)] $*"; }
die() { echo "FAIL: $*" >&2; exit 1; }

# Seconds since the epoch, for the durations the tests print.
now() { date +%s; }

# Installs the container tools (and kubectl, numpy, yaml) when one is missing, through
# the repository's dependency script, and writes the containers.conf every
# podman call uses.
ensure_container_tools() {
  local src_dir=$1 missing=()
  # catatonit: the pause process of `podman kube play` pods (only a
  # Recommends of podman, so not pulled in by --no-install-recommends).
  for tool in podman buildah runc debootstrap catatonit; do
    command -v "$tool" >/dev/null || [[ -x /usr/libexec/podman/$tool ]] || missing+=("$tool")
  done
  command -v kubectl >/dev/null || missing+=(kubernetes-client)
  "$PYTHON" -c 'import numpy, yaml' 2>/dev/null || missing+=(python3-numpy python3-yaml)
  if ((${#missing[@]})); then
    log "installing container tools (missing: ${missing[*]})"
    [[ $(id -u) -eq 0 ]] || die "installing ${missing[*]} needs root"
    # Another apt run may hold the dpkg lock for a while: wait for it
    # (APT_CONFIG is read after /etc/apt, so nothing there changes).
    local apt_config
    apt_config=$(mktemp /tmp/normserve-apt.XXXXXX.conf)
    echo 'DPkg::Lock::Timeout "900";' > "$apt_config"
    APT_CONFIG=$apt_config "$src_dir/deploy/scripts/install-deps.sh" --deploy
    # Whatever the dependency script does not list yet.
    local still_missing=()
    for package in "${missing[@]}"; do
      dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
        still_missing+=("$package")
    done
    if ((${#still_missing[@]})); then
      DEBIAN_FRONTEND=noninteractive APT_CONFIG=$apt_config \
        apt-get install -y -qq --no-install-recommends "${still_missing[@]}"
    fi
    rm -f "$apt_config"
  fi

  NORMSERVE_CONTAINERS_DIR=$(mktemp -d /tmp/normserve-containers.XXXXXX)
  local nofile nproc_limit
  nofile=$(ulimit -Hn); nproc_limit=$(ulimit -Hu)
  [[ $nofile == unlimited ]] && nofile=1048576
  [[ $nproc_limit == unlimited ]] && nproc_limit=4194304
  ((nofile > 20000)) && nofile=20000
  ((nproc_limit > 4096)) && nproc_limit=4096
  cat > "$NORMSERVE_CONTAINERS_DIR/containers.conf" <<CONF
[containers]
netns = "host"
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc_limit:$nproc_limit"]

[engine]
runtime = "runc"
CONF
  export CONTAINERS_CONF=$NORMSERVE_CONTAINERS_DIR/containers.conf
}

# Makes $NORMSERVE_BASE_IMAGE exist in local storage.
ensure_base_image() {
  if podman image exists "$NORMSERVE_BASE_IMAGE"; then
    log "base image $NORMSERVE_BASE_IMAGE present"
    return
  fi
  local tarball=$NORMSERVE_DEPLOY_CACHE/debian-bookworm-minbase.tar
  if [[ ! -s $tarball ]]; then
    local rootfs started
    started=$(now)
    rootfs=$(mktemp -d /tmp/normserve-rootfs.XXXXXX)
    log "debootstrap --variant=minbase bookworm from $DEBIAN_MIRROR"
    debootstrap --variant=minbase bookworm "$rootfs" "$DEBIAN_MIRROR" > "$rootfs.log" 2>&1 ||
      { tail -20 "$rootfs.log"; die "debootstrap failed (log: $rootfs.log)"; }
    # Like the registry's debian image: updates and security suites, no
    # package lists or .debs left behind.
    rm -f "$rootfs/etc/apt/sources.list"
    cat > "$rootfs/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $DEBIAN_MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${DEBIAN_MIRROR%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb \
      "$rootfs"/var/cache/apt/*.bin
    mkdir -p "$NORMSERVE_DEPLOY_CACHE"
    tar -C "$rootfs" --numeric-owner -cf "$tarball.partial" . && mv "$tarball.partial" "$tarball"
    rm -rf "$rootfs" "$rootfs.log"
    log "base rootfs made in $(($(now) - started)) s"
  fi
  log "importing $tarball as $NORMSERVE_BASE_IMAGE"
  # The registry's image sets PATH and CMD; an imported rootfs has neither.
  podman import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' "$tarball" "$NORMSERVE_BASE_IMAGE" >/dev/null
}

# Builds IMAGE from SRC_DIR's Dockerfile with the given build arguments
# (NAME=VALUE each; layers cached between runs). Prints the time it took and
# keeps it in NORMSERVE_IMAGE_BUILD_S.
build_image() {
  local src_dir=$1 image=$2 started log_file arg build_args=()
  shift 2
  for arg in "$@"; do build_args+=(--build-arg "$arg"); done
  started=$(now)
  log_file=$(mktemp /tmp/normserve-image-build.XXXXXX.log)
  log "podman build ${build_args[*]} -t $image (log: $log_file)"
  if ! podman build --pull=never --network=host --format=docker --layers --force-rm \
      "${build_args[@]}" -t "$image" -f "$src_dir/Dockerfile" "$src_dir" \
      > "$log_file" 2>&1; then
    tail -40 "$log_file"
    die "image build failed (log: $log_file)"
  fi
  NORMSERVE_IMAGE_BUILD_S=$(($(now) - started))
  log "image built in ${NORMSERVE_IMAGE_BUILD_S} s"
  rm -f "$log_file"
}

# The CPU image, tagged $NORMSERVE_IMAGE.
build_cpu_image() {
  build_image "$1" "$NORMSERVE_IMAGE" VARIANT=cpu
}

# Prints N free TCP ports on 127.0.0.1, one per line (all held open until all
# are chosen, so they differ).
free_ports() {
  "$PYTHON" - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
PY
}
