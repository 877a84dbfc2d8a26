#!/usr/bin/python3
"""PyTorch CPU on the shapes of normserve_cpu_bench, for the ratio in bench/results/cpu-*.md.

Ops (eps 1e-6, weight; bias for LayerNorm), fp32 and bf16:
  ln_fwd       F.layer_norm(x, [n], w, b)
  rms_fwd      RMSNorm as Hugging Face / MiniMind write it (torch 1.13 has no F.rms_norm):
               w * (x.float() * rsqrt(mean(x.float()^2) + eps)).to(x.dtype)
  add_rms_fwd  p = x + y; o = rms_fwd(p); returns (o, p)
  rms_bwd      autograd backward of rms_fwd: dx and dw (graph built once, retain_graph)
  ln_bwd       autograd backward of F.layer_norm: dx, dw, db (native_layer_norm_backward)

GB/s counts the bytes the op must move, as normserve_cpu_bench does: fwd 2*m*n*e, fused add
4*m*n*e, bwd 3*m*n*e. Each timing is the median over repeats of a timed loop (after warm-up).

  /usr/bin/python3 bench/cpu/torch_cpu_bench.py [--threads 2] [--json out.json] [--only OP/DTYPE/MxN]
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

SHAPES = [(4096, 1024), (1024, 4096), (256, 4096), (1, 4096), (512, 8192)]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
EPS = 1e-6


def rms_norm(x, w):
    xf = x.float()
    return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype)


def timed(fn, min_time=0.3, repeats=5):
    """Median seconds per call over `repeats` loops of at least min_time / repeats each."""
    fn()
    fn()
    start = time.perf_counter()
    calls = 0
    while time.perf_counter() - start < min_time / repeats or calls < 2:
        fn()
        calls += 1
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls)
    return statistics.median(samples)


def cases(m, n, dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(m, n, generator=g).to(dtype)
    y = torch.randn(m, n, generator=g).to(dtype)
    dy = torch.randn(m, n, generator=g).to(dtype)
    w = (1 + 0.5 * torch.randn(n, generator=g)).to(dtype)
    b = torch.randn(n, generator=g).to(dtype)

    def ln_fwd():
        with torch.no_grad():
            return F.layer_norm(x, [n], w, b, EPS)

    def rms_fwd():
        with torch.no_grad():
            return rms_norm(x, w)

    def add_rms_fwd():
        with torch.no_grad():
            p = x + y
            return rms_norm(p, w), p

    xr = x.clone().requires_grad_(True)
    wr = w.clone().requires_grad_(True)
    br = b.clone().requires_grad_(True)
    rms_out = rms_norm(xr, wr)
    ln_out = F.layer_norm(xr, [n], wr, br, EPS)

    def rms_bwd():
        return torch.autograd.grad(rms_out, (xr, wr), dy, retain_graph=True)

    def ln_bwd():
        return torch.autograd.grad(ln_out, (xr, wr, br), dy, retain_graph=True)

    return [("ln_fwd", ln_fwd, 2), ("rms_fwd", rms_fwd, 2), ("add_rms_fwd", add_rms_fwd, 4),
            ("rms_bwd", rms_bwd, 3), ("ln_bwd", ln_bwd, 3)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min-time", type=float, default=0.3)
    parser.add_argument("--json", default=None)
    parser.add_argument("--only", default=None, help="one case, e.g. ln_bwd/fp32/256x4096")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for dname, dtype in DTYPES.items():
        for m, n in SHAPES:
            if args.only and not args.only.endswith(f"/{dname}/{m}x{n}"):
                continue
            for op, fn, factor in cases(m, n, dtype):
                if args.only and args.only != f"{op}/{dname}/{m}x{n}":
                    continue
                sec = timed(fn, args.min_time)
                nbytes = factor * m * n * torch.tensor([], dtype=dtype).element_size()
                row = dict(op=op, dtype=dname, m=m, n=n, us=round(sec * 1e6, 2),
                           gbs=round(nbytes / sec / 1e9, 3))
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(torch=torch.__version__, threads=args.threads, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
