#!/usr/bin/env python3
"""Kernel durations from ncu CSV files, one column per file: the median gpu__time_duration of
each forward-kernel instance and grid (ncu locks the clocks and flushes the caches per kernel,
so it separates differences of ~30 ns that event timings of one-row launches do not).

  ncu --kernel-name regex:ForwardKernel --metrics gpu__time_duration.sum --csv \\
      normserve_cuda_bench --dtype bf16,fp32 --shapes 1x4096 --ops ln_fwd --reps 30 > base.csv
  ncu_durations.py base.csv new.csv
"""
import collections
import statistics
import sys

from ncu_csv import kernel_durations


def durations(path):
    out = collections.defaultdict(list)
    for kernel, grid, ns in kernel_durations(path):
        # ForwardKernel<T, VEC, ITERS, kPreload, kCenter, RowStorage, kFull>
        args = [a.strip() for a in kernel[kernel.index("<") + 1:kernel.index(">")].split(",")]
        key = (args[0], "LN" if args[4] in ("1", "true") else "RMS",
               "vec %s iters %s preload %s storage %s full %s" % tuple(args[1:4] + args[5:7]),
               grid)
        out[key].append(ns)
    return out


def main():
    files = sys.argv[1:]
    tables = [durations(f) for f in files]
    keys = list(dict.fromkeys(k for t in tables for k in t))
    print("| dtype | norm | instance | grid | " + " | ".join(files) + " |")
    print("|" + "---|" * (4 + len(files)))
    for k in keys:
        cells = [f"{statistics.median(t[k]):.0f} ns (n={len(t[k])})" if k in t else "—"
                 for t in tables]
        print("| " + " | ".join(k) + " | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
