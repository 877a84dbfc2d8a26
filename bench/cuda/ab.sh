#!/usr/bin/env bash
# A/B on the GPU in one device call: variants built side by side (base = the kernels in
# .carry/base/kernels/cuda, e.g. `git archive <commit> kernels/cuda | tar x -C .carry/base`;
# new = this tree; new-<v> = this tree plus .carry/variants/<v>.patch for each v in
# VARIANTS), the CUDA suite on `new`, then every variant's bench in two alternating
# rounds, the GPU's clocks sampled meanwhile (bench/cuda/clock_watch.sh: a THROTTLED line means
# the numbers are not comparable). Results: $OUT/ab.tgz (JSON lines; bench/cuda/ab_table.py makes
# the table).
# Carry .carry and .devdeps (git-ignored).
#   OUT=$OUT VARIANTS="a b" SHAPES=32768x4096,1x4096 [OPS=rms_fwd,ln_fwd] bash bench/cuda/ab.sh
# (OPS_<dtype> / SHAPES_<dtype>, e.g. OPS_fp32, override OPS / SHAPES for that dtype.)
# BENCH_ARGS: more bench flags, e.g. "--stats 1". CMAKE_ARGS: more configure flags for every
# tree, e.g. "-DCMAKE_CUDA_ARCHITECTURES=90-real" (SASS only: about half the build).
# TEST_FILTER: the suite on `new` before the bench (TEST=0: none); TEST_FILTERS: filters run in
# parallel after it (see the end).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.devdeps/lib/x86_64-linux-gnu
REPO=$PWD; T0=$SECONDS; stamp() { echo "== $1 at +$((SECONDS - T0))s"; }
VARIANTS=${VARIANTS:-}
SHAPES=${SHAPES:-32768x4096,16384x8192,8192x16384,65536x1024,4096x5000,4096x4096,256x4096,1x4096}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mk() {  # name [patch]
  local dir=/tmp/v/$1; mkdir -p $dir
  tar -C $REPO --exclude='./build*' --exclude=./.git --exclude=./.carry -cf - . | tar -C $dir -xf -
  if [[ $1 == base ]]; then rm -rf $dir/kernels/cuda && cp -r $REPO/.carry/base/kernels/cuda $dir/kernels/cuda; fi
  if [[ -n ${2:-} ]]; then (cd $dir && patch -p1 -s < $REPO/.carry/variants/$2.patch) || echo "PATCH FAILED $2"; fi
  local tgt="normserve_cuda_bench normserve_peer_shim"; [[ $1 == new && ( ${TEST:-1} == 1 || -n ${TEST_FILTERS:-} ) ]] && tgt="$tgt normserve_kernels_test"
  (cd $dir && timeout 400 cmake -S . -B b -G Ninja -DNORMSERVE_KERNELS_ONLY=ON -DCMAKE_PREFIX_PATH=$REPO/.devdeps \
     -DNORMSERVE_CUDA_RESOURCE_USAGE=ON ${CMAKE_ARGS:-} > build.log 2>&1 && timeout 400 cmake --build b -j8 --target $tgt >> build.log 2>&1) \
     || { echo "BUILD FAILED $1"; grep -E "error" $dir/build.log | head; tail -5 $dir/build.log; }
}
stamp build
# NO_BASE=1: no base tree (e.g. when the base is this tree's commit).
names=(new); mk new &
if [[ ${NO_BASE:-0} != 1 ]]; then names=(base new); mk base & fi
for v in $VARIANTS; do names+=(new-$v); mk new-$v $v & done
wait
for n in "${names[@]}"; do cp /tmp/v/$n/build.log "$OUT/build_$n.log" 2>/dev/null; done
if [[ ${TEST:-1} == 1 ]]; then
  stamp test
  # Line-buffered and per test, so a suite cut off by the timeout still says where it was.
  timeout ${TEST_TIMEOUT:-450} stdbuf -oL /tmp/v/new/b/tests/kernels/normserve_kernels_test \
    --gtest_filter="${TEST_FILTER:-*cuda*}" > "$OUT/tests.log" 2>&1
  echo "suite rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$OUT/tests.log" | head -20
fi
# BEFORE_BENCH: a command run first, e.g. one that waits for tests started beside the build.
eval "${BEFORE_BENCH:-}"
stamp bench
watch=$(bash "$REPO/bench/cuda/clock_watch.sh" start "$OUT/clocks.csv")
for r in a b; do
  for n in "${names[@]}"; do
    B=/tmp/v/$n/b/bench/cuda/normserve_cuda_bench; [[ -x $B ]] || continue
    for dt in ${DTYPES:-bf16 fp32}; do
      ops_of=OPS_$dt; shapes_of=SHAPES_$dt; ops=${!ops_of:-${OPS:-}}
      timeout 200 $B --dtype $dt --shapes ${!shapes_of:-$SHAPES} --reps ${REPS:-100} ${ops:+--ops $ops} ${BENCH_ARGS:-} --json "$OUT/ab_${n}_${dt}_$r.jsonl" > /dev/null 2>"$OUT/err_${n}_${dt}_$r.txt" || echo "bench $n $dt $r failed"
    done
  done
done
kill "$watch" 2>/dev/null; bash "$REPO/bench/cuda/clock_watch.sh" summary "$OUT/clocks.csv"
# TEST_FILTERS (space-separated gtest filters): `new`'s tests after the bench, in parallel
# processes (with TEST=0 the bench runs right after the build).
if [[ -n ${TEST_FILTERS:-} ]]; then
  stamp "parallel tests"
  i=0
  for f in $TEST_FILTERS; do
    timeout ${TEST_TIMEOUT:-450} stdbuf -oL /tmp/v/new/b/tests/kernels/normserve_kernels_test \
      --gtest_filter="$f" > "$OUT/tests_$i.log" 2>&1 &
    i=$((i + 1))
  done
  wait
  i=0
  for f in $TEST_FILTERS; do
    echo "-- $f: $(grep -c '^\[       OK' "$OUT/tests_$i.log") OK, $(grep -c '^\[  FAILED  \].*(' "$OUT/tests_$i.log") FAILED"
    i=$((i + 1))
  done
fi
stamp done
cd "$OUT" && cat ab_*.jsonl | wc -l && tar czf ab.tgz ab_*.jsonl && tar czf logs.tgz *.log err_*.txt clocks.csv && rm -f *.log err_*.txt clocks.csv ab_*.jsonl
