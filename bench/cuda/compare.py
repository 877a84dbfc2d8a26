#!/usr/bin/env python3
"""Side-by-side markdown table: normserve's GPU benchmark (norm_bench --json, JSON lines)
against peers_bench.py's JSON files. Cells: GB/s (µs). Only measured numbers appear; a
missing peer/op is "—". Where ours_do_bench.py's rows (ours timed by the peers' harness) are
among the peers' files, they get a column and a ratio of their own (never a peer's column).

  compare.py ours.jsonl [ours2.jsonl ...] -- peers_a.json [peers_b.json ...]
"""
import json
import sys

OPS = ["rms_fwd", "ln_fwd", "add_rms_fwd", "rms_bwd", "ln_bwd", "add_rms_bwd", "add_rms_bwd_xy"]
PEERS = ["torch", "torch.compile", "liger", "flashinfer", "quack"]
OURS_DO_BENCH = "normserve (do_bench)"


def main():
    args = sys.argv[1:]
    split = args.index("--") if "--" in args else len(args)
    ours, peers = args[:split], args[split + 1:]
    rows = []
    for path in ours:
        with open(path) as f:
            rows += [json.loads(line) for line in f if line.strip()]
    for path in peers:
        with open(path) as f:
            rows += json.load(f)
    cell = {}
    shapes, dtypes, copy = [], [], {}
    for r in rows:
        key = (r["dtype"], r["op"], r["m"], r["n"])
        if r["op"] == "copy":
            copy[(r["dtype"], r["m"], r["n"])] = r["gbs"]
            continue
        cell[key + (r["peer"],)] = r
        if (r["m"], r["n"]) not in shapes:
            shapes.append((r["m"], r["n"]))
        if r["dtype"] not in dtypes:
            dtypes.append(r["dtype"])
    present = [p for p in PEERS if any(k[-1] == p for k in cell)]
    dob = any(k[-1] == OURS_DO_BENCH for k in cell)
    for dt in dtypes:
        print(f"\n### {dt}\n")
        extra = " normserve by do_bench | do_bench / best |" if dob else ""
        print("| op | m×n | normserve | " + " | ".join(present) +
              " | best peer | ours / best |" + extra + " copy GB/s |")
        print("|---|---|---|" + "---|" * len(present) + "---|---|" + "---|---|" * dob + "---|")
        for op in OPS:
            for m, n in shapes:
                ours_r = cell.get((dt, op, m, n, "normserve"))
                if ours_r is None:
                    continue
                fmt = lambda r: "—" if r is None else f"{r['gbs']:.0f} ({r['us']:.1f} µs)"
                best = None
                cells = []
                for p in present:
                    r = cell.get((dt, op, m, n, p))
                    cells.append(fmt(r))
                    if r is not None and (best is None or r["gbs"] > best[1]["gbs"]):
                        best = (p, r)
                ratio = f"{ours_r['gbs'] / best[1]['gbs']:.2f}" if best else "—"
                best_s = f"{best[0]} {best[1]['gbs']:.0f}" if best else "—"
                cp = copy.get((dt, m, n))
                if dob:
                    d = cell.get((dt, op, m, n, OURS_DO_BENCH))
                    d_ratio = f"{d['gbs'] / best[1]['gbs']:.2f}" if d and best else "—"
                    ratio += f" | {fmt(d)} | {d_ratio}"
                print(f"| {op} | {m}×{n} | **{fmt(ours_r)}** | " + " | ".join(cells) +
                      f" | {best_s} | {ratio} | {'—' if cp is None else f'{cp:.0f}'} |")


if __name__ == "__main__":
    main()
