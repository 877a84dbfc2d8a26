#!/usr/bin/env bash
# One device call, repository root: the peers and ours interleaved in one process
# (bench/cuda/interleaved.py) over $CELLS ("op:dtype:MxN ..."; default: every op of
# ../shared/perf/README.md's table x its 8 shapes x bf16 and fp32, 96 cells).
# The call before it, on the same warm machine, carried .quack_a and ran
# `mkdir -p /tmp/stash && cp .quack_a/* /tmp/stash/` (bench/cuda/make_peer_carry.sh makes the
# folders). Carry here: .quack_b .devdeps .whl .peers
#   OUT=$OUT [CELLS="rms_fwd:bf16:4096x4096 ..."] bash bench/cuda/cells_call.sh
# NCU="ncu's section / metric arguments": no timing; ncu's report of PROFILE_CALLS calls
# (default 1) of each peer per cell in $OUT/ncu.txt (with "--csv --metrics
# gpu__time_duration.sum": bench/cuda/ncu_cells.py ncu.txt cells.err, the kernels' durations).
# Then: python3 bench/cuda/interleaved.py --best|--table interleaved.json
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
T0=$SECONDS; stamp() { echo "== $1 at +$((SECONDS - T0))s"; }
if [[ -z ${CELLS:-} ]]; then
  for dt in bf16 fp32; do
    for op in rms_fwd ln_fwd add_rms_fwd rms_bwd ln_bwd add_rms_bwd; do
      for s in 32768x4096 16384x8192 8192x16384 65536x1024 4096x5000 4096x4096 256x4096 1x4096; do
        CELLS="${CELLS:-} $op:$dt:$s"
      done
    done
  done
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
stamp unpack
STEPS=unpack OUT=/tmp/unpack_out bash bench/cuda/peers_call.sh > "$OUT/unpack.log" 2>&1
tail -3 "$OUT/unpack.log"
stamp build
export LD_LIBRARY_PATH=$PWD/.devdeps/lib/x86_64-linux-gnu
(cmake -S . -B build-gpu -G Ninja -DNORMSERVE_KERNELS_ONLY=ON -DCMAKE_PREFIX_PATH="$PWD/.devdeps" &&
  cmake --build build-gpu -j16 --target normserve_peer_shim) > "$OUT/build.log" 2>&1 ||
  { tail -20 "$OUT/build.log"; exit 1; }
stamp cells
export PYTHONPATH=$PWD/.peers:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
if [[ -n ${NCU:-} ]]; then  # each peer's call profiled once, in the order cells.err lists
  # shellcheck disable=SC2086  # NCU and CELLS are lists
  PROFILE=1 FI_NORM_SO=$PWD/.peers/fi_norm.so timeout "${CELLS_TIMEOUT:-450}" \
    ncu --profile-from-start off --clock-control none $NCU \
    python3 bench/cuda/interleaved.py build-gpu/bench/cuda/libnormserve_peer_shim.so $CELLS \
    > "$OUT/ncu.txt" 2> "$OUT/cells.err"
  echo "ncu rc=$?"; grep PROFILE "$OUT/cells.err"
  stamp "done"; (cd "$OUT" && tar czf logs.tgz ./*.log ./*.err; rm -f ./*.log); exit 0
fi
watch=$(bash bench/cuda/clock_watch.sh start "$OUT/clocks.csv")
# shellcheck disable=SC2086  # CELLS is a list
FI_NORM_SO=$PWD/.peers/fi_norm.so OUT=$OUT timeout "${CELLS_TIMEOUT:-450}" \
  python3 bench/cuda/interleaved.py build-gpu/bench/cuda/libnormserve_peer_shim.so $CELLS \
  > "$OUT/cells.jsonl" 2> "$OUT/cells.err"
echo "cells rc=$? rows=$(grep -c '"peer"' "$OUT/cells.jsonl")"
grep -E "SKIP|Error" "$OUT/cells.err" | cut -c1-300 | head
kill "$watch" 2>/dev/null; bash bench/cuda/clock_watch.sh summary "$OUT/clocks.csv"
# Cut off by the timeout: interleaved.json from the rows printed so far.
[[ -f $OUT/interleaved.json ]] || python3 -c "
import json
rows = [json.loads(l) for l in open('$OUT/cells.jsonl') if l.startswith('{')]
json.dump(rows, open('$OUT/interleaved.json', 'w'))"
stamp "done"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err clocks.csv 2>/dev/null; rm -f ./*.log ./*.err clocks.csv)
