# Sourced (after cpu_image.sh) by the tests that run a built normserve image:
# the checks every flavour of the image must pass.
#
#   check_image_config IMAGE             # user 10001, ports 50051/9464, HEALTHCHECK
#   image_cli IMAGE PORT WORK ARGS...    # normserve-cli from IMAGE, WORK at /data
#   start_server SERVER IMAGE GRPC_PORT METRICS_PORT [PODMAN_ARGS...] [-- FLAGS...]
#   wait_serving SERVER IMAGE PORT WORK  # health answers SERVING within 60 s
#   check_non_root SERVER
#   check_forward IMAGE PORT WORK        # LayerNorm/RMSNorm vs NumPy float64
#   check_metrics METRICS_PORT           # /metrics has normserve_requests_total
#   stop_cleanly SERVER                  # SIGTERM: the server exits 0
#
# SERVER is a running container's name; PORT the gRPC port it listens on at
# 127.0.0.1 (host network); WORK a directory the image's user can write.

check_image_config() {
  podman image inspect "$1" | "$PYTHON" -c '
import json, sys
image = json.load(sys.stdin)[0]
config = image["Config"]
user = config.get("User")
assert user == "10001:10001", f"image user is {user!r}"
ports = set(config.get("ExposedPorts", {}))
assert {"50051/tcp", "9464/tcp"} <= ports, f"exposed ports are {sorted(ports)}"
health = image.get("Healthcheck") or config.get("Healthcheck") or {}
assert "normserve-healthcheck" in " ".join(health.get("Test", [])), f"HEALTHCHECK is {health}"
' || die "image configuration of $1"
}

# The CLI from the image, in a container of its own beside the server's.
image_cli() {
  local image=$1 port=$2 work=$3
  shift 3
  podman run --rm --network=host --no-healthcheck -v "$work:/data" "$image" \
    normserve-cli --target="127.0.0.1:$port" "$@"
}

# Starts IMAGE as container SERVER on the host network: gRPC on
# 127.0.0.1:GRPC_PORT, metrics on :METRICS_PORT, two CPU threads. No systemd
# here to time the HEALTHCHECK: --health-interval=disable keeps the check for
# `podman healthcheck run` without the timer.
#   start_server SERVER IMAGE GRPC_PORT METRICS_PORT [PODMAN_ARGS...] [-- SERVER_FLAGS...]
start_server() {
  local server=$1 image=$2 grpc_port=$3 metrics_port=$4
  shift 4
  local podman_args=()
  while (($#)) && [[ $1 != -- ]]; do
    podman_args+=("$1")
    shift
  done
  (($#)) && shift
  log "starting $image on 127.0.0.1:$grpc_port (metrics :$metrics_port)"
  podman run -d --name "$server" --network=host --health-interval=disable \
    -e NORMSERVE_ADDRESS="127.0.0.1:$grpc_port" \
    -e NORMSERVE_METRICS_ADDRESS="127.0.0.1:$metrics_port" \
    -e NORMSERVE_CPU_THREADS=2 \
    "${podman_args[@]}" "$image" "$@" >/dev/null
}

wait_serving() {
  local server=$1 image=$2 port=$3 work=$4 deadline
  deadline=$(($(now) + 60))
  until image_cli "$image" "$port" "$work" health >/dev/null 2>&1; do
    if [[ $(podman inspect --format '{{.State.Running}}' "$server") != true ]]; then
      podman logs "$server" | tail -20
      die "server container exited"
    fi
    (($(now) < deadline)) || { podman logs "$server" | tail -20; die "server not SERVING after 60 s"; }
    sleep 1
  done
  log "health: SERVING"
}

check_non_root() {
  [[ $(podman exec "$1" id -u) != 0 ]] || die "server runs as root"
}

# Forward calls checked against NumPy in float64.
check_forward() {
  local image=$1 port=$2 work=$3
  "$PYTHON" - "$work" <<'PY'
import numpy as np, sys
rng = np.random.default_rng(5)
d = sys.argv[1]
np.save(f"{d}/x.npy", (rng.standard_normal((16, 768)) * 2 + 0.5).astype("<f4"))
np.save(f"{d}/w.npy", (1 + 0.1 * rng.standard_normal(768)).astype("<f4"))
np.save(f"{d}/b.npy", (0.1 * rng.standard_normal(768)).astype("<f4"))
PY
  chmod 0666 "$work"/*.npy
  image_cli "$image" "$port" "$work" forward --norm=layer --x=/data/x.npy --weight=/data/w.npy \
    --bias=/data/b.npy --eps=1e-5 --out=/data/layer.npy
  image_cli "$image" "$port" "$work" forward --norm=rms --x=/data/x.npy --weight=/data/w.npy \
    --eps=1e-6 --out=/data/rms.npy
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
}

check_metrics() {
  "$PYTHON" - "$1" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
assert "normserve_requests_total" in text, "no normserve_requests_total on /metrics"
PY
}

# SIGTERM (podman stop): the server drains and exits 0.
stop_cleanly() {
  local server=$1 code
  podman stop -t 40 "$server" >/dev/null
  code=$(podman inspect --format '{{.State.ExitCode}}' "$server")
  [[ $code == 0 ]] || { podman logs "$server" | tail -20; die "server exited $code after SIGTERM"; }
}
