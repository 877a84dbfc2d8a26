#!/usr/bin/python3
"""Plots a normserve-bench sweep CSV (--sweep=... --csv_out=sweep.csv) to PNG.

  /usr/bin/python3 client/bench/plot_sweep.py sweep.csv sweep.png [--title "..."]

Left: latency percentiles (p50, p90, p99, p99.9) against achieved throughput,
the latency-throughput curve. Right: achieved against offered load
(concurrency for a closed-loop sweep, target rate for an open-loop one).
Needs matplotlib (Debian: apt-get install -y python3-matplotlib).
"""
import argparse
import csv
import sys


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{path}: no data rows")
    for row in rows:
        for key, value in row.items():
            if key != "loop":
                row[key] = float(value)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", help="CSV written by normserve-bench --csv_out")
    parser.add_argument("png", help="output image")
    parser.add_argument("--title", default="normserve latency vs throughput")
    args = parser.parse_args()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_rows(args.csv)
    open_loop = rows[0]["loop"] == "open"
    offered_key = "target_rate" if open_loop else "concurrency"
    throughput = [r["throughput_rps"] for r in rows]

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for key, label in [("p50_us", "p50"), ("p90_us", "p90"), ("p99_us", "p99"),
                       ("p999_us", "p99.9")]:
        left.plot(throughput, [r[key] / 1e3 for r in rows], marker="o", label=label)
    left.set_xlabel("throughput (requests/s)")
    left.set_ylabel("latency (ms)")
    left.set_yscale("log")
    left.grid(True, which="both", alpha=0.3)
    left.legend()
    left.set_title("latency vs throughput")

    offered = [r[offered_key] for r in rows]
    right.plot(offered, throughput, marker="o")
    if open_loop:
        right.plot(offered, offered, linestyle="--", color="gray", label="offered")
        right.legend()
    right.set_xlabel("target rate (requests/s)" if open_loop else "concurrency")
    right.set_ylabel("throughput (requests/s)")
    right.grid(True, alpha=0.3)
    right.set_title("achieved vs offered load")

    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
