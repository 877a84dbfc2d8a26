"""The fused add + RMSNorm backward (add_rms_bwd) of the peers, measured like peers_bench.py.

peers_bench.py (../shared/perf, copied to .peers/ for the GPU machine) has no fused backward.
This times the gradient of (o, p) = (RMSNorm(x + r) * w, x + r) for given (do, dp):
torch eager and torch.compile (autograd through the forward), Liger
(LigerFusedAddRMSNormFunction) and Quack (rmsnorm_bwd with dresidual_out), with the same
inputs, timing and JSON rows:

  PEERS_DIR=.peers OUT=$OUT DTYPE=bf16 \
    python3 bench/cuda/fused_bwd_peers.py [torch compile liger quack]

writes $OUT/peers_fused_bwd_<dtype>.json. GB/s counts norm_bench's add_rms_bwd bytes, 4 m n s:
read the saved p = x + r, do and dp, write dx (torch's autograd reads more).
Each peer's dx is checked against a float32 reference first.
"""
import json
import os
import sys

sys.path.insert(0, os.environ.get("PEERS_DIR", ".peers"))
import peers_bench as pb  # noqa: E402  (the shared harness: inputs, bench, record)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch._dynamo.config.cache_size_limit = 64  # one graph per shape
torch._functorch.config.donated_buffer = False  # one backward graph, called repeatedly


def reference_dx(x, r, w, do, dp):
    p = (x.float() + r.float()).requires_grad_()
    o = pb.rms_ref(p, w)
    (g,) = torch.autograd.grad(o, [p], do.float())
    return g + dp.float()


def grads(outputs, leaves, do, dp):
    return lambda: torch.autograd.grad(outputs, leaves, (do, dp), retain_graph=True)


def eager_add_rms(x, r, w):
    p = x + r
    return F.rms_norm(p, (x.shape[-1],), w, pb.EPS), p


compiled_add_rms = torch.compile(eager_add_rms)


def run_autograd(peer, forward, m, n):
    x, r, w, _, do = pb.inputs(m, n)
    dp = torch.randn_like(do)
    xg, rg, wg = (t.clone().requires_grad_() for t in (x, r, w))
    o, p = forward(xg, rg, wg)
    f = grads((o, p), [xg, rg, wg], do, dp)
    error = pb.err(f()[0], reference_dx(x, r, w, do, dp))
    pb.record(peer, "add_rms_bwd", m, n, pb.bench(f), 4 * m * n * 2, error)


def run_liger(m, n):
    from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
    run_autograd("liger", lambda x, r, w: LigerFusedAddRMSNormFunction.apply(
        x, r, w, pb.EPS, 0.0, "llama", False), m, n)


def run_quack(m, n):
    from quack.rmsnorm import rmsnorm_bwd, rmsnorm_fwd
    x, r, w, _, do = pb.inputs(m, n)
    dp = torch.randn_like(do)
    _, p, rstd = rmsnorm_fwd(x, w, residual=r, eps=pb.EPS, store_rstd=True)
    f = lambda: rmsnorm_bwd(p, w, do, rstd, dresidual_out=dp, has_residual=True)
    error = pb.err(f()[0], reference_dx(x, r, w, do, dp))
    pb.record("quack", "add_rms_bwd", m, n, pb.bench(f), 4 * m * n * 2, error)


PEERS = {
    "torch": lambda m, n: run_autograd("torch", eager_add_rms, m, n),
    "compile": lambda m, n: run_autograd("torch.compile", compiled_add_rms, m, n),
    "liger": run_liger,
    "quack": run_quack,
}


def main():
    for name in sys.argv[1:] or list(PEERS):
        for m, n in pb.SHAPES:
            pb.try_peer(name, PEERS[name], m, n)
    tag = os.environ.get("DTYPE", "bf16")
    with open(os.path.join(pb.OUT, f"peers_fused_bwd_{tag}.json"), "w") as f:
        json.dump(pb.ROWS, f, indent=1)


if __name__ == "__main__":
    main()
