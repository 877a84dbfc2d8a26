#!/usr/bin/env bash
# Samples the GPU's SM clock, temperature, power and clock-event reasons every 2 s while a
# benchmark runs, so that a machine that throttles is seen beside the numbers instead of read as
# slower kernels (bench/results/gpu-2026-11-25-round21.md, calls 2-3: every build, the base
# included, 20-120 % slower in the second round at 80-87 °C, SM clock 930-1080 MHz, reason 0x20).
#   pid=$(bash bench/cuda/clock_watch.sh start FILE)   # background sampler into FILE (CSV)
#   kill "$pid"; bash bench/cuda/clock_watch.sh summary FILE
# The summary is one line; it starts with THROTTLED when a sample under load (utilization of 50 %
# or more) ran below 1500 MHz or gave a reason other than idle (0x1), e.g. 0x20 software thermal
# slowdown, 0x40 hardware thermal, 0x4 power cap.
set -uo pipefail
case ${1:-} in
  start)
    nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active,utilization.gpu \
      --format=csv,noheader,nounits -lms 2000 > "$2" 2>/dev/null &
    echo $!
    ;;
  summary)
    awk -F', *' '
      NF >= 5 && $1 ~ /^[0-9]+$/ {
        n++
        if ($2 > max_temp) max_temp = $2
        if ($5 >= 50) {
          loaded++
          if (min_clock == "" || $1 < min_clock) min_clock = $1
          if ($1 < 1500) slow++
          reason = $4; sub(/^0x0*/, "", reason)
          if (reason != "" && reason != "1") { bad++; reasons[$4] = 1 }
        }
      }
      END {
        seen = ""; for (r in reasons) seen = seen " " r
        printf "%sclocks: %d samples, %d under load, min SM clock under load %s MHz, max %s C%s\n",
               (slow + bad > 0 ? "THROTTLED " : ""), n, loaded, (min_clock == "" ? "-" : min_clock),
               (n ? max_temp : "-"), (seen == "" ? "" : ", reasons" seen)
      }' "$2"
    ;;
  *)
    echo "usage: $0 start FILE | summary FILE" >&2
    exit 2
    ;;
esac
