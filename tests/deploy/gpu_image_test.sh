#!/usr/bin/env bash
# The GPU image (VARIANT=gpu) builds and serves on this GPU-less machine. Its
# bases are local stand-ins (lib/cuda_stand_in.sh: Debian 12 plus this
# machine's CUDA toolkit pieces), not NVIDIA's images, which cannot be pulled
# here. Checks: the installed server carries sm_90 cubins and compute_90 PTX
# and does not load a shared cudart; with the image's default backend (auto) it
# starts on the CPU since no GPU is visible, answers health and a
# LayerNorm/RMSNorm forward that matches NumPy in float64; the image's user,
# ports and HEALTHCHECK; non-root; SIGTERM ends the server with exit status 0.
#   gpu_image_test.sh [SRC_DIR]     (default: the repository holding this file)
# Exits 77 (ctest: skipped) without a CUDA toolkit on this machine.
set -euo pipefail

src_dir=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
lib=$(cd "$(dirname "$0")/lib" && pwd)
source "$lib/cpu_image.sh"
source "$lib/image_checks.sh"
source "$lib/cuda_stand_in.sh"
test_started=$(now)
gpu_image=${NORMSERVE_GPU_IMAGE:-localhost/normserve:gpu}

if [[ ! -x $NORMSERVE_CUDA_HOME/bin/nvcc ]]; then
  echo "SKIP: no CUDA toolkit at $NORMSERVE_CUDA_HOME (the stand-in build base copies it)"
  exit 77
fi

ensure_container_tools "$src_dir"
ensure_base_image
ensure_cuda_stand_ins
build_image "$src_dir" "$gpu_image" VARIANT=gpu \
  GPU_BUILD_IMAGE="$NORMSERVE_CUDA_DEVEL_IMAGE" GPU_RUN_IMAGE="$NORMSERVE_CUDA_RUNTIME_IMAGE"

work=$(mktemp -d /tmp/normserve-gpu-image-test.XXXXXX)
chmod 0777 "$work"  # the image's user (uid 10001) writes its outputs here
server=normserve-gpu-image-test-$$
cleanup() {
  podman rm -f -t 0 "$server" "$server-copy" >/dev/null 2>&1 || true
  rm -rf "$work" "$NORMSERVE_CONTAINERS_DIR"
}
trap cleanup EXIT

check_image_config "$gpu_image"

# --- the CUDA kernels in the installed server ---
podman create --no-healthcheck --name "$server-copy" "$gpu_image" >/dev/null
podman cp "$server-copy:/opt/normserve/bin/normserve-server" "$work/normserve-server"
podman rm "$server-copy" >/dev/null
device_code=$("$PYTHON" "$lib/fatbin_entries.py" "$work/normserve-server") ||
  die "the server has no CUDA device code"
log "device code in normserve-server: $(echo "$device_code" | paste -sd, -)"
for wanted in "sm_90 cubin" "compute_90 ptx"; do
  grep -q "^$wanted " <<<"$device_code" || die "the server has no $wanted"
done
# cudart is linked statically: only the driver (libcuda) is loaded at run time.
# (Outputs are captured before grep -q: with pipefail, grep quitting at the
# first match can fail the writer of a pipe with SIGPIPE.)
dynamic_section=$(readelf -d "$work/normserve-server")
! grep -q 'NEEDED.*libcudart' <<<"$dynamic_section" || die "the server loads a shared libcudart"

# --- the server in the image, default backend, no GPU ---
mapfile -t ports < <(free_ports 2)
grpc_port=${ports[0]} metrics_port=${ports[1]}
start_server "$server" "$gpu_image" "$grpc_port" "$metrics_port"
wait_serving "$server" "$gpu_image" "$grpc_port" "$work"
podman healthcheck run "$server" || die "the image's HEALTHCHECK reports unhealthy"

cmdline=$(podman exec "$server" cat /proc/1/cmdline | tr '\0' ' ')
[[ " $cmdline " == *" --backend=auto "* ]] || die "server command line '$cmdline' lacks --backend=auto"
# main.cc logs "backend: <Describe()>" per backend: "cpu" when CUDA found no device.
server_log=$(podman logs "$server" 2>&1)
grep -q "backend: cpu" <<<"$server_log" ||
  { tail -20 <<<"$server_log"; die "the server did not fall back to the CPU backend"; }
log "backend auto without a GPU: CPU fallback"
check_non_root "$server"

check_forward "$gpu_image" "$grpc_port" "$work"
check_metrics "$metrics_port"
stop_cleanly "$server"

log "PASS: image build ${NORMSERVE_IMAGE_BUILD_S} s, whole test $(($(now) - test_started)) s"
