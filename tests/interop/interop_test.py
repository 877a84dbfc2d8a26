#!/usr/bin/python3
"""Interop: a Python grpcio client (stubs generated here from our .proto)
calls the C++ server: forward and backward against a NumPy float64
reference written independently of the server, plus health and reflection.

Usage: interop_test.py <normserve-server binary> <proto dir> <grpc-proto dir>
"""
import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np
SERVER, PROTO_DIR, GRPC_PROTO_DIR = sys.argv[1:4]
del sys.argv[1:4]


def generate_stubs(out_dir):
    """Python stubs from our .proto and Debian's health / reflection protos.

    Debian's protoc (3.21) with gRPC's Python plugin: grpc_tools' bundled
    protoc is too old for proto3 `optional`. The standard protos are compiled
    as module `std_protos` (their proto packages, hence the wire names, stay
    grpc.health.v1 / grpc.reflection.v1alpha) so they do not collide with the
    installed `grpc` Python package.
    """
    std_dir = os.path.join(out_dir, "include", "std_protos")
    os.makedirs(std_dir)
    for proto in ("grpc/health/v1/health.proto", "grpc/reflection/v1alpha/reflection.proto"):
        shutil.copy(os.path.join(GRPC_PROTO_DIR, proto), std_dir)
    protos = [
        (PROTO_DIR, "normserve/v1/normserve.proto"),
        (os.path.join(out_dir, "include"), "std_protos/health.proto"),
        (os.path.join(out_dir, "include"), "std_protos/reflection.proto"),
    ]
    for include, proto in protos:
        subprocess.run(["protoc", f"-I{include}", f"--python_out={out_dir}",
                        f"--grpc_python_out={out_dir}",
                        "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin",
                        os.path.join(include, proto)], check=True)
    sys.path.insert(0, out_dir)


STUB_DIR = tempfile.mkdtemp(prefix="normserve-interop-")
atexit.register(shutil.rmtree, STUB_DIR, ignore_errors=True)
generate_stubs(STUB_DIR)
import grpc  # noqa: E402
from std_protos import health_pb2, health_pb2_grpc  # noqa: E402
from std_protos import reflection_pb2, reflection_pb2_grpc  # noqa: E402
from normserve.v1 import normserve_pb2 as pb  # noqa: E402
from normserve.v1 import normserve_pb2_grpc as pb_grpc  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reference_forward(x, w, b, center, eps):
    """Seed 004 in float64: o = (q / sqrt(mean(q^2) + eps)) * w + b."""
    q = x - x.mean(axis=-1, keepdims=True) if center else x
    sigma = np.sqrt((q * q).mean(axis=-1, keepdims=True) + eps)
    return q / sigma * w + b


def reference_backward(x, w, dout, center, eps):
    """Seed 004's backward in float64 for o = r * w + b."""
    d = x.shape[-1]
    q = x - x.mean(axis=-1, keepdims=True) if center else x
    sigma = np.sqrt((q * q).mean(axis=-1, keepdims=True) + eps)
    r = q / sigma
    dr = dout * w
    dq = (dr - (r * dr).sum(axis=-1, keepdims=True) * r / d) / sigma
    dp = dq - dq.mean(axis=-1, keepdims=True) if center else dq
    return dp, (dout * r).sum(axis=0), dout.sum(axis=0)


def tensor(array, dtype):
    wire = {np.float32: pb.DTYPE_FP32, np.float16: pb.DTYPE_FP16}[dtype]
    return pb.Tensor(dtype=wire, shape=list(array.shape),
                     data=np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder("<")).tobytes())


def values(t):
    dtype = {pb.DTYPE_FP32: "<f4", pb.DTYPE_FP16: "<f2"}[t.dtype]
    return np.frombuffer(t.data, dtype=dtype).astype(np.float64).reshape(tuple(t.shape))


def rel_err(out, ref):
    return np.linalg.norm(out - ref) / np.linalg.norm(ref)


class InteropTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.port = free_port()
        cls.server = subprocess.Popen([SERVER, f"--address=127.0.0.1:{cls.port}",
                                       "--metrics_address=",
                                       f"--backend={os.environ.get('NORMSERVE_TEST_BACKEND', 'cpu')}",
                                       "--log_level=warn"])
        cls.channel = grpc.insecure_channel(f"127.0.0.1:{cls.port}")
        grpc.channel_ready_future(cls.channel).result(timeout=20)
        cls.stub = pb_grpc.NormalizerStub(cls.channel)
        cls.rng = np.random.default_rng(2026)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.server.send_signal(signal.SIGTERM)
        cls.server.wait(timeout=30)

    def test_forward_matches_numpy_reference(self):
        for kind, center in ((pb.LAYER_NORM, True), (pb.RMS_NORM, False)):
            for dtype, tol in ((np.float32, 1e-5), (np.float16, 2e-3)):
                with self.subTest(kind=kind, dtype=dtype):
                    x = self.rng.standard_normal((3, 7, 96)).astype(dtype)
                    w = (1 + 0.2 * self.rng.standard_normal(96)).astype(dtype)
                    b = self.rng.standard_normal(96).astype(dtype)
                    reply = self.stub.Forward(pb.ForwardRequest(
                        config=pb.NormConfig(kind=kind, eps=1e-5), x=tensor(x, dtype),
                        params=pb.Params(weight=tensor(w, dtype), bias=tensor(b, dtype))), timeout=10)
                    ref = reference_forward(x.astype(np.float64), w.astype(np.float64),
                                            b.astype(np.float64), center, 1e-5)
                    self.assertEqual(tuple(reply.output.shape), x.shape)
                    self.assertLess(rel_err(values(reply.output), ref), tol)

    def test_backward_matches_numpy_reference(self):
        for kind, center in ((pb.LAYER_NORM, True), (pb.RMS_NORM, False)):
            with self.subTest(kind=kind):
                x = self.rng.standard_normal((9, 130)).astype(np.float32)
                w = (1 + 0.2 * self.rng.standard_normal(130)).astype(np.float32)
                dout = self.rng.standard_normal((9, 130)).astype(np.float32)
                reply = self.stub.Backward(pb.BackwardRequest(
                    config=pb.NormConfig(kind=kind, eps=1e-5), x=tensor(x, np.float32),
                    params=pb.Params(weight=tensor(w, np.float32)),
                    grad_output=tensor(dout, np.float32),
                    want_grad_weight=True, want_grad_bias=True), timeout=10)
                dx, dw, db = reference_backward(x.astype(np.float64), w.astype(np.float64),
                                                dout.astype(np.float64), center, 1e-5)
                self.assertLess(rel_err(values(reply.grad_input), dx), 1e-5)
                self.assertLess(rel_err(values(reply.grad_weight), dw), 1e-5)
                self.assertLess(rel_err(values(reply.grad_bias), db), 1e-5)

    def test_bad_input_is_invalid_argument_naming_the_field(self):
        x = np.ones((2, 8), np.float32)
        bad = tensor(x, np.float32)
        bad.data = bad.data[:-4]
        with self.assertRaises(grpc.RpcError) as caught:
            self.stub.Forward(pb.ForwardRequest(config=pb.NormConfig(kind=pb.RMS_NORM), x=bad),
                              timeout=10)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("x.data has 60 bytes", caught.exception.details())

    def test_health_reports_serving(self):
        health = health_pb2_grpc.HealthStub(self.channel)
        for service in ("", "normserve.v1.Normalizer"):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            self.assertEqual(reply.status, health_pb2.HealthCheckResponse.SERVING)

    def test_reflection_lists_the_services(self):
        reflection = reflection_pb2_grpc.ServerReflectionStub(self.channel)
        replies = reflection.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10)
        names = {s.name for reply in replies for s in reply.list_services_response.service}
        self.assertIn("normserve.v1.Normalizer", names)
        self.assertIn("grpc.health.v1.Health", names)


if __name__ == "__main__":
    unittest.main(verbosity=2)
