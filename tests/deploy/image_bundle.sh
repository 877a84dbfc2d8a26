#!/usr/bin/env bash
# Packs a built image's /opt/normserve with the shared libraries its binaries
# load into one .tar.gz, so the very binaries the image tests ran can run on a
# machine without gRPC, protobuf, Abseil... (e.g. a GPU machine that has only
# the driver):
#   tar xzf OUT && LD_LIBRARY_PATH=$PWD/normserve/deps normserve/bin/normserve-server
# glibc's own libraries stay out: they must match the dynamic loader of the
# machine that runs them (any glibc at least the image's 2.36 will do).
# The bundle is then checked in the bare base image (no gRPC there): every
# library resolves, and the server starts and answers health.
#   image_bundle.sh IMAGE OUT.tar.gz     (IMAGE built by gpu_image_test.sh or
#                                         container_test.sh)
set -euo pipefail

image=$1
out=$(realpath -m "$2")
src_dir=$(cd "$(dirname "$0")/../.." && pwd)
source "$src_dir/tests/deploy/lib/cpu_image.sh"
ensure_container_tools "$src_dir"
podman image exists "$image" || die "no image $image: build it first"

stage=$(mktemp -d /tmp/normserve-bundle.XXXXXX)
server=normserve-bundle-check-$$
cleanup() {
  podman rm -f -t 0 "$server" >/dev/null 2>&1 || true
  rm -rf "$stage" "$NORMSERVE_CONTAINERS_DIR"
}
trap cleanup EXIT

# Run in the image (as root, to write the mounted stage): its ldd sees the
# libraries exactly as the image's binaries load them.
cat > "$stage/collect.sh" <<'SH'
set -eu
cp -a /opt/normserve /stage/normserve
mkdir /stage/normserve/deps
ldd /opt/normserve/bin/* | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
while read -r library; do
  case $library in
    /opt/normserve/*) continue ;;
    */libc.so.*|*/libm.so.*|*/libdl.so.*|*/libpthread.so.*|*/librt.so.*|*/libresolv.so.*|*/ld-linux*)
      continue ;;
  esac
  cp -L "$library" /stage/normserve/deps/
done
SH
podman run --rm --no-healthcheck --user 0 -v "$stage:/stage" "$image" sh /stage/collect.sh
tar -C "$stage" -czf "$out" normserve
log "bundle $out: $(du -h "$out" | cut -f1) ($(find "$stage/normserve/deps" -type f | wc -l) libraries in deps/)"

# --- the bundle in the bare base image ---
check() {
  podman run --rm --no-healthcheck --network=host -v "$stage/normserve:/b:ro" \
    -e LD_LIBRARY_PATH=/b/deps "$NORMSERVE_BASE_IMAGE" "$@"
}
unresolved=$(check sh -c 'ldd /b/bin/*' | grep "not found" || true)
[[ -z $unresolved ]] || die "unresolved libraries in $NORMSERVE_BASE_IMAGE: $unresolved"
port=$(free_ports 1)
podman run -d --name "$server" --no-healthcheck --network=host -v "$stage/normserve:/b:ro" \
  -e LD_LIBRARY_PATH=/b/deps "$NORMSERVE_BASE_IMAGE" \
  /b/bin/normserve-server --address="127.0.0.1:$port" --metrics_address= >/dev/null
deadline=$(($(now) + 30))
until check /b/bin/normserve-cli --target="127.0.0.1:$port" health >/dev/null 2>&1; do
  (($(now) < deadline)) || { podman logs "$server" | tail -20; die "bundled server not SERVING"; }
  sleep 1
done
log "PASS: the bundled server serves in $NORMSERVE_BASE_IMAGE ($(podman logs "$server" 2>&1 |
  grep -o 'backend: .*' | head -1))"
