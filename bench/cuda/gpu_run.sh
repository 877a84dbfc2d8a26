#!/usr/bin/env bash
# One device call: build (kernels only, deps from .devdeps), the kernel suite on
# the CUDA backend, our benchmark, then compute-sanitizer on small shapes. Logs
# and JSON land in $OUT. Carry: .devdeps. (The peers beside our bench:
# bench/cuda/peers_call.sh.)
#   STEPS="build test bench sanitize" bench/cuda/gpu_run.sh
set -uo pipefail
OUT=${OUT:-/tmp/normserve-out}
mkdir -p "$OUT"
STEPS=${STEPS:-build test bench sanitize}
has() { [[ " $STEPS " == *" $1 "* ]]; }
export LD_LIBRARY_PATH=$PWD/.devdeps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
BUILD=${BUILD:-build-gpu}
T0=$SECONDS
stamp() { echo "== $1 at +$((SECONDS - T0))s"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv | tee "$OUT/device.txt"
if has build; then
  stamp build
  cmake -S . -B "$BUILD" -G Ninja -DNORMSERVE_KERNELS_ONLY=ON -DCMAKE_PREFIX_PATH="$PWD/.devdeps" \
    -DNORMSERVE_CUDA_RESOURCE_USAGE=ON > "$OUT/build.log" 2>&1 &&
    cmake --build "$BUILD" -j16 >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  grep -E "warning|error" "$OUT/build.log" | grep -v "^ptxas info" | head -20
fi
TEST=$BUILD/tests/kernels/normserve_kernels_test
if has test; then
  stamp test
  "$TEST" --gtest_filter='*cuda*' --gtest_brief=1 > "$OUT/tests.log" 2>&1
  echo "kernel suite (cuda) rc=$?"; tail -15 "$OUT/tests.log"
  # Every one-block backward launch against its chunk plan (skipped without a GPU, so only here).
  "$BUILD/tests/kernels/normserve_stage_one_fit_test" --gtest_brief=1 > "$OUT/fit.log" 2>&1
  echo "stage-one fit rc=$?"; tail -5 "$OUT/fit.log"
fi
if has bench; then
  stamp bench
  for dt in bf16 fp32; do
    "$BUILD/bench/cuda/normserve_cuda_bench" --dtype $dt --reps ${REPS:-100} \
      --json "$OUT/ours_$dt.jsonl" 2>&1 | tee "$OUT/ours_$dt.md"
  done
fi
if has ncu; then
  stamp ncu
  ncu --kernel-name regex:BackwardKernel --launch-count 1 --section SpeedOfLight \
    --section Occupancy --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis \
    "$BUILD/bench/cuda/normserve_cuda_bench" --dtype bf16 --shapes 32768x4096 --ops rms_bwd \
    --reps 1 > "$OUT/ncu_bwd.txt" 2>&1
  grep -E "Throughput|Registers|Achieved Occupancy|Theoretical Occupancy|Block Limit|Stall|Local|Duration|Shared Memory Configuration Size|Dynamic Shared" "$OUT/ncu_bwd.txt" | head -40
fi
if has sanitize; then
  stamp sanitize
  small='*cuda*_d1:*cuda*_d7:*cuda*_d127:*cuda*_d1000:*cuda*_d4096:*Validation*cuda*:*Property*cuda*'
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 "$TEST" --gtest_filter="$small" \
      --gtest_brief=1 > "$OUT/sanitize_$tool.log" 2>&1
    echo "sanitizer $tool rc=$?"; grep -E "SUMMARY|PASSED|FAILED" "$OUT/sanitize_$tool.log" | tail -4
  done
fi
stamp done
# At most 8 files come back: keep the tables and JSON, bundle the logs.
(cd "$OUT" && tar czf logs.tgz --remove-files *.log *.txt 2>/dev/null)
ls "$OUT"
