// CPU backend throughput: forward (LayerNorm, RMSNorm, fused add + RMSNorm)
// and backward (RMSNorm, LayerNorm) in fp32 and bf16 at serving shapes, and a
// memcpy moving the same bytes on the same number of threads.
//
// bytes_per_second counts the bytes an op must move (peers_bench.py's
// convention): forward reads x and writes o (2 m n e); fused add reads x, y
// and writes o, p (4 m n e); backward reads x, dy and writes dx (3 m n e).
// Weights, row statistics and dw / db are not counted.
//
//   normserve_cpu_bench --threads=2 --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "normserve/kernels/backend.h"
#include "normserve/kernels/half.h"
#include "row_pool.h"

namespace normserve::kernels {
namespace {

int g_threads = 2;  // --threads=N

struct Shape {
  int64_t rows;
  int64_t hidden;
};
constexpr Shape kShapes[] = {{4096, 1024}, {1024, 4096}, {256, 4096}, {1, 4096}, {512, 8192}};

// Random N(0, 1) values stored in dtype.
std::vector<uint8_t> RandomBytes(DType dtype, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<uint8_t> bytes(n * DTypeSize(dtype));
  for (int64_t i = 0; i < n; ++i) {
    const float v = normal(rng);
    if (dtype == DType::kF32) {
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    } else {
      const uint16_t h = dtype == DType::kF16 ? FloatToHalf(v) : FloatToBFloat16(v);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

enum class Op {
  kLayerNormForward,
  kRmsNormForward,
  kAddRmsNormForward,
  kRmsNormBackward,
  kLayerNormBackward
};

int BytesFactor(Op op) {
  switch (op) {
    case Op::kLayerNormForward:
    case Op::kRmsNormForward:
      return 2;
    case Op::kAddRmsNormForward:
      return 4;
    case Op::kRmsNormBackward:
    case Op::kLayerNormBackward:
      return 3;
  }
  return 0;
}

void BM_Norm(benchmark::State& state, Op op, DType dtype, Shape shape) {
  const int64_t n = shape.rows * shape.hidden;
  const std::unique_ptr<Backend> backend = MakeCpuBackend({.threads = g_threads});
  const std::vector<uint8_t> x = RandomBytes(dtype, n, 1);
  const std::vector<uint8_t> y = RandomBytes(dtype, n, 2);
  const std::vector<uint8_t> dy = RandomBytes(dtype, n, 3);
  const std::vector<uint8_t> weight = RandomBytes(dtype, shape.hidden, 4);
  const std::vector<uint8_t> bias = RandomBytes(dtype, shape.hidden, 5);
  std::vector<uint8_t> out(n * DTypeSize(dtype));
  std::vector<uint8_t> residual_out(n * DTypeSize(dtype));
  std::vector<float> mean(shape.rows), rstd(shape.rows);
  std::vector<float> grad_weight(shape.hidden), grad_bias(shape.hidden);
  const bool layer_norm = op == Op::kLayerNormForward || op == Op::kLayerNormBackward;
  NormConfig config;
  config.center = layer_norm;
  config.eps = 1e-6f;

  ForwardBatch forward;
  forward.config = config;
  forward.dtype = forward.residual_dtype = dtype;
  forward.hidden = shape.hidden;
  forward.weight = weight.data();
  forward.bias = layer_norm ? bias.data() : nullptr;
  ForwardSegment segment;
  segment.rows = shape.rows;
  segment.x = x.data();
  segment.out = out.data();
  segment.mean = mean.data();
  segment.rstd = rstd.data();
  if (op == Op::kAddRmsNormForward) {
    segment.y = y.data();
    segment.residual_out = residual_out.data();
    segment.mean = segment.rstd = nullptr;
  }
  forward.segments = {segment};
  // Backward starts from the forward's saved statistics, as training does.
  if (!backend->Forward(forward).ok()) state.SkipWithError("forward failed");

  BackwardBatch backward;
  backward.config = config;
  backward.dtype = backward.residual_dtype = dtype;
  backward.hidden = shape.hidden;
  backward.weight = weight.data();
  BackwardSegment grad;
  grad.rows = shape.rows;
  grad.x = x.data();
  grad.grad_out = dy.data();
  grad.mean = mean.data();
  grad.rstd = rstd.data();
  grad.grad_in = out.data();
  grad.grad_weight = grad_weight.data();
  grad.grad_bias = layer_norm ? grad_bias.data() : nullptr;
  backward.segments = {grad};

  const bool is_backward = op == Op::kRmsNormBackward || op == Op::kLayerNormBackward;
  for (auto _ : state) {
    const absl::Status status =
        is_backward ? backend->Backward(backward) : backend->Forward(forward);
    if (!status.ok()) state.SkipWithError(std::string(status.message()).c_str());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * BytesFactor(op) * n *
                          static_cast<int64_t>(DTypeSize(dtype)));
}

// memcpy of bytes / 2 (read bytes / 2, write bytes / 2), split over the same
// number of threads as the backend, in 64 KiB pieces.
void BM_Memcpy(benchmark::State& state, int64_t bytes) {
  const int64_t half = bytes / 2;
  std::vector<uint8_t> src(half, 1), dst(half);
  cpu::RowPool pool(g_threads);
  constexpr int64_t kPiece = 64 * 1024;
  const int64_t pieces = (half + kPiece - 1) / kPiece;
  for (auto _ : state) {
    pool.ParallelFor(pieces, [&](int64_t p) {
      const int64_t begin = p * kPiece;
      std::memcpy(dst.data() + begin, src.data() + begin, std::min(kPiece, half - begin));
    });
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

const char* OpName(Op op) {
  switch (op) {
    case Op::kLayerNormForward:
      return "ln_fwd";
    case Op::kRmsNormForward:
      return "rms_fwd";
    case Op::kAddRmsNormForward:
      return "add_rms_fwd";
    case Op::kRmsNormBackward:
      return "rms_bwd";
    case Op::kLayerNormBackward:
      return "ln_bwd";
  }
  return "";
}

void RegisterAll() {
  const Op ops[] = {Op::kLayerNormForward, Op::kRmsNormForward, Op::kAddRmsNormForward,
                    Op::kRmsNormBackward, Op::kLayerNormBackward};
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (Op op : ops) {
      for (const Shape& shape : kShapes) {
        const std::string name =
            absl::StrCat(OpName(op), "/", DTypeName(dtype), "/", shape.rows, "x", shape.hidden);
        benchmark::RegisterBenchmark(name.c_str(), BM_Norm, op, dtype, shape)->UseRealTime();
        const int64_t bytes =
            BytesFactor(op) * shape.rows * shape.hidden * static_cast<int64_t>(DTypeSize(dtype));
        benchmark::RegisterBenchmark(("memcpy_same_bytes/" + name).c_str(), BM_Memcpy, bytes)
            ->UseRealTime();
      }
    }
  }
}

}  // namespace
}  // namespace normserve::kernels

int main(int argc, char** argv) {
  // --threads=N (default 2) before Google Benchmark sees the flags.
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      normserve::kernels::g_threads = std::atoi(argv[i] + 10);
    } else {
      args.push_back(argv[i]);
    }
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  normserve::kernels::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
