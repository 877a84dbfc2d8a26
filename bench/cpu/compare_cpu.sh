#!/usr/bin/env bash
# normserve CPU backend vs PyTorch CPU, case by case: for every (op, dtype, shape) the two
# benchmarks run back to back, so both see the same load on a shared machine; the whole sweep
# repeats ROUNDS times and cpu_table.py keeps each side's best round.
#
#   bench/cpu/compare_cpu.sh build-cpu /tmp/cmp [ROUNDS] [THREADS]   # then:
#   OPS="ln_bwd rms_bwd" bench/cpu/compare_cpu.sh ...                  # only some ops
#   /usr/bin/python3 bench/cpu/cpu_table.py --ns /tmp/cmp/ns_*.json --torch /tmp/cmp/torch_*.json
set -euo pipefail
build=${1:?build dir}
out=${2:?output dir}
rounds=${3:-3}
threads=${4:-2}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
ops=${OPS:-"ln_fwd rms_fwd add_rms_fwd rms_bwd ln_bwd"}
shapes="4096x1024 1024x4096 256x4096 1x4096 512x8192"
for round in $(seq 1 "$rounds"); do
  for dtype in fp32 bf16; do
    for op in $ops; do
      for shape in $shapes; do
        case_name="$op/$dtype/$shape"
        tag="${round}_${op}_${dtype}_${shape}"
        echo "$(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg) $case_name round $round threads $threads" >&2
        "$build/bench/cpu/normserve_cpu_bench" --threads="$threads" --benchmark_min_time=0.2 \
          --benchmark_repetitions=3 \
          --benchmark_filter="^(memcpy_same_bytes/)?${case_name}/real_time\$" \
          --benchmark_out="$out/ns_$tag.json" --benchmark_out_format=json > /dev/null
        /usr/bin/python3 "$here/torch_cpu_bench.py" --threads "$threads" --only "$case_name" \
          --json "$out/torch_$tag.json" > /dev/null
      done
    done
  done
done
