#!/usr/bin/env python3
"""A few cells, the peers' kernels and ours, timed by one harness in one process:
peers_bench.py's inputs and do_bench, in ROUNDS alternating rounds (peer, ..., ours, peer, ...),
so that a gap of a percent or two is not a difference between machines, runs or timing loops
(Quack's fused backward has moved 123-151 µs between runs at fp32 4096 x 5000, and our two
harnesses differ by up to 3 %: bench/results/gpu-2026-11-25-round19.md). Every output is checked
against a float32 reference first. Ours goes through libnormserve_peer_shim.so (ctypes), as in
ours_do_bench.py; FlashInfer through fi_norm.so (bf16 only, in place, as peers_bench.py times it).
Forward cells time ours twice: "normserve" writes no statistics, as Quack's and FlashInfer's
forwards are called; "normserve+stats" also writes rstd (LayerNorm: and mean), as Liger's forwards
save them for their backward.

Ops: rms_fwd, ln_fwd (Quack, Liger, FlashInfer, torch eager), add_rms_fwd (Quack, Liger,
FlashInfer, torch.compile), add_rms_bwd (Quack's rmsnorm_bwd of a saved p with dresidual_out;
torch's and Liger's autograd of the fused add + RMSNorm: dx, dr and dw), rms_bwd (Quack's
rmsnorm_bwd; torch's and Liger's autograd: dx and dw), ln_bwd (Quack's layernorm_bwd; torch's and
Liger's autograd: dx, dw and db), as peers_bench.py calls them.

  FI_NORM_SO=.peers/fi_norm.so PYTHONPATH=.peers:$SITE \
    python3 bench/cuda/interleaved.py SHIM.so add_rms_bwd:fp32:4096x5000 ...

Each row keeps do_bench's median ("us", the statistic of peers_bench.py) and the mean of the same
samples ("mean_us"). Event timings on these GPUs move in steps of about 0.64 us (round 29: 0.6-0.7
us between the rounds of one cell), so a median under ~60 us sits on one of two steps and cannot
order cells closer than a step (2 % at 30 us); the mean of the samples (10^2-10^3 per call)
straddles the steps.

PROFILE=1: no timing; each peer's function called PROFILE_CALLS times (default 1) between
torch.cuda.profiler.start() and stop(), for `ncu --profile-from-start off`, after a marker kernel
(torch.cuda._sleep's spin_kernel) that tells ncu_cells.py where the peer's kernels begin; the order
of the calls goes to stderr. PROFILE_FLUSH=1: each call preceded, unprofiled, by do_bench's L2
flush (a 256 MB zero_), for ncu's `--cache-control none`: the cache state do_bench times in.

Prints one JSON row per (cell, round, peer) and writes them to $OUT/interleaved.json.
  python3 bench/cuda/interleaved.py --table interleaved.json ...  # the markdown table
  python3 bench/cuda/interleaved.py --best interleaved.json ...   # the fastest peer per cell
"""
import ctypes
import json
import os
import statistics
import sys

# Which of ours each peer is held against: the run that writes what the peer's call writes.
MATCH = {"liger": "normserve+stats"}


def ours_of(peer, values):
    """The run of ours in `values` that `peer` is held against (backward cells time one)."""
    match = MATCH.get(peer, "normserve")
    return match if match in values else "normserve"


def ratios(values):
    """'peer r, ...': peer / ours against the matching run of ours (> 1: ours faster)."""
    return ", ".join(f"{p} {values[p] / values[ours_of(p, values)]:.3f}" for p in values
                     if not p.startswith("normserve") and ours_of(p, values) in values)


def load(paths):
    """{cell: {peer: [rounds' medians]}} and {cell: {peer: [rounds' means]}} (rows of older files
    have no means)."""
    cells, means = {}, {}
    for path in paths:
        for row in json.load(open(path)):
            key = f"{row['op']} {row['dtype']} {row['m']}x{row['n']}"
            cells.setdefault(key, {}).setdefault(row["peer"], []).append(row["us"])
            if "mean_us" in row:
                means.setdefault(key, {}).setdefault(row["peer"], []).append(row["mean_us"])
    return cells, means


def table(paths):
    """Per cell: each peer's median over the rounds, peer / ours by those medians, and by the
    rounds' means where the rows have them."""
    cells, means = load(paths)
    print("| cell | peer: median µs (rounds) | peer µs / ours µs (> 1: ours faster) "
          "| the same by means |\n|---|---|---|---|")
    for key, peers in cells.items():
        med = {p: statistics.median(v) for p, v in peers.items()}
        times = "; ".join(f"{p} {med[p]:.1f} ({', '.join(map(str, v))})" for p, v in peers.items())
        by_mean = {p: statistics.median(v) for p, v in means.get(key, {}).items()}
        print(f"| {key} | {times} | {ratios(med)} | {ratios(by_mean) or '—'} |")


def best(paths):
    """Per cell: ours and the fastest peer by the rounds' means (medians where the rows have no
    means), best peer / ours by means and by medians (> 1: ours faster)."""
    cells, means = load(paths)
    print("| cell | ours µs (mean) | fastest peer | its µs (mean) | peer / ours, means "
          "| medians |\n|---|---|---|---|---|---|")
    for key, peers in cells.items():
        med = {p: statistics.median(v) for p, v in peers.items()}
        mean = {p: statistics.median(v) for p, v in means.get(key, peers).items()}
        peer = min((p for p in mean if not p.startswith("normserve")),
                   key=lambda p: mean[p] / mean[ours_of(p, mean)])
        ours = ours_of(peer, mean)
        print(f"| {key} | {mean[ours]:.2f} | {peer} | {mean[peer]:.2f} "
              f"| {mean[peer] / mean[ours]:.3f} | {med[peer] / med[ours]:.3f} |")


if __name__ == "__main__" and sys.argv[1:2] in (["--table"], ["--best"]):  # no GPU or torch
    sys.exit((table if sys.argv[1] == "--table" else best)(sys.argv[2:]))

import peers_bench as pb  # noqa: E402 (after the table, which needs neither)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
DTYPE_CODE = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}  # normserve's DType
ROUNDS = int(os.environ.get("ROUNDS", "3"))
P = lambda t: ctypes.c_void_p(0 if t is None else t.data_ptr())
I = ctypes.c_int64
EPS = ctypes.c_float(pb.EPS)
# PROFILE_FLUSH=1: the cache state do_bench times in (its 256 MB cache.zero_() before each call),
# for ncu --cache-control none.
FLUSH_BUFFER = torch.empty(256 << 20, dtype=torch.int8, device="cuda") if (
    os.environ.get("PROFILE_FLUSH")) else None


def rms_dx(p, w, do):
    ps = p.float().requires_grad_()
    (g,) = torch.autograd.grad(pb.rms_ref(ps, w), [ps], do.float())
    return g


class Ours:
    """normserve's forward / backward through the shim, on one stream."""

    def __init__(self, shim, dtype, m, n):
        self.lib, self.code, self.m, self.n = shim, DTYPE_CODE[dtype], m, n
        self.stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self.mean = torch.empty(m, device="cuda", dtype=torch.float32)
        self.rstd = torch.empty_like(self.mean)

    def forward(self, x, y, w, o, residual_out, b=None, stats=True):
        """stats: write rstd, and LayerNorm's (b given) mean too."""
        mean = self.mean if stats and b is not None else None
        rstd = self.rstd if stats else None
        return self.lib.normserve_forward(self.code, int(b is not None), P(x), P(y), P(w), P(b),
                                          P(o), P(residual_out), P(mean), P(rstd),
                                          I(self.m), I(self.n), EPS, self.stream)

    def forward_cells(self, ref, o, *args):
        """{"normserve": ..., "normserve+stats": ...} of forward(*args), each checked."""
        cells = {}
        for name, stats in (("normserve", False), ("normserve+stats", True)):
            f = lambda stats=stats: self.forward(*args, stats=stats)
            o.fill_(float("nan"))
            assert f() == 0
            cells[name] = (f, pb.err(o, ref))
        return cells

    def backward(self, p, do, grad_residual, w, dx, dw, ws, db=None):
        return self.lib.normserve_backward(self.code, int(db is not None), P(p), P(do),
                                           P(grad_residual), P(self.mean), P(self.rstd), P(w),
                                           P(dx), P(dw), P(db), P(ws), I(self.m), I(self.n), EPS,
                                           self.stream)


def fi_lib():
    return ctypes.CDLL(os.environ.get("FI_NORM_SO", ".peers/fi_norm.so"))


def forward_cells(ours, op, dtype, m, n):
    """rms_fwd / ln_fwd: {peer: (function, max error)}."""
    x, _, w, b, _ = pb.inputs(m, n, dtype)
    o = torch.empty_like(x)
    cells = {}
    if op == "rms_fwd":
        ref = pb.rms_ref(x, w)

        def quack():
            from quack.rmsnorm import rmsnorm_fwd
            q = lambda: rmsnorm_fwd(x, w, eps=pb.EPS)
            return q, pb.err(q()[0], ref)

        def liger():
            from liger_kernel.ops.rms_norm import LigerRMSNormFunction
            lg = lambda: LigerRMSNormFunction.apply(x, w, pb.EPS, 0.0, "llama", False)
            return lg, pb.err(lg(), ref)

        t = lambda: F.rms_norm(x, (n,), w, pb.EPS)
        fi_name, fi_args, bias = "fi_rmsnorm_bf16", (P(x), P(w), P(o)), None
    else:
        ref = pb.ln_ref(x, w, b)
        w32, b32 = w.float(), b.float()

        def quack():
            from quack.rmsnorm import layernorm_fwd
            q = lambda: layernorm_fwd(x, w32, b32, eps=pb.EPS)
            return q, pb.err(q(), ref)

        def liger():
            from liger_kernel.ops.layer_norm import LigerLayerNormFunction
            lg = lambda: LigerLayerNormFunction.apply(x, w, b, pb.EPS)
            return lg, pb.err(lg(), ref)

        t = lambda: F.layer_norm(x, (n,), w, b, pb.EPS)
        fi_name, fi_args, bias = "fi_layernorm_bf16", (P(x), P(w), P(b), P(o)), b
    add_peer(cells, "quack", quack)
    add_peer(cells, "liger", liger)
    cells["torch"] = (t, pb.err(t(), ref))
    if dtype == torch.bfloat16:
        def flashinfer():
            fi = getattr(fi_lib(), fi_name)
            f = lambda: fi(*fi_args, m, n, EPS, ours.stream)
            assert f() == 0
            return f, pb.err(o, ref)

        add_peer(cells, "flashinfer", flashinfer)
    cells.update(ours.forward_cells(ref, o, x, None, w, o, None, bias))
    return cells


def add_peer(cells, name, make):
    """cells[name] = make(), or, where the peer cannot run the cell (not installed, or a shape it
    rejects, as Quack's kernels reject 16-bit rows not a multiple of 8 wide), a note on stderr and
    the cell goes on without it."""
    try:
        cells[name] = make()
    except Exception as exc:
        print(f"NOPEER {name}: {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr, flush=True)


def cell(shim, op, dtype, m, n):
    """{peer: (function, max error)} of one cell."""
    ours = Ours(shim, dtype, m, n)
    if op in ("rms_fwd", "ln_fwd"):
        return forward_cells(ours, op, dtype, m, n)
    if op == "ln_bwd":
        return ln_backward_cells(ours, dtype, m, n)
    x, r, w, _, do = pb.inputs(m, n, dtype)
    o, p = torch.empty_like(x), torch.empty_like(x)
    cells = {}
    if op == "add_rms_fwd":
        ref = pb.rms_ref(x + r, w)

        def quack():
            from quack.rmsnorm import rmsnorm_fwd
            q = lambda: rmsnorm_fwd(x, w, residual=r, eps=pb.EPS)
            return q, pb.err(q()[0], ref)

        def liger():
            from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
            lg = lambda: LigerFusedAddRMSNormFunction.apply(x, r, w, pb.EPS, 0.0, "llama", False)
            return lg, pb.err(lg()[0], ref)

        add_peer(cells, "quack", quack)
        add_peer(cells, "liger", liger)
        tc = lambda: pb._compiled_add_rms(x, r, w)
        cells["torch.compile"] = (tc, pb.err(tc()[0], ref))
        if dtype == torch.bfloat16:
            def flashinfer():
                fi = fi_lib()
                xc, rc = x.clone(), r.clone()  # in place: r += x; x = norm(r) * w
                f = lambda: fi.fi_fused_add_rmsnorm_bf16(P(xc), P(rc), P(w), m, n, EPS,
                                                         ours.stream)
                assert f() == 0
                return f, pb.err(xc, ref)

            add_peer(cells, "flashinfer", flashinfer)
        cells.update(ours.forward_cells(ref, o, x, r, w, o, p))
        return cells
    residual = op == "add_rms_bwd"
    dp = torch.randn_like(do) if residual else None
    src = x + r if residual else x  # the saved residual stream p, rounded to the dtype
    ref = rms_dx(src, w, do) + (dp.float() if residual else 0)

    def quack():
        from quack.rmsnorm import rmsnorm_bwd, rmsnorm_fwd
        _, _, rstd = rmsnorm_fwd(src, w, eps=pb.EPS, store_rstd=True)
        if residual:
            q = lambda: rmsnorm_bwd(src, w, do, rstd, dresidual_out=dp, has_residual=True)
        else:
            q = lambda: rmsnorm_bwd(src, w, do, rstd)
        return q, pb.err(q()[0], ref)

    add_peer(cells, "quack", quack)
    assert ours.forward(src, None, w, o, None) == 0  # src's mean / rstd
    ws = torch.empty(shim.normserve_backward_workspace(ours.code, I(m), I(n)), device="cuda",
                     dtype=torch.uint8)
    dx, dw = torch.empty_like(src), torch.empty(n, device="cuda", dtype=torch.float32)
    f = lambda: ours.backward(src, do, dp, w, dx, dw, ws)
    assert f() == 0
    cells["normserve"] = (f, pb.err(dx, ref))
    if not residual:
        cells["torch"] = torch_backward(lambda xg, wg: F.rms_norm(xg, (n,), wg, pb.EPS), src, w,
                                        do, ref)

        def liger():
            from liger_kernel.ops.rms_norm import LigerRMSNormFunction
            return torch_backward(
                lambda xg, wg: LigerRMSNormFunction.apply(xg, wg, pb.EPS, 0.0, "llama", False),
                src, w, do, ref)

        add_peer(cells, "liger", liger)
    else:
        def add_rms(xg, rg, wg):
            pg = xg + rg
            return F.rms_norm(pg, (n,), wg, pb.EPS), pg

        cells["torch"] = torch_add_backward(add_rms, x, r, w, do, dp, ref)

        def liger():
            from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
            return torch_add_backward(
                lambda xg, rg, wg: LigerFusedAddRMSNormFunction.apply(xg, rg, wg, pb.EPS, 0.0,
                                                                      "llama", False),
                x, r, w, do, dp, ref)

        add_peer(cells, "liger", liger)
    return cells


def torch_add_backward(norm, x, r, w, do, dp, ref):
    """The autograd backward of the fused (y, p) = (norm(p, w), p), p = x + r, given dy and dp
    (dx, dr and dw, as Liger's fused add + RMSNorm backward computes them): (function, max error
    of dx)."""
    leaves = [t.clone().requires_grad_() for t in (x, r, w)]
    outs = norm(*leaves)
    g = lambda: torch.autograd.grad(outs, leaves, (do, dp), retain_graph=True)
    return g, pb.err(g()[0], ref)


def torch_backward(norm, x, w, do, ref, b=None):
    """torch's autograd backward of norm(x, w[, b]) (dx, dw[, db]), as peers_bench.py times it:
    (function, max error of dx)."""
    leaves = [t.clone().requires_grad_() for t in (x, w) + ((b,) if b is not None else ())]
    y = norm(*leaves)
    g = lambda: torch.autograd.grad(y, leaves, do, retain_graph=True)
    return g, pb.err(g()[0], ref)


def ln_backward_cells(ours, dtype, m, n):
    """ln_bwd against Quack's layernorm_bwd (saved mean / rstd; dx checked)."""
    x, _, w, b, do = pb.inputs(m, n, dtype)
    w32, b32 = w.float(), b.float()
    xs = x.float().requires_grad_()
    (ref,) = torch.autograd.grad(pb.ln_ref(xs, w, b), [xs], do.float())
    cells = {}

    def quack():
        from quack.rmsnorm import layernorm_bwd, layernorm_fwd
        _, rstd, mean = layernorm_fwd(x, w32, b32, eps=pb.EPS, return_rstd=True, return_mean=True)
        q = lambda: layernorm_bwd(x, w32, do, rstd, mean)
        return q, pb.err(q()[0], ref)

    add_peer(cells, "quack", quack)
    o = torch.empty_like(x)
    assert ours.forward(x, None, w, o, None, b) == 0  # x's mean / rstd
    ws = torch.empty(ours.lib.normserve_backward_workspace(ours.code, I(m), I(n)), device="cuda",
                     dtype=torch.uint8)
    dx = torch.empty_like(x)
    dw, db = (torch.empty(n, device="cuda", dtype=torch.float32) for _ in range(2))
    f = lambda: ours.backward(x, do, None, w, dx, dw, ws, db)
    assert f() == 0
    cells["normserve"] = (f, pb.err(dx, ref))
    cells["torch"] = torch_backward(lambda xg, wg, bg: F.layer_norm(xg, (n,), wg, bg, pb.EPS), x,
                                    w, do, ref, b)

    def liger():
        from liger_kernel.ops.layer_norm import LigerLayerNormFunction
        return torch_backward(lambda xg, wg, bg: LigerLayerNormFunction.apply(xg, wg, bg, pb.EPS),
                              x, w, do, ref, b)

    add_peer(cells, "liger", liger)
    return cells


def main():
    shim = ctypes.CDLL(sys.argv[1])
    shim.normserve_backward_workspace.restype = ctypes.c_int64
    rows = []
    for spec in sys.argv[2:]:
        op, name, shape = spec.split(":")
        m, n = map(int, shape.split("x"))
        try:
            peers = cell(shim, op, DTYPES[name], m, n)
        except Exception as exc:  # a cell that cannot be set up: reported, the others go on
            print(f"SKIP {spec}: {type(exc).__name__}: {str(exc)[:300]}", file=sys.stderr,
                  flush=True)
            continue
        if os.environ.get("PROFILE"):  # for ncu --profile-from-start off
            calls = int(os.environ.get("PROFILE_CALLS", "1"))
            flush = os.environ.get("PROFILE_FLUSH")
            for peer, (f, _) in peers.items():
                print(f"PROFILE {spec} {peer} {calls}", file=sys.stderr, flush=True)
                torch.cuda.synchronize()
                torch.cuda.profiler.start()
                torch.cuda._sleep(1)  # the marker: this peer's kernels follow
                for _ in range(calls):
                    if flush:  # do_bench's L2 flush before each call, outside the profiled range
                        torch.cuda.profiler.stop()
                        FLUSH_BUFFER.zero_()
                        torch.cuda.profiler.start()
                    f()
                torch.cuda.synchronize()
                torch.cuda.profiler.stop()
            continue
        for rnd in range(ROUNDS):
            for peer, (f, error) in peers.items():
                samples = pb.do_bench(f, warmup=25, rep=100, return_mode="all")
                row = {"op": op, "dtype": name, "m": m, "n": n, "round": rnd, "peer": peer,
                       "us": round(statistics.median(samples) * 1000, 2),
                       "mean_us": round(statistics.fmean(samples) * 1000, 3), "err": error}
                print(json.dumps(row), flush=True)
                rows.append(row)
    json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "interleaved.json"), "w"))


if __name__ == "__main__":
    main()
