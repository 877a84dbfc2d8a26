#!/usr/bin/env bash
# Client-side balancing over replicas, no containers: three normserve-server
# processes on 127.0.0.1, normserve-bench with a round_robin target over all
# three for ~10 s. While all three live, each server's share of the calls (from
# its Prometheus normserve_requests_total) is within ±20% of the mean; then one
# server is killed (SIGKILL) mid-run and the load generator still counts zero
# failed requests (the client's retry policy resends on UNAVAILABLE); the two
# survivors keep serving and drain to exit 0 on SIGTERM.
#   replicas_test.sh SERVER_BINARY CLI_BINARY BENCH_BINARY
set -euo pipefail

server_bin=$1 cli_bin=$2 bench_bin=$3
PYTHON=${PYTHON:-/usr/bin/python3}
log() { echo "[$(date +%H:%M:%S)] $*"; }
die() { echo "FAIL: $*" >&2; exit 1; }

work=$(mktemp -d /tmp/normserve-replicas-test.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
show_logs() { tail -n 15 "$work"/*.log >&2 || true; }

mapfile -t ports < <("$PYTHON" - <<'PY'
import socket
socks = [socket.socket() for _ in range(6)]
for s in socks:
    s.bind(("127.0.0.1", 0))
for s in socks:
    print(s.getsockname()[1])
PY
)
grpc_ports=("${ports[@]:0:3}") metrics_ports=("${ports[@]:3:3}")

for i in 0 1 2; do
  "$server_bin" --address="127.0.0.1:${grpc_ports[i]}" \
    --metrics_address="127.0.0.1:${metrics_ports[i]}" --backend=cpu \
    > "$work/server$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do
  deadline=$((SECONDS + 30))
  until "$cli_bin" --target="127.0.0.1:${grpc_ports[i]}" health >/dev/null 2>&1; do
    kill -0 "${pids[i]}" 2>/dev/null || { show_logs; die "server $i exited"; }
    ((SECONDS < deadline)) || { show_logs; die "server $i not SERVING after 30 s"; }
    sleep 0.2
  done
done
log "three servers SERVING on ${grpc_ports[*]}"

# Calls each server has counted (all ops, all codes), one line per server.
requests_per_server() {
  "$PYTHON" - "$@" <<'PY'
import re, sys, urllib.request
for port in sys.argv[1:]:
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    except OSError:
        print(-1)
        continue
    print(int(sum(float(m.group(1)) for m in
                  re.finditer(r"^normserve_requests_total\{[^}]*\} (\S+)$", text, re.M))))
PY
}

target=$(IFS=,; echo "${grpc_ports[*]/#/127.0.0.1:}")
log "normserve-bench --target=$target for 10 s"
"$bench_bin" --target="$target" --ops=rms_fwd --shape=8x1024 --dtype=fp32 --concurrency=8 \
  --warmup=1s --duration=10s --progress=false --json_out="$work/bench.json" \
  > "$work/bench.log" 2>&1 &
bench_pid=$!
pids+=("$bench_pid")

# Wait for traffic to reach all three, then measure the spread over ~3 s.
deadline=$((SECONDS + 15))
while :; do
  mapfile -t before < <(requests_per_server "${metrics_ports[@]}")
  ((before[0] > 0 && before[1] > 0 && before[2] > 0)) && break
  kill -0 "$bench_pid" 2>/dev/null || { show_logs; die "normserve-bench exited early"; }
  ((SECONDS < deadline)) || { show_logs; die "no traffic on every server (${before[*]})"; }
  sleep 0.2
done
sleep 3
mapfile -t after < <(requests_per_server "${metrics_ports[@]}")
"$PYTHON" - "${before[@]}" "${after[@]}" <<'PY' || die "load not spread within ±20%"
import sys
counts = list(map(int, sys.argv[1:]))
delta = [b - a for a, b in zip(counts[:3], counts[3:])]
mean = sum(delta) / 3
print(f"calls per server over 3 s: {delta} (mean {mean:.0f})")
assert mean > 0 and all(abs(d - mean) <= 0.2 * mean for d in delta), delta
PY

log "killing server 2 (SIGKILL) mid-run"
kill -KILL "${pids[2]}"
wait "${pids[2]}" 2>/dev/null || true
mapfile -t at_kill < <(requests_per_server "${metrics_ports[@]:0:2}")

bench_status=0
wait "$bench_pid" || bench_status=$?
((bench_status == 0)) || { cat "$work/bench.log"; die "normserve-bench exited $bench_status"; }
"$PYTHON" - "$work/bench.json" <<'PY' || { cat "$work/bench.log"; die "failed requests"; }
import json, sys
run = json.load(open(sys.argv[1]))["results"][0]
print(f"bench: {run['requests']} requests, {run['ok']} ok, {run['errors']} errors "
      f"{run['errors_by_code']}")
assert run["ok"] > 0 and run["errors"] == 0 and run["requests"] == run["ok"], run
PY

# The survivors took the load after the kill, then drain and exit 0.
mapfile -t at_end < <(requests_per_server "${metrics_ports[@]:0:2}")
for i in 0 1; do
  ((at_end[i] > at_kill[i])) || die "server $i served nothing after the kill"
  kill -TERM "${pids[i]}"
done
for i in 0 1; do
  status=0
  wait "${pids[i]}" || status=$?
  ((status == 0)) || { show_logs; die "server $i exited $status after SIGTERM"; }
done
pids=()
log "PASS"
