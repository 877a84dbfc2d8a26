"""torch.compile of every op's math as a peer, measured like peers_bench.py.

peers_bench.py (../shared/perf, copied to .peers/ for the GPU machine) times
torch.compile only for the fused add + RMSNorm forward. This adds compiled
RMSNorm / LayerNorm forwards and their backwards (autograd through the compiled
forward), with the same inputs, timing, byte counts and JSON rows:

  PEERS_DIR=.peers OUT=$OUT DTYPE=bf16 python3 bench/cuda/compile_peers.py

writes $OUT/peers_compile_all_<dtype>.json. One compile per (function, shape):
static shapes, so each shape gets the kernels Inductor would pick for it.
"""
import json
import os
import sys

sys.path.insert(0, os.environ.get("PEERS_DIR", ".peers"))
import peers_bench as pb  # noqa: E402  (the shared harness: inputs, bench, record)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch._dynamo.config.cache_size_limit = 64  # one graph per shape
# The benchmark calls one backward graph repeatedly (retain_graph=True), which
# buffer donation forbids.
torch._functorch.config.donated_buffer = False


@torch.compile
def rms(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, pb.EPS)


@torch.compile
def ln(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, pb.EPS)


def run_compiled_all(m, n):
    x, r, w, b, dy = pb.inputs(m, n)
    mn = m * n * 2
    pb.record("torch.compile", "rms_fwd", m, n, pb.bench(lambda: rms(x, w)), 2 * mn,
              pb.err(rms(x, w), pb.rms_ref(x, w)))
    pb.record("torch.compile", "ln_fwd", m, n, pb.bench(lambda: ln(x, w, b)), 2 * mn,
              pb.err(ln(x, w, b), pb.ln_ref(x, w, b)))
    pb.run_compiled(m, n)  # add_rms_fwd, as peers_bench.py compiles it
    xg, wg, bg = x.clone().requires_grad_(), w.clone().requires_grad_(), b.clone().requires_grad_()
    y = rms(xg, wg)
    pb.record("torch.compile", "rms_bwd", m, n,
              pb.bench(lambda: torch.autograd.grad(y, [xg, wg], dy, retain_graph=True)), 3 * mn)
    y = ln(xg, wg, bg)
    pb.record("torch.compile", "ln_bwd", m, n,
              pb.bench(lambda: torch.autograd.grad(y, [xg, wg, bg], dy, retain_graph=True)),
              3 * mn)


def main():
    for m, n in pb.SHAPES:
        pb.try_peer("compile_all", run_compiled_all, m, n)
    tag = os.environ.get("DTYPE", "bf16")
    with open(os.path.join(pb.OUT, f"peers_compile_all_{tag}.json"), "w") as f:
        json.dump(pb.ROWS, f, indent=1)


if __name__ == "__main__":
    main()
