#!/usr/bin/python3
"""Markdown table for bench/results/cpu-*.md from the two benchmarks' JSON outputs.

  build-cpu/bench/cpu/normserve_cpu_bench --threads=2 --benchmark_repetitions=3 \\
      --benchmark_out=ns1.json --benchmark_out_format=json
  /usr/bin/python3 bench/cpu/torch_cpu_bench.py --threads 2 --json torch1.json
  ... (more rounds, alternating) ...
  /usr/bin/python3 bench/cpu/cpu_table.py --ns ns*.json --torch torch*.json

Per round, normserve's cell is the median of its repetitions and torch's the median of its
samples; with several rounds (the machine is shared), each side's best round is shown.
Cells are GB/s over the bytes each op must move (see cpu_bench.cc) and microseconds per call.
ratio = normserve GB/s / torch GB/s (> 1: normserve is faster). memcpy is a copy of the same
bytes on the same threads.
"""
import argparse
import json


def best(table, name, gbs, us):
    if name not in table or gbs > table[name][0]:
        table[name] = (gbs, us)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ns", nargs="+", required=True)
    parser.add_argument("--torch", nargs="+", required=True)
    args = parser.parse_args()
    ours, memcpy, theirs = {}, {}, {}
    for path in args.ns:
        runs = json.load(open(path))["benchmarks"]
        if any(b.get("aggregate_name") == "median" for b in runs):
            runs = [b for b in runs if b.get("aggregate_name") == "median"]
        for b in runs:
            name = b.get("run_name", b["name"]).replace("/real_time", "")
            target = memcpy if name.startswith("memcpy_same_bytes/") else ours
            name = name.replace("memcpy_same_bytes/", "")
            best(target, name, b["bytes_per_second"] / 1e9, b["real_time"] / 1e3)
    for path in args.torch:
        for r in json.load(open(path))["rows"]:
            best(theirs, f'{r["op"]}/{r["dtype"]}/{r["m"]}x{r["n"]}', r["gbs"], r["us"])
    print("| op | dtype | m×n | normserve GB/s (µs) | torch GB/s (µs) | ratio | memcpy GB/s |")
    print("|---|---|---|---|---|---|---|")
    for name, (gbs, us) in ours.items():
        op, dtype, shape = name.split("/")
        t = theirs.get(name)
        m = memcpy.get(name)
        tcell = f"{t[0]:.2f} ({t[1]:.1f})" if t else "—"
        ratio = f"**{gbs / t[0]:.2f}×**" if t else "—"
        mcell = f"{m[0]:.2f}" if m else "—"
        print(f"| {op} | {dtype} | {shape} | {gbs:.2f} ({us:.1f}) | {tcell} | {ratio} | {mcell} |")


if __name__ == "__main__":
    main()
