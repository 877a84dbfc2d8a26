#!/usr/bin/env bash
# The deployment manifests render and hold what they promise, and the CPU
# Deployment runs: `kubectl kustomize` renders deploy/k8s/base (GPU) and
# deploy/k8s/overlays/cpu, lib/check_manifests.py checks both renders and
# deploy/compose/docker-compose.yml, then `podman kube play --network host`
# starts the CPU render (with the image of container_test.sh, on free loopback
# ports) and the CLI from the image gets SERVING from it; `podman kube down`
# removes it.
#   k8s_test.sh [SRC_DIR]     (default: the repository holding this file)
#
# Without a kubectl of 1.21 or later (Debian 12 ships 1.20, whose kustomize
# v2.0.3 cannot read these kustomizations) lib/kustomize_lite.py renders
# instead; with one, the two renders must agree.
set -euo pipefail

src_dir=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
lib=$(cd "$(dirname "$0")/lib" && pwd)
source "$lib/cpu_image.sh"
source "$lib/image_checks.sh"
test_started=$(now)

work=$(mktemp -d /tmp/normserve-k8s-test.XXXXXX)
play_file=$work/play.yaml
cleanup() {
  if [[ -s $play_file ]]; then podman kube down "$play_file" >/dev/null 2>&1 || true; fi
  rm -rf "$work" "${NORMSERVE_CONTAINERS_DIR:-}"
}
trap cleanup EXIT

# --- render and check ---
kubectl=${KUBECTL:-kubectl}  # KUBECTL=false tries the fallback
kubectl_minor=$("$kubectl" version --client -o json 2>/dev/null |
  "$PYTHON" -c 'import json, sys; print(int(json.load(sys.stdin)["clientVersion"]["minor"].rstrip("+")))' \
  2>/dev/null) || kubectl_minor=0
for flavour in base overlays/cpu; do
  out=$work/${flavour##*/}.yaml
  "$PYTHON" "$lib/kustomize_lite.py" "$src_dir/deploy/k8s/$flavour" > "$out.lite"
  if ((kubectl_minor >= 21)); then
    "$kubectl" kustomize "$src_dir/deploy/k8s/$flavour" > "$out"
    "$PYTHON" - "$out" "$out.lite" <<'PY' || die "kustomize_lite.py and kubectl disagree on $flavour"
import sys, yaml
key = lambda d: (d["kind"], d["metadata"]["name"])
kubectl, lite = (sorted((d for d in yaml.safe_load_all(open(p)) if d), key=key) for p in sys.argv[1:])
sys.exit(kubectl != lite)
PY
  else
    mv "$out.lite" "$out"
  fi
done
if ((kubectl_minor >= 21)); then
  log "rendered with kubectl kustomize (client 1.$kubectl_minor); kustomize_lite.py agrees"
else
  log "no kubectl >= 1.21: rendered with kustomize_lite.py"
fi
"$PYTHON" "$lib/check_manifests.py" k8s gpu "$work/base.yaml"
"$PYTHON" "$lib/check_manifests.py" k8s cpu "$work/cpu.yaml"
"$PYTHON" "$lib/check_manifests.py" compose "$src_dir/deploy/compose/docker-compose.yml"
if command -v docker-compose >/dev/null; then
  docker-compose -f "$src_dir/deploy/compose/docker-compose.yml" config -q
fi
log "manifests check out"

# --- the CPU Deployment under podman kube play ---
ensure_container_tools "$src_dir"
ensure_base_image
build_cpu_image "$src_dir"  # reuses container_test.sh's layers when run after it

mapfile -t ports < <(free_ports 2)
grpc_port=${ports[0]} metrics_port=${ports[1]}
name=normserve-kube-test-$$
# The render, made playable here: this test's image and name, one replica,
# loopback ports (podman's host network has no port mappings, so the
# containerPorts go; the probes follow the address).
"$PYTHON" - "$work/cpu.yaml" "$play_file" "$NORMSERVE_IMAGE" "$name" "$grpc_port" \
  "$metrics_port" <<'PY'
import sys, yaml
src, dst, image, name, grpc_port, metrics_port = sys.argv[1:]
docs = [d for d in yaml.safe_load_all(open(src)) if d]
played = []
for doc in docs:
    if doc["kind"] == "ConfigMap":
        doc["data"]["NORMSERVE_ADDRESS"] = f"127.0.0.1:{grpc_port}"
        doc["data"]["NORMSERVE_METRICS_ADDRESS"] = f"127.0.0.1:{metrics_port}"
        played.append(doc)
    elif doc["kind"] == "Deployment":
        doc["metadata"]["name"] = name
        doc["spec"]["replicas"] = 1
        container = doc["spec"]["template"]["spec"]["containers"][0]
        container["image"] = image
        container.pop("ports", None)
        for probe in ("readinessProbe", "livenessProbe"):
            container[probe]["grpc"]["port"] = int(grpc_port)
        played.append(doc)
yaml.safe_dump_all(played, open(dst, "w"), sort_keys=False)
PY
log "podman kube play --network host (gRPC 127.0.0.1:$grpc_port)"
podman kube play --network host "$play_file" >/dev/null
pod=$name-pod-0
container=$pod-normserve

wait_serving "$container" "$NORMSERVE_IMAGE" "$grpc_port" "$work"
log "SERVING from the played Deployment"

# The pod's settings reached the container: ConfigMap env, user, read-only root.
cmdline=$(podman exec "$container" cat /proc/1/cmdline | tr '\0' ' ')
[[ $cmdline == *"--address=127.0.0.1:$grpc_port"* && $cmdline == *"--backend=cpu"* ]] ||
  die "server flags '$cmdline' miss the ConfigMap's"
[[ $(podman exec "$container" id -u) == 10001 ]] || die "container does not run as 10001"
if podman exec "$container" touch /probe-write 2>/dev/null; then
  die "root filesystem is writable"
fi
podman exec "$container" touch /tmp/probe-write || die "/tmp (emptyDir) is not writable"

podman kube down "$play_file" >/dev/null
if podman pod exists "$pod"; then die "podman kube down left pod $pod"; fi
log "PASS: k8s test took $(($(now) - test_started)) s"
