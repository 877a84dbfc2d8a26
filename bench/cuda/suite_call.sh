#!/usr/bin/env bash
# One device call, repository root: the kernels-only build of this tree and its CUDA tests as
# parallel filtered processes (FILTERS, space-separated gtest filters; default: the whole CUDA
# suite in seven), then optionally one bench run (BENCH: normserve_cuda_bench's arguments).
# Carry .devdeps. On an H200 (16 cores) the build takes about 165 s and the seven default
# processes 340 s, the last filter's the longest (bench/results/gpu-2026-11-30-round58.md,
# call B); ManyRowsBackwardTest's float64 reference takes about 170-190 s per 16-bit dtype, so
# those run apart (gpu-2026-11-29-round56.md, call A: five processes overran 600 s).
#   OUT=$OUT [FILTERS="*FullRows*cuda_bf16* ..."] [BENCH="--dtype bf16 --shapes 4096x4096"] \
#     bash bench/cuda/suite_call.sh
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
T0=$SECONDS; stamp() { echo "== $1 at +$((SECONDS - T0))s"; }
export LD_LIBRARY_PATH=$PWD/.devdeps/lib/x86_64-linux-gnu
FILTERS=${FILTERS:-"*Determinism*cuda_fp32* *Determinism*cuda_fp16* *Determinism*cuda_bf16*
  *Forward*cuda*:*Property*cuda*:*Validation*cuda*:*Half*cuda*
  *ManyRowsBackward*cuda_fp16* *ManyRowsBackward*cuda_bf16*
  *cuda*-*Determinism*:*Forward*:*Property*:*Validation*:*Half*:*ManyRowsBackward*cuda_fp16*:*ManyRowsBackward*cuda_bf16*"}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
stamp build
(cmake -S . -B build-gpu -G Ninja -DNORMSERVE_KERNELS_ONLY=ON -DCMAKE_PREFIX_PATH="$PWD/.devdeps" &&
  cmake --build build-gpu -j16 --target normserve_kernels_test normserve_cuda_bench) \
  > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
stamp tests
T=build-gpu/tests/kernels/normserve_kernels_test
i=0
for f in $FILTERS; do
  timeout "${SUITE_TIMEOUT:-500}" stdbuf -oL "$T" --gtest_filter="$f" > "$OUT/suite_$i.log" 2>&1 &
  i=$((i + 1))
done
wait
i=0
for f in $FILTERS; do  # a process cut off by the timeout prints no summary: count its OK lines
  echo "-- $f: $(grep -c '^\[       OK' "$OUT/suite_$i.log") OK," \
    "$(grep -c '^\[  FAILED  \].*(' "$OUT/suite_$i.log") FAILED"
  grep -E "^\[  (PASSED|FAILED) " "$OUT/suite_$i.log" | head -6
  i=$((i + 1))
done
if [[ -n ${BENCH:-} ]]; then
  stamp bench
  # shellcheck disable=SC2086  # BENCH is a list of arguments
  build-gpu/bench/cuda/normserve_cuda_bench $BENCH > "$OUT/bench.md" 2>&1
  tail -20 "$OUT/bench.md"
fi
stamp "done"
(cd "$OUT" && tar czf logs.tgz ./*.log && rm -f ./*.log)
