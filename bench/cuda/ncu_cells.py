#!/usr/bin/env python3
"""Kernel durations of the peers per cell from a cells_call.sh NCU run: the median over the
PROFILE_CALLS calls of each peer's summed gpu__time_duration (ncu flushes the caches before each
kernel; cells_call.sh leaves the clocks unlocked), and the fastest peer against ours.

  PROFILE_CALLS=5 NCU="--csv --metrics gpu__time_duration.sum" CELLS="..." \\
      bash bench/cuda/cells_call.sh            # ncu.txt; cells.err in logs.tgz
  python3 bench/cuda/ncu_cells.py ncu.txt cells.err

interleaved.py launches a marker kernel (spin_kernel) before each peer's calls; the kernels
between two markers are that peer's, in the order of cells.err's PROFILE lines.
"""
import statistics
import sys

from ncu_csv import kernel_durations


def main(ncu_path, err_path):
    order = [line.split()[1:] for line in open(err_path) if line.startswith("PROFILE ")]
    segments, current = [], None
    for kernel, _, ns in kernel_durations(ncu_path):
        if "spin_kernel" in kernel:
            current = []
            segments.append(current)
        elif current is not None:
            current.append(ns * 1e-3)  # µs
    if len(segments) != len(order):
        sys.exit(f"{len(segments)} marker kernels, {len(order)} PROFILE lines")
    cells = {}
    for (spec, peer, calls), durations in zip(order, segments):
        calls = int(calls)
        per_call = len(durations) // calls
        if per_call == 0 or per_call * calls != len(durations):
            print(f"skip {spec} {peer}: {len(durations)} kernels for {calls} calls",
                  file=sys.stderr)
            continue
        sums = [sum(durations[i * per_call:(i + 1) * per_call]) for i in range(calls)]
        cells.setdefault(spec, {})[peer] = (statistics.median(sums), per_call)
    print("| cell | ours µs (kernels) | fastest peer | its µs (kernels) | peer / ours |"
          " every peer, µs |")
    print("|---|---|---|---|---|---|")
    for spec, peers in cells.items():
        ours = peers.get("normserve")
        others = {p: v for p, v in peers.items() if not p.startswith("normserve")}
        if ours is None or not others:
            continue
        best = min(others, key=lambda p: others[p][0])
        every = ", ".join(f"{p} {v[0]:.2f}" for p, v in peers.items() if p != "normserve")
        print(f"| {spec.replace(':', ' ')} | {ours[0]:.2f} ({ours[1]}) | {best} | "
              f"{others[best][0]:.2f} ({others[best][1]}) | {others[best][0] / ours[0]:.3f} | "
              f"{every} |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
