#!/usr/bin/env python3
"""normserve's kernels timed by the peers' harness: peers_bench.py's inputs, do_bench (median,
L2 flushed between reps) and byte counts, through libnormserve_peer_shim.so (ctypes), so that a
peer's number and ours come from the same timing loop. norm_bench times the same launches with
CUDA events around one call after a cudaMemsetAsync flush, with a sync after every rep; for ours
do_bench read 0-3 % higher at the large shapes and 0.5-1 µs at 1-256 rows
(bench/results/gpu-2026-11-25-round19.md).
Forwards are timed writing no statistics, as peers_bench.py calls Quack's and FlashInfer's
(Liger's and torch's kernels write rstd, LayerNorm's mean too: interleaved.py times ours both
ways). Until round 25 this timed ours writing mean and rstd, 0.5-1.5 % slower at the large bf16
shapes.
Each output is checked against a float32 reference first. Records peer "normserve (do_bench)".

  PYTHONPATH=.peers python3 bench/cuda/ours_do_bench.py SHIM.so bf16|fp32 [MxN ...]
"""
import ctypes
import json
import os
import sys

import torch

os.environ["DTYPE"] = sys.argv[2]  # peers_bench reads it at import
import peers_bench as pb  # noqa: E402

DTYPE_CODE = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}  # normserve's DType
PEER = "normserve (do_bench)"


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.normserve_backward_workspace.restype = ctypes.c_int64
    shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[3:]] or pb.SHAPES
    code = DTYPE_CODE[pb.DTYPE]
    P = lambda t: ctypes.c_void_p(0 if t is None else t.data_ptr())
    I = ctypes.c_int64
    eps = ctypes.c_float(pb.EPS)
    for m, n in shapes:
        s = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        x, r, w, b, dy = pb.inputs(m, n)
        mn = m * n * 2
        o, p = torch.empty_like(x), torch.empty_like(x)
        mean = torch.empty(m, device="cuda", dtype=torch.float32)
        rstd = torch.empty_like(mean)

        def fwd(center, y, bias, res):
            return lambda: lib.normserve_forward(code, center, P(x), P(y), P(w), P(bias), P(o),
                                                 P(res), None, None, I(m), I(n), eps, s)
        for op, center, y, bias, res, ref, nbytes in (
                ("rms_fwd", 0, None, None, None, lambda: pb.rms_ref(x, w), 2 * mn),
                ("ln_fwd", 1, None, b, None, lambda: pb.ln_ref(x, w, b), 2 * mn),
                ("add_rms_fwd", 0, r, None, p, lambda: pb.rms_ref(x + r, w), 4 * mn)):
            f = fwd(center, y, bias, res)
            assert f() == 0
            pb.record(PEER, op, m, n, pb.bench(f), nbytes, pb.err(o, ref()))

        # Backward of saved statistics (the forward's), as the peers' autograd backward has them.
        ws = torch.empty(lib.normserve_backward_workspace(code, I(m), I(n)), device="cuda",
                         dtype=torch.uint8)
        dx = torch.empty_like(x)
        dw = torch.empty(n, device="cuda", dtype=torch.float32)
        db = torch.empty_like(dw)
        dres = torch.randn_like(dy)
        for op, center, src, grad_res, bias, nbytes in (
                ("rms_bwd", 0, x, None, None, 3 * mn),
                ("ln_bwd", 1, x, None, b, 3 * mn),
                ("add_rms_bwd", 0, p, dres, None, 4 * mn)):
            # src's mean / rstd (p = x + r: from add_rms_fwd above)
            assert lib.normserve_forward(code, center, P(src), None, P(w), P(bias), P(o), None,
                                         P(mean), P(rstd), I(m), I(n), eps, s) == 0
            f = lambda: lib.normserve_backward(code, center, P(src), P(dy), P(grad_res), P(mean),
                                               P(rstd), P(w), P(dx), P(dw),
                                               P(db if center else None), P(ws), I(m), I(n), eps, s)
            assert f() == 0
            xs = src.float().requires_grad_()
            ref = (pb.ln_ref(xs, w, b) if center else pb.rms_ref(xs, w))
            (gx,) = torch.autograd.grad(ref, [xs], dy.float())
            if grad_res is not None:
                gx = gx + grad_res.float()
            pb.record(PEER, op, m, n, pb.bench(f), nbytes, pb.err(dx, gx))
    json.dump(pb.ROWS, open(os.path.join(pb.OUT, f"ours_do_bench_{sys.argv[2]}.json"), "w"))


if __name__ == "__main__":
    main()
