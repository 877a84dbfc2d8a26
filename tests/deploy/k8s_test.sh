#!/usr/bin/env bash
# The deployment manifests render and hold what they promise, and the CPU
# Deployment runs: `kubectl kustomize` renders deploy/k8s/base (GPU) and
# deploy/k8s/overlays/cpu, lib/check_manifests.py checks both renders and
# deploy/compose/docker-compose.yml, then `podman kube play --network host`
# starts the CPU render (with the image of container_test.sh, on free loopback
# ports) and the CLI from the image gets SERVING from it; `podman kube down`
# removes it.
#   k8s_test.sh [SRC_DIR]     (default: the repository holding this file)
# The kustomizations use only fields kustomize v2.0.3 reads, so Debian 12's
# kubectl (1.20) renders them as newer ones do.
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
ensure_container_tools "$src_dir"  # podman, kubectl, ...
for flavour in base overlays/cpu; do
  kubectl kustomize "$src_dir/deploy/k8s/$flavour" > "$work/${flavour##*/}.yaml" \
    2> "$work/kustomize.log" || { cat "$work/kustomize.log"; die "kubectl kustomize $flavour"; }
done
log "rendered with kubectl kustomize ($(kubectl version --client 2>/dev/null | head -1 | cut -c1-72))"
"$PYTHON" "$lib/check_manifests.py" k8s gpu "$work/base.yaml"
"$PYTHON" "$lib/check_manifests.py" k8s cpu "$work/cpu.yaml"
"$PYTHON" "$lib/check_manifests.py" compose "$src_dir/deploy/compose/docker-compose.yml"
if command -v docker-compose >/dev/null; then
  docker-compose -f "$src_dir/deploy/compose/docker-compose.yml" config -q
fi
log "manifests check out"

# --- the CPU Deployment under podman kube play ---
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
