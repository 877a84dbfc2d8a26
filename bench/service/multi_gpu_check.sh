#!/usr/bin/env bash
# Runs on a machine with several GPUs, after pack_for_gpu.sh: the server with
# --backend=cuda must open one backend per visible GPU, keep every GPU busy
# under load, and pass the integration tests. Output goes to $OUT.
set -uo pipefail
lib=$PWD/.carry/lib
ours() { LD_LIBRARY_PATH=$lib "$@"; }
out=${OUT:-/tmp/multi-gpu}
mkdir -p "$out"
nvidia-smi --query-gpu=index,name --format=csv,noheader | tee "$out/gpus.txt"
ours .carry/bin/normserve-server --address=127.0.0.1:50051 --metrics_address=127.0.0.1:9464 \
  --backend=cuda > "$out/server.log" 2>&1 &
server=$!
sleep 3
ours .carry/bin/normserve-bench --target=127.0.0.1:50051 --ops=rms_fwd,rms_bwd --shape=64x4096 \
  --dtype=bf16 --concurrency=64 --channels=4 --duration=6s --warmup=1s --progress=false \
  --json_out="$out/bench.json" 2>&1 | tail -3 &
bench=$!
sleep 4
# Which GPUs hold the server's process while it is under load.
nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv | tee "$out/compute_apps.txt"
nvidia-smi --query-gpu=index,uuid,utilization.gpu --format=csv | tee "$out/gpu_util.txt"
wait $bench
kill -TERM $server; wait $server
grep -E "backend:|serving" "$out/server.log"
echo "== integration tests, CUDA backend on every GPU"
NORMSERVE_SERVER_BINARY=$PWD/.carry/bin/normserve-server NORMSERVE_TEST_BACKEND=cuda \
  ours .carry/bin/normserve_server_test 2>&1 | tail -3 | tee "$out/server_test.log"
