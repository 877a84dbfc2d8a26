#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, after pack_for_gpu.sh
# carried .carry/ there: the server's integration tests against the CUDA
# backend, then normserve-bench against a CUDA server: forward vs Echo (the
# transport floor, same payload sizes) at a few shapes and concurrencies,
# and the same forward against the CPU backend of that machine.
# Results (JSON per run and a log) go to $OUT.
set -uo pipefail
# Only our binaries get the carried libraries: the machine's own programs
# (nvidia-smi, curl) keep theirs.
lib=$PWD/.carry/lib
ours() { LD_LIBRARY_PATH=$lib "$@"; }
export NORMSERVE_SERVER_BINARY=$PWD/.carry/bin/normserve-server
bin=.carry/bin
out=${OUT:-/tmp/e2e}
# $OUT returns at most 8 files: per-run JSON is gathered into one file.
runs=$(mktemp -d)
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"

echo "== integration tests, CUDA backend"
NORMSERVE_TEST_BACKEND=cuda ours $bin/normserve_server_test 2>&1 | tail -25 | tee "$out/server_test.log"

run_bench() {  # backend label shape dtype concurrency ops
  local label=$1 shape=$2 dtype=$3 concurrency=$4 ops=$5
  ours $bin/normserve-bench --target=127.0.0.1:50051 --ops="$ops" --shape="$shape" --dtype="$dtype" \
    --concurrency="$concurrency" --channels=4 --duration=4s --warmup=1s --progress=false \
    --json_out="$runs/${label}_${ops}_${shape}_${dtype}_c${concurrency}.json" 2>&1 | tail -4
}

for backend in cuda cpu; do
  ours $bin/normserve-server --address=127.0.0.1:50051 --metrics_address=127.0.0.1:9464 \
    --backend=$backend --log_level=info > "$out/server_$backend.log" 2>&1 &
  server=$!
  sleep 2
  for shape in 1x4096 16x4096 256x4096; do
    for concurrency in 1 64; do
      echo "== $backend rms_fwd $shape bf16 c=$concurrency"
      run_bench $backend $shape bf16 $concurrency rms_fwd
      if [ $backend = cuda ]; then
        echo "== echo $shape bf16 c=$concurrency"
        run_bench $backend $shape bf16 $concurrency echo
      fi
    done
  done
  curl -s 127.0.0.1:9464/metrics | grep -E '^normserve_(batch_requests|batch_rows)_(sum|count)' \
    > "$out/metrics_$backend.txt"
  kill -TERM $server 2>/dev/null; wait $server
done
for run in "$runs"/*.json; do
  echo "{\"run\": \"$(basename "$run" .json)\", \"report\": $(cat "$run")}"
done > "$out/bench_runs.jsonl"
