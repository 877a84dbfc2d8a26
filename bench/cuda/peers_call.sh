#!/usr/bin/env bash
# One device call, repository root: Quack, torch, Liger and FlashInfer beside our full bench.
# Folders from bench/cuda/make_peer_carry.sh; the call before it, on the same warm machine,
# carried .quack_a and ran `mkdir -p /tmp/stash && cp .quack_a/* /tmp/stash/`. Carry here:
#   .quack_b .devdeps .whl .peers      OUT=$OUT bash bench/cuda/peers_call.sh
# (a) Quack into /tmp/site: the cu13 parts (/tmp/stash, .quack_b) checked, joined, unpacked,
#     then every other wheel (/tmp/stash, .quack_b, .whl) extracted over it;
# (b) our build + full bench (bench/cuda/gpu_run.sh, STEPS="build bench");
# (c) peers: peers_bench.py quack torch liger flashinfer (bf16), quack torch liger (fp32);
#     fused_bwd_peers.py torch liger quack (bf16, fp32);
# (d) ours again through bench/cuda/ours_do_bench.py (the peers' do_bench, ctypes shim);
# (e) $OUT keeps results.tgz (ours_{bf16,fp32}.jsonl, peers_*.json, ours_do_bench_*.json) and
#     logs.tgz (with w/clocks.csv, bench/cuda/clock_watch.sh): two files, as the device tool
#     brings back at most eight (round 19 lost a ninth).
# Table: tar xzf results.tgz && python3 bench/cuda/compare.py ours_bf16.jsonl ours_fp32.jsonl --
#     peers_*.json ours_do_bench_*.json
# Every step runs under `timeout`, capped by a deadline of TOTAL (540) s for the whole call.
# STEPS="unpack ours peers fused dobench" selects steps; STASH, QB, SITE override the folders.
set -uo pipefail
ROOT=$PWD
OUT=${OUT:-/tmp/normserve-out}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
W=$OUT/w                        # logs; bundled into logs.tgz at the end
mkdir -p "$W"
STASH=${STASH:-/tmp/stash}
QB=${QB:-$ROOT/.quack_b}
SITE=${SITE:-/tmp/site}
STEPS=${STEPS:-unpack ours peers fused dobench}
TOTAL=${TOTAL:-540}
RESERVE=15                      # left for the final tar
has() { [[ " $STEPS " == *" $1 "* ]]; }
T0=$SECONDS
stamp() { echo "== $1 at +$((SECONDS - T0))s ($(date -u +%H:%M:%S))"; }
# run_step NAME CAP LOG cmd...: timeout min(CAP, what is left before the deadline), output to LOG
run_step() {
  local name=$1 cap=$2 log=$3; shift 3
  local left=$((TOTAL - RESERVE - (SECONDS - T0)))
  (( cap > left )) && cap=$left
  if (( cap < 5 )); then echo "== $name skipped: no time left" | tee "$log"; return 124; fi
  stamp "$name (timeout ${cap}s)"
  timeout -k 5 "$cap" "$@" > "$log" 2>&1
  local rc=$?
  (( rc == 124 || rc == 137 )) && echo "!! $name TIMED OUT after ${cap}s"
  (( rc != 0 )) && echo "!! $name rc=$rc"
  return $rc
}

export PYTHONPATH=$SITE:$SITE/nvidia_cutlass_dsl/dsl_packages${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1

# (a) ------------------------------------------------------------------------------------------
unpack() {
  set -o pipefail
  mkdir -p "$SITE"
  local parts=("$STASH"/cu13.tar.xz.part_* "$QB"/cu13.tar.xz.part_*)
  ls -la "${parts[@]}" || return 2
  if [[ -f $QB/cu13.tar.xz.sha256 ]]; then
    local want got
    want=$(cut -d' ' -f1 "$QB/cu13.tar.xz.sha256")
    got=$(cat "${parts[@]}" | sha256sum | cut -d' ' -f1)
    [[ $want == "$got" ]] || { echo "!! cu13 parts sha256 $got != $want"; return 3; }
  fi
  cat "${parts[@]}" | xz -d | tar x -C "$SITE" || return 4
  local w
  # nvidia_cutlass_dsl's halves (libs-base, libs-core, cu13) share one folder: extract, never
  # pip install --target (it skips a package folder that exists).
  for w in "$STASH"/*.whl "$QB"/*.whl "$ROOT"/.whl/*.whl; do
    [[ -f $w ]] || continue
    python3 -m zipfile -e "$w" "$SITE" || { echo "!! extract $w failed"; return 5; }
  done
  touch "$SITE/.quack_unpacked"
  du -sh "$SITE"; ls "$SITE"
}
if has unpack; then
  if [[ -f $SITE/.quack_unpacked ]]; then
    stamp "unpack: $SITE already unpacked (warm machine), skipped"
  else
    run_step unpack 120 "$W/unpack.log" \
      bash -c "$(declare -f unpack); STASH='$STASH' QB='$QB' SITE='$SITE' ROOT='$ROOT' unpack"
    echo "unpack rc=$?"; tail -5 "$W/unpack.log"
  fi
fi

# Quack import probe: visible failure, the other peers still run.
QUACK=quack
if has peers || has fused; then
  stamp "quack import probe"
  if timeout 60 python3 -c "
import sys, traceback
try:
    import cutlass, quack
    from quack.rmsnorm import rmsnorm_fwd, rmsnorm_bwd, layernorm_fwd
    print('quack', getattr(quack, '__version__', '?'), 'from', quack.__file__, 'cutlass', cutlass.__file__)
except Exception:
    traceback.print_exc(); sys.exit(1)
" > "$W/quack_import.log" 2>&1; then
    cat "$W/quack_import.log"
  else
    echo "!! Quack import FAILED (traceback tail):"; tail -25 "$W/quack_import.log"
    QUACK=""
  fi
fi

# (b) ------------------------------------------------------------------------------------------
# The GPU's clocks while ours and the peers run (THROTTLED: the table is not comparable).
watch=$(bash bench/cuda/clock_watch.sh start "$W/clocks.csv")
if has ours; then
  STEPS="build bench" OUT=$W/ours run_step "ours build+bench" 300 "$W/ours.log" \
    bash bench/cuda/gpu_run.sh
  echo "ours rc=$?"
  grep -E "^== |warning|error|rc=" "$W/ours.log" | head -20
  for dt in bf16 fp32; do
    [[ -f $W/ours/ours_$dt.jsonl ]] && mv "$W/ours/ours_$dt.jsonl" "$OUT/"
    echo "ours_$dt.jsonl: $(wc -l < "$OUT/ours_$dt.jsonl" 2>/dev/null || echo missing) rows"
  done
fi

# A peers run that timed out wrote no JSON: rebuild it from the rows it printed.
salvage() {  # salvage LOG JSON
  [[ -f $2 ]] && return 0
  python3 - "$1" "$2" <<'PY'
import json, sys
rows = []
for line in open(sys.argv[1], errors="replace"):
    if line.startswith("{"):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if "op" in r:
            rows.append(r)
if rows:
    json.dump(rows, open(sys.argv[2], "w"), indent=1)
    print(f"salvaged {len(rows)} rows into {sys.argv[2]}")
PY
}
peers_summary() {  # peers_summary LOG
  echo "  rows: $(grep -c '"gbs"' "$1") ; SKIP lines: $(grep -c '^SKIP' "$1")"
  grep '^SKIP' "$1" | cut -c1-300 | head -6
  grep -E "Error|Traceback" "$1" | grep -v '^SKIP' | head -4
}

# (c) ------------------------------------------------------------------------------------------
if has peers; then
  cd "$ROOT/.peers"
  export FI_NORM_SO=$ROOT/.peers/fi_norm.so
  set -- $QUACK torch liger flashinfer
  tag=$(IFS=_; echo "$*")
  OUT=$OUT DTYPE=bf16 run_step "peers bf16 ($*)" 150 "$W/peers_bf16.log" \
    python3 peers_bench.py "$@"
  salvage "$W/peers_bf16.log" "$OUT/peers_${tag}_bf16.json"; peers_summary "$W/peers_bf16.log"
  set -- $QUACK torch liger
  tag=$(IFS=_; echo "$*")
  OUT=$OUT DTYPE=fp32 run_step "peers fp32 ($*)" 120 "$W/peers_fp32.log" \
    python3 peers_bench.py "$@"
  salvage "$W/peers_fp32.log" "$OUT/peers_${tag}_fp32.json"; peers_summary "$W/peers_fp32.log"
  cd "$ROOT"
fi
if has fused; then
  for dt in bf16 fp32; do
    PEERS_DIR=.peers OUT=$OUT DTYPE=$dt run_step "fused_bwd peers $dt" 90 \
      "$W/peers_fused_bwd_$dt.log" python3 bench/cuda/fused_bwd_peers.py torch liger $QUACK
    salvage "$W/peers_fused_bwd_$dt.log" "$OUT/peers_fused_bwd_$dt.json"
    peers_summary "$W/peers_fused_bwd_$dt.log"
  done
fi

# Ours again, timed by the peers' harness (do_bench) through the shim the build above made.
SHIM=$ROOT/build-gpu/bench/cuda/libnormserve_peer_shim.so
if has dobench && [[ -f $SHIM ]]; then
  for dt in bf16 fp32; do
    PYTHONPATH=$ROOT/.peers OUT=$OUT run_step "ours by do_bench $dt" 90 "$W/ours_do_bench_$dt.log" \
      python3 bench/cuda/ours_do_bench.py "$SHIM" $dt
    echo "ours_do_bench_$dt.json: $(grep -c '"peer"' "$W/ours_do_bench_$dt.log") rows"
  done
fi

# (e) ------------------------------------------------------------------------------------------
kill "$watch" 2>/dev/null; bash bench/cuda/clock_watch.sh summary "$W/clocks.csv"
stamp done
(cd "$OUT" && tar czf logs.tgz w && rm -rf w &&
  tar czf results.tgz --remove-files $(ls *.json *.jsonl 2>/dev/null))
ls -la "$OUT"
