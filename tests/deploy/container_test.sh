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

# --- the image's configuration ---
podman image inspect "$NORMSERVE_IMAGE" | "$PYTHON" -c '
import json, sys
image = json.load(sys.stdin)[0]
config = image["Config"]
user = config.get("User")
assert user == "10001:10001", f"image user is {user!r}"
ports = set(config.get("ExposedPorts", {}))
assert {"50051/tcp", "9464/tcp"} <= ports, f"exposed ports are {sorted(ports)}"
health = image.get("Healthcheck") or config.get("Healthcheck") or {}
assert "normserve-healthcheck" in " ".join(health.get("Test", [])), f"HEALTHCHECK is {health}"
' || die "image configuration"

# --- the server in the image ---
mapfile -t ports < <(free_ports 2)
grpc_port=${ports[0]} metrics_port=${ports[1]}
log "starting $NORMSERVE_IMAGE on 127.0.0.1:$grpc_port (metrics :$metrics_port)"
# No systemd here to time the HEALTHCHECK: --health-interval=disable keeps the
# check for `podman healthcheck run` below without the timer.
podman run -d --name "$server" --network=host --health-interval=disable \
  -e NORMSERVE_ADDRESS="127.0.0.1:$grpc_port" \
  -e NORMSERVE_METRICS_ADDRESS="127.0.0.1:$metrics_port" \
  -e NORMSERVE_MAX_BATCH_ROWS=512 \
  -e NORMSERVE_CPU_THREADS=2 \
  "$NORMSERVE_IMAGE" --max_queue_delay_us=100 >/dev/null

# The CLI from the image, in a container of its own beside the server's.
cli() {
  podman run --rm --network=host --no-healthcheck -v "$work:/data" "$NORMSERVE_IMAGE" \
    normserve-cli --target="127.0.0.1:$grpc_port" "$@"
}

deadline=$(($(now) + 60))
until cli health >/dev/null 2>&1; do
  if [[ $(podman inspect --format '{{.State.Running}}' "$server") != true ]]; then
    podman logs "$server" | tail -20
    die "server container exited"
  fi
  (($(now) < deadline)) || { podman logs "$server" | tail -20; die "server not SERVING after 60 s"; }
  sleep 1
done
log "health: SERVING"
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
[[ $(podman exec "$server" id -u) != 0 ]] || die "server runs as root"

# --- forward calls checked against NumPy float64 ---
"$PYTHON" - "$work" <<'PY'
import numpy as np, sys
rng = np.random.default_rng(5)
d = sys.argv[1]
np.save(f"{d}/x.npy", (rng.standard_normal((16, 768)) * 2 + 0.5).astype("<f4"))
np.save(f"{d}/w.npy", (1 + 0.1 * rng.standard_normal(768)).astype("<f4"))
np.save(f"{d}/b.npy", (0.1 * rng.standard_normal(768)).astype("<f4"))
PY
chmod 0666 "$work"/*.npy
cli forward --norm=layer --x=/data/x.npy --weight=/data/w.npy --bias=/data/b.npy --eps=1e-5 \
  --out=/data/layer.npy
cli forward --norm=rms --x=/data/x.npy --weight=/data/w.npy --eps=1e-6 --out=/data/rms.npy
"$PYTHON" - "$work" <<'PY'
import numpy as np, sys
d = sys.argv[1]
x, w, b = (np.load(f"{d}/{n}.npy").astype(np.float64) for n in ("x", "w", "b"))
mean = x.mean(-1, keepdims=True)
var = ((x - mean) ** 2).mean(-1, keepdims=True)
want = {"layer": (x - mean) / np.sqrt(var + 1e-5) * w + b,
        "rms": x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w}
for name, ref in want.items():
    got = np.load(f"{d}/{name}.npy")
    assert got.dtype == np.float32 and got.shape == ref.shape, (name, got.dtype, got.shape)
    err = np.abs(got - ref).max()
    print(f"{name}: max |error| vs float64 = {err:.2e}")
    assert np.allclose(got, ref, rtol=1e-4, atol=1e-4), f"{name}: max error {err}"
PY

# --- metrics, then SIGTERM: drain and exit 0 ---
"$PYTHON" - "$metrics_port" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
assert "normserve_requests_total" in text, "no normserve_requests_total on /metrics"
PY
podman stop -t 40 "$server" >/dev/null
code=$(podman inspect --format '{{.State.ExitCode}}' "$server")
[[ $code == 0 ]] || { podman logs "$server" | tail -20; die "server exited $code after SIGTERM"; }

log "PASS: image build ${NORMSERVE_IMAGE_BUILD_S} s, whole test $(($(now) - test_started)) s"
