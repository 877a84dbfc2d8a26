#!/usr/bin/env bash
# The CPU image builds without a Docker daemon and serves: the server runs in
# the image on a free loopback port (host network), and the CLI from the same
# image answers health and a LayerNorm/RMSNorm forward that matches a NumPy
# float64 reference. Also checks the image's contract: non-root user, exposed
# ports, HEALTHCHECK, NORMSERVE_* variables reaching the server's flags, and
# SIGTERM ending the server with exit status 0.
#   container_test.sh [SRC_DIR]     (default: the repository holding this file)
set -euo pipefail

src_dir=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
source "$(dirname "$0")/lib/cpu_image.sh"
source "$(dirname "$0")/lib/image_checks.sh"
test_started=$(now)

ensure_container_tools "$src_dir"
base_started=$(now)
ensure_base_image
log "base image ready in $(($(now) - base_started)) s"
build_cpu_image "$src_dir"

work=$(mktemp -d /tmp/normserve-container-test.XXXXXX)
chmod 0777 "$work"  # the image's user (uid 10001) writes its outputs here
server=normserve-container-test-$$
cleanup() {
  podman rm -f -t 0 "$server" >/dev/null 2>&1 || true
  rm -rf "$work" "$NORMSERVE_CONTAINERS_DIR"
}
trap cleanup EXIT

check_image_config "$NORMSERVE_IMAGE"

# --- the server in the image ---
mapfile -t ports < <(free_ports 2)
grpc_port=${ports[0]} metrics_port=${ports[1]}
start_server "$server" "$NORMSERVE_IMAGE" "$grpc_port" "$metrics_port" \
  -e NORMSERVE_MAX_BATCH_ROWS=512 -- --max_queue_delay_us=100
wait_serving "$server" "$NORMSERVE_IMAGE" "$grpc_port" "$work"
podman healthcheck run "$server" || die "the image's HEALTHCHECK reports unhealthy"

# The environment reached the server's flags; the container's argument came
# last, so it wins over them.
cmdline=$(podman exec "$server" cat /proc/1/cmdline | tr '\0' ' ')
for flag in --address=127.0.0.1:$grpc_port --backend=cpu --max_batch_rows=512 \
    --cpu_threads=2; do
  [[ " $cmdline " == *" $flag "* ]] || die "server command line '$cmdline' lacks $flag"
done
[[ $cmdline == *" --max_queue_delay_us=100 " ]] ||
  die "server command line '$cmdline' does not end with the container's argument"
check_non_root "$server"

check_forward "$NORMSERVE_IMAGE" "$grpc_port" "$work"
check_metrics "$metrics_port"
stop_cleanly "$server"

log "PASS: image build ${NORMSERVE_IMAGE_BUILD_S} s, whole test $(($(now) - test_started)) s"
