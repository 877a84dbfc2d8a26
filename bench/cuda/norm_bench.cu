// GPU benchmark of the normserve kernels through the device-pointer API
// (kernels/cuda/launch.h), measured the way /work/shared/perf/peers_bench.py
// measures the peers (triton's do_bench): per repetition, flush L2 by writing a
// 256 MiB buffer, then time one call with CUDA events; report the median.
// GB/s counts the minimum bytes: fwd 2·m·n·s, fused add 4·m·n·s, bwd 3·m·n·s,
// fused add bwd 4·m·n·s (add_rms_bwd: read the saved p = x + y, dy and the
// incoming gradient of p, write dx, as the peers do: fused_bwd_peers.py) or
// 5·m·n·s (add_rms_bwd_xy: x and y instead of p). add_ln_fwd / add_ln_bwd /
// add_ln_bwd_xy: the same with LayerNorm (a bias, and db), not in the default --ops.
//
// Each (op, shape, dtype) is also checked: outputs poisoned before the first
// call, then sampled rows (and dw / db where the shape is small enough)
// compared with a float64 host computation; the max relative error is printed.
//
//   norm_bench [--dtype bf16,fp32] [--shapes 32768x4096,1x4096] [--reps 100] [--json out.jsonl]
//     [--stats 1] [--one-buffer 1] [--queue 1]
// --stats 1: the timed forward also writes each row's mean and rstd, as a
// forward that saves its statistics for backward does (and as the peers'
// harness times ours: bench/cuda/ours_do_bench.py).
// --queue 1: every repetition is queued before the first is waited for, as
// do_bench queues them, rather than each waited for before the next.
// --one-buffer 1: a shape's tensors are carved from one allocation, inputs
// before outputs, as the CUDA backend places a batch (cuda_backend.cc's
// Layout), rather than one cudaMalloc each (bench/results/
// gpu-2026-11-26-round25.md, call 2: forward within 0.5 %, fp32 backward up to
// 1 % slower).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/launch.h"

namespace {

using normserve::kernels::DType;
using normserve::kernels::DTypeName;
using normserve::kernels::DTypeSize;
using namespace normserve::kernels::cuda;

#define CHECK_CUDA(call)                                                              \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(err_));                                         \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

constexpr float kEps = 1e-6f;

// Deterministic pseudo-normal fill on the device: value = mean + stddev * z.
__device__ float HashNormal(uint64_t seed, uint64_t i) {
  auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  const uint64_t a = mix(seed * 0x100000001b3ull + 2 * i), b = mix(seed * 0x100000001b3ull + 2 * i + 1);
  const float u1 = ((a >> 40) + 1) * (1.0f / 16777217.0f);
  const float u2 = (b >> 40) * (1.0f / 16777216.0f);
  return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

template <typename T>
__global__ void FillKernel(T* out, int64_t n, uint64_t seed, float mean, float stddev) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = mean + stddev * HashNormal(seed, i);
    if constexpr (sizeof(T) == 4) {
      out[i] = v;
    } else if constexpr (std::is_same_v<T, __half>) {
      out[i] = __float2half_rn(v);
    } else {
      out[i] = __float2bfloat16_rn(v);
    }
  }
}

void Fill(DType dtype, void* p, int64_t n, uint64_t seed, float mean, float stddev) {
  const int blocks = 132 * 8;
  switch (dtype) {
    case DType::kF32:
      FillKernel<<<blocks, 256>>>(static_cast<float*>(p), n, seed, mean, stddev);
      break;
    case DType::kF16:
      FillKernel<<<blocks, 256>>>(static_cast<__half*>(p), n, seed, mean, stddev);
      break;
    case DType::kBF16:
      FillKernel<<<blocks, 256>>>(static_cast<__nv_bfloat16*>(p), n, seed, mean, stddev);
      break;
  }
  CHECK_CUDA(cudaGetLastError());
}

double HostValue(DType dtype, const void* base, int64_t i) {
  if (dtype == DType::kF32) return static_cast<const float*>(base)[i];
  const uint16_t bits = static_cast<const uint16_t*>(base)[i];
  if (dtype == DType::kBF16) {
    const uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  __half h;
  std::memcpy(&h, &bits, 2);
  return __half2float(h);
}

// acc = max(acc, v), where a NaN v (an unwritten, poisoned output) wins.
void Worse(double& acc, double v) {
  if (!(v <= acc)) acc = v;
}

std::vector<char> ToHost(const void* dev, size_t bytes) {
  std::vector<char> host(bytes);
  CHECK_CUDA(cudaMemcpy(host.data(), dev, bytes, cudaMemcpyDeviceToHost));
  return host;
}

struct Buffers {
  void *x, *y, *w, *b, *out, *res, *dy, *dres, *dx;
  float *mean, *rstd, *dw, *db;
  void* ws;
  size_t ws_bytes;
  void* whole;  // the one allocation of --one-buffer, or null
};

// A shape's tensors: one cudaMalloc each (rounded up to 16 bytes: inputs may
// be read in whole aligned 16-byte words, kernels/cuda/launch.h), or
// (one_buffer) consecutive 256-byte-aligned regions of one allocation, inputs
// first.
Buffers Allocate(int64_t m, int64_t n, size_t elem, size_t ws_bytes, bool one_buffer) {
  const size_t rows = static_cast<size_t>(m) * n * elem, row = static_cast<size_t>(n) * elem;
  const size_t stats = static_cast<size_t>(m) * 4, columns = static_cast<size_t>(n) * 4;
  Buffers b{};
  b.ws_bytes = ws_bytes;
  struct Region {
    void** at;
    size_t bytes;
  };
  const Region regions[] = {{&b.x, rows},
                            {&b.y, rows},
                            {&b.dy, rows},
                            {&b.dres, rows},
                            {&b.w, row},
                            {&b.b, row},
                            {&b.out, rows},
                            {&b.res, rows},
                            {reinterpret_cast<void**>(&b.mean), stats},
                            {reinterpret_cast<void**>(&b.rstd), stats},
                            {&b.dx, rows},
                            {reinterpret_cast<void**>(&b.dw), columns},
                            {reinterpret_cast<void**>(&b.db), columns},
                            {&b.ws, ws_bytes}};
  auto aligned = [](size_t bytes) { return (bytes + 255) / 256 * 256; };
  if (!one_buffer) {
    for (const Region& r : regions) CHECK_CUDA(cudaMalloc(r.at, (r.bytes + 15) / 16 * 16));
    return b;
  }
  size_t total = 0;
  for (const Region& r : regions) total += aligned(r.bytes);
  CHECK_CUDA(cudaMalloc(&b.whole, total));
  size_t offset = 0;
  for (const Region& r : regions) {
    *r.at = static_cast<char*>(b.whole) + offset;
    offset += aligned(r.bytes);
  }
  return b;
}

void Free(const Buffers& b) {
  if (b.whole != nullptr) {
    CHECK_CUDA(cudaFree(b.whole));
    return;
  }
  for (void* p : {b.x, b.y, b.out, b.res, b.dy, b.dres, b.dx, b.w, b.b, b.ws})
    CHECK_CUDA(cudaFree(p));
  for (float* p : {b.mean, b.rstd, b.dw, b.db}) CHECK_CUDA(cudaFree(p));
}

enum class Op {
  kRmsFwd, kLnFwd, kAddRmsFwd, kAddLnFwd, kRmsBwd, kLnBwd, kAddRmsBwd, kAddRmsBwdXy, kAddLnBwd,
  kAddLnBwdXy, kCopy
};
constexpr Op kOps[] = {Op::kRmsFwd, Op::kLnFwd,     Op::kAddRmsFwd,   Op::kAddLnFwd, Op::kRmsBwd,
                       Op::kLnBwd,  Op::kAddRmsBwd, Op::kAddRmsBwdXy, Op::kAddLnBwd,
                       Op::kAddLnBwdXy, Op::kCopy};
const char* OpName(Op op) {
  switch (op) {
    case Op::kRmsFwd: return "rms_fwd";
    case Op::kLnFwd: return "ln_fwd";
    case Op::kAddRmsFwd: return "add_rms_fwd";
    case Op::kAddLnFwd: return "add_ln_fwd";
    case Op::kRmsBwd: return "rms_bwd";
    case Op::kLnBwd: return "ln_bwd";
    case Op::kAddRmsBwd: return "add_rms_bwd";
    case Op::kAddRmsBwdXy: return "add_rms_bwd_xy";
    case Op::kAddLnBwd: return "add_ln_bwd";
    case Op::kAddLnBwdXy: return "add_ln_bwd_xy";
    case Op::kCopy: return "copy";
  }
  return "?";
}
bool IsFusedBackward(Op op) {
  return op == Op::kAddRmsBwd || op == Op::kAddRmsBwdXy || op == Op::kAddLnBwd ||
         op == Op::kAddLnBwdXy;
}
// Whether the backward's x is the p saved by a fused forward (no y).
bool ReadsSavedP(Op op) { return op == Op::kAddRmsBwd || op == Op::kAddLnBwd; }
bool IsFusedForward(Op op) { return op == Op::kAddRmsFwd || op == Op::kAddLnFwd; }
bool IsBackward(Op op) { return op == Op::kRmsBwd || op == Op::kLnBwd || IsFusedBackward(op); }
// Whether the op reads x and y (p = x + y formed in the kernel).
bool ReadsXAndY(Op op) {
  return IsFusedForward(op) || op == Op::kAddRmsBwdXy || op == Op::kAddLnBwdXy;
}
// LayerNorm with a bias (and db in the backward).
bool IsLn(Op op) {
  return op == Op::kLnFwd || op == Op::kLnBwd || op == Op::kAddLnFwd || op == Op::kAddLnBwd ||
         op == Op::kAddLnBwdXy;
}

ForwardArgs MakeForward(Op op, DType dtype, int64_t m, int64_t n, const Buffers& b, bool stats) {
  ForwardArgs a;
  a.dtype = dtype;
  a.residual_dtype = dtype;
  a.rows = m;
  a.hidden = n;
  a.norm.center = IsLn(op);
  a.norm.eps = kEps;
  a.norm.scale = 1.0f;
  a.norm.stat_len = n;
  a.x = b.x;
  a.weight = b.w;
  a.bias = IsLn(op) ? b.b : nullptr;
  a.out = b.out;
  if (IsFusedForward(op)) {
    a.y = b.y;
    a.residual_out = b.res;
  }
  if (stats) {
    a.mean = b.mean;
    a.rstd = b.rstd;
  }
  return a;
}

BackwardArgs MakeBackward(Op op, DType dtype, int64_t m, int64_t n, const Buffers& b) {
  BackwardArgs a;
  a.dtype = dtype;
  a.residual_dtype = dtype;
  a.rows = m;
  a.hidden = n;
  a.norm.center = IsLn(op);
  a.norm.eps = kEps;
  a.norm.scale = 1.0f;
  a.norm.stat_len = n;
  a.x = b.x;
  a.grad_out = b.dy;
  a.mean = b.mean;
  a.rstd = b.rstd;
  a.weight = b.w;
  a.grad_in = b.dx;
  a.grad_weight = b.dw;
  a.grad_bias = IsLn(op) ? b.db : nullptr;
  a.workspace = b.ws;
  if (IsFusedBackward(op)) a.grad_residual_out = b.dres;
  if (ReadsSavedP(op)) a.x = b.res;  // p, saved by the forward
  if (op == Op::kAddRmsBwdXy || op == Op::kAddLnBwdXy) a.y = b.y;
  return a;
}

// Max relative error (max |ours - ref| / max(1, |ref|) style: normalized by the
// reference's max magnitude) of sampled rows, and of dw / db when checked.
double Check(Op op, DType dtype, int64_t m, int64_t n, const Buffers& b) {
  const size_t s = DTypeSize(dtype);
  const int64_t rows_all = m;
  std::vector<int64_t> rows = {0, m / 2, m - 1};
  const bool full = static_cast<double>(m) * n <= 16.0 * 1024 * 1024 && IsBackward(op);
  if (full) {
    rows.clear();
    for (int64_t r = 0; r < m; ++r) rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  auto w = ToHost(b.w, n * s), bias = ToHost(b.b, n * s);
  double max_err = 0.0, max_ref = 0.0;
  std::vector<double> dw(n, 0.0), db(n, 0.0);
  for (int64_t r : rows) {
    const void* x_dev = ReadsSavedP(op) ? b.res : b.x;
    auto x = ToHost(static_cast<const char*>(x_dev) + r * n * s, n * s);
    std::vector<double> p(n);
    for (int64_t i = 0; i < n; ++i) p[i] = HostValue(dtype, x.data(), i);
    if (ReadsXAndY(op)) {
      auto y = ToHost(static_cast<char*>(b.y) + r * n * s, n * s);
      for (int64_t i = 0; i < n; ++i) p[i] += HostValue(dtype, y.data(), i);
    }
    double mean = 0.0;
    if (IsLn(op)) {
      for (double v : p) mean += v;
      mean /= n;
    }
    double ss = 0.0;
    for (double v : p) ss += (v - mean) * (v - mean);
    const double rstd = 1.0 / std::sqrt(ss / n + kEps);
    if (!IsBackward(op)) {
      auto o = ToHost(static_cast<char*>(b.out) + r * n * s, n * s);
      for (int64_t i = 0; i < n; ++i) {
        const double ref = (p[i] - mean) * rstd * HostValue(dtype, w.data(), i) +
                           (IsLn(op) ? HostValue(dtype, bias.data(), i) : 0.0);
        Worse(max_err, std::fabs(HostValue(dtype, o.data(), i) - ref));
        max_ref = std::max(max_ref, std::fabs(ref));
      }
      continue;
    }
    auto dyh = ToHost(static_cast<char*>(b.dy) + r * n * s, n * s);
    auto dxh = ToHost(static_cast<char*>(b.dx) + r * n * s, n * s);
    std::vector<char> dres;
    if (IsFusedBackward(op)) dres = ToHost(static_cast<char*>(b.dres) + r * n * s, n * s);
    std::vector<double> rr(n), dr(n);
    double dot = 0.0, sum_dr = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double dy = HostValue(dtype, dyh.data(), i);
      rr[i] = (p[i] - mean) * rstd;
      dr[i] = dy * HostValue(dtype, w.data(), i);
      dot += rr[i] * dr[i];
      sum_dr += dr[i];
      dw[i] += dy * rr[i];
      db[i] += dy;
    }
    std::vector<double> dq(n);
    double sum_dq = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      dq[i] = rstd * (dr[i] - rr[i] * dot / n);
      sum_dq += dq[i];
    }
    for (int64_t i = 0; i < n; ++i) {
      const double ref = dq[i] - (IsLn(op) ? sum_dq / n : 0.0) +
                         (dres.empty() ? 0.0 : HostValue(dtype, dres.data(), i));
      Worse(max_err, std::fabs(HostValue(dtype, dxh.data(), i) - ref));
      max_ref = std::max(max_ref, std::fabs(ref));
    }
  }
  double rel = max_ref > 0 ? max_err / max_ref : max_err;
  if (full && rows_all == static_cast<int64_t>(rows.size())) {
    std::vector<float> dwg(n), dbg(n);
    CHECK_CUDA(cudaMemcpy(dwg.data(), b.dw, n * 4, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(dbg.data(), b.db, n * 4, cudaMemcpyDeviceToHost));
    double e = 0.0, ref = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      Worse(e, std::fabs(dwg[i] - dw[i]));
      ref = std::max(ref, std::fabs(dw[i]));
      if (IsLn(op)) {
        Worse(e, std::fabs(dbg[i] - db[i]));
        ref = std::max(ref, std::fabs(db[i]));
      }
    }
    Worse(rel, ref > 0 ? e / ref : e);
  }
  return rel;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dtypes = "bf16,fp32";
  std::string shapes =
      "32768x4096,16384x8192,8192x16384,65536x1024,4096x5000,4096x4096,256x4096,1x4096";
  std::string ops = "rms_fwd,ln_fwd,add_rms_fwd,rms_bwd,ln_bwd,add_rms_bwd,add_rms_bwd_xy,copy";
  int reps = 100;
  bool stats = false;
  bool one_buffer = false;
  bool queue = false;
  std::string json_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--dtype") dtypes = argv[i + 1];
    else if (flag == "--shapes") shapes = argv[i + 1];
    else if (flag == "--ops") ops = argv[i + 1];
    else if (flag == "--reps") reps = std::atoi(argv[i + 1]);
    else if (flag == "--json") json_path = argv[i + 1];
    else if (flag == "--stats") stats = std::atoi(argv[i + 1]) != 0;
    else if (flag == "--one-buffer") one_buffer = std::atoi(argv[i + 1]) != 0;
    else if (flag == "--queue") queue = std::atoi(argv[i + 1]) != 0;
  }
  FILE* json = json_path.empty() ? nullptr : std::fopen(json_path.c_str(), "w");
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MB\n\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize >> 20);
  std::printf("| op | m×n | dtype | µs (median) | GB/s | rel err |\n|---|---|---|---|---|---|\n");

  const size_t flush_bytes = 256u << 20;
  void* flush;
  CHECK_CUDA(cudaMalloc(&flush, flush_bytes));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));

  for (const std::string& dname : Split(dtypes, ',')) {
    const DType dtype = dname == "fp32" ? DType::kF32 : dname == "fp16" ? DType::kF16 : DType::kBF16;
    const size_t s = DTypeSize(dtype);
    for (const std::string& shape : Split(shapes, ',')) {
      const auto mn = Split(shape, 'x');
      const int64_t m = std::atoll(mn[0].c_str()), n = std::atoll(mn[1].c_str());
      const size_t bytes = static_cast<size_t>(m) * n * s;
      const int chunks = [&] {  // of any op's layout (ChooseBackwardRowLayout)
        int most = 0;
        for (const bool center : {false, true}) {
          for (const bool y : {false, true}) {
            SegmentPlan plan;
            plan.rows = m;
            most = std::max(most, PlanBackward(dtype, n, true, center, y, &plan, 1));
          }
        }
        return most;
      }();
      Buffers b = Allocate(m, n, s, BackwardWorkspaceBytes(n, chunks), one_buffer);
      const uint64_t seed = m * 7 + n;
      Fill(dtype, b.x, m * n, seed, 0.0f, 1.0f);
      Fill(dtype, b.y, m * n, seed + 1, 0.0f, 1.0f);
      Fill(dtype, b.dy, m * n, seed + 2, 0.0f, 1.0f);
      Fill(dtype, b.dres, m * n, seed + 5, 0.0f, 1.0f);
      Fill(dtype, b.w, n, seed + 3, 1.0f, 0.1f);
      Fill(dtype, b.b, n, seed + 4, 0.0f, 0.1f);

      for (const std::string& oname : Split(ops, ',')) {
        Op op = Op::kCopy;
        for (Op o : kOps) {
          if (oname == OpName(o)) op = o;
        }
        // Saved statistics for backward come from a forward of the same kind.
        if (IsBackward(op)) {
          const Op forward = op == Op::kLnBwd                                 ? Op::kLnFwd
                             : op == Op::kAddLnBwd || op == Op::kAddLnBwdXy ? Op::kAddLnFwd
                             : IsFusedBackward(op) ? Op::kAddRmsFwd
                                                   : Op::kRmsFwd;
          CHECK_CUDA(LaunchForward(MakeForward(forward, dtype, m, n, b, true), stream));
        }
        CHECK_CUDA(cudaMemsetAsync(b.out, 0xff, bytes, stream));  // poison: NaN in every dtype
        CHECK_CUDA(cudaMemsetAsync(b.dx, 0xff, bytes, stream));
        CHECK_CUDA(cudaMemsetAsync(b.dw, 0xff, n * 4, stream));
        CHECK_CUDA(cudaMemsetAsync(b.db, 0xff, n * 4, stream));
        auto call = [&] {
          switch (op) {
            case Op::kCopy:
              return cudaMemcpyAsync(b.out, b.x, bytes, cudaMemcpyDeviceToDevice, stream);
            case Op::kRmsFwd:
            case Op::kLnFwd:
            case Op::kAddRmsFwd:
            case Op::kAddLnFwd:
              return LaunchForward(MakeForward(op, dtype, m, n, b, stats), stream);
            default:
              return LaunchBackward(MakeBackward(op, dtype, m, n, b), stream);
          }
        };
        CHECK_CUDA(call());
        CHECK_CUDA(cudaStreamSynchronize(stream));
        const double err = op == Op::kCopy ? 0.0 : Check(op, dtype, m, n, b);
        for (int i = 0; i < 5; ++i) CHECK_CUDA(call());
        std::vector<float> times;
        std::vector<cudaEvent_t> starts(queue ? reps : 1, start), stops(queue ? reps : 1, stop);
        if (queue) {
          for (int i = 0; i < reps; ++i) {
            CHECK_CUDA(cudaEventCreate(&starts[i]));
            CHECK_CUDA(cudaEventCreate(&stops[i]));
          }
        }
        for (int i = 0; i < reps; ++i) {
          const int e = queue ? i : 0;
          CHECK_CUDA(cudaMemsetAsync(flush, i & 0xff, flush_bytes, stream));
          CHECK_CUDA(cudaEventRecord(starts[e], stream));
          CHECK_CUDA(call());
          CHECK_CUDA(cudaEventRecord(stops[e], stream));
          if (queue && i + 1 < reps) continue;
          CHECK_CUDA(cudaEventSynchronize(stops[e]));
          for (int j = queue ? 0 : e; j <= e; ++j) {
            float ms;
            CHECK_CUDA(cudaEventElapsedTime(&ms, starts[j], stops[j]));
            times.push_back(ms);
          }
        }
        if (queue) {
          for (int i = 0; i < reps; ++i) {
            CHECK_CUDA(cudaEventDestroy(starts[i]));
            CHECK_CUDA(cudaEventDestroy(stops[i]));
          }
        }
        std::sort(times.begin(), times.end());
        const double ms = times[times.size() / 2];
        const double factor = op == Op::kAddRmsBwdXy || op == Op::kAddLnBwdXy ? 5
                              : IsFusedForward(op) || ReadsSavedP(op)        ? 4
                              : IsBackward(op)                              ? 3
                                                                            : 2;
        const double gbs = factor * m * n * s / (ms * 1e-3) / 1e9;
        std::printf("| %s | %lldx%lld | %s | %.1f | %.0f | %.1e |\n", OpName(op),
                    static_cast<long long>(m), static_cast<long long>(n),
                    std::string(DTypeName(dtype)).c_str(), ms * 1e3, gbs, err);
        std::fflush(stdout);
        if (json != nullptr) {
          std::fprintf(json,
                       "{\"peer\": \"normserve\", \"op\": \"%s\", \"m\": %lld, \"n\": %lld, "
                       "\"dtype\": \"%s\", \"us\": %.2f, \"gbs\": %.1f, \"max_err\": %.3e}\n",
                       OpName(op), static_cast<long long>(m), static_cast<long long>(n),
                       dname == "fp32" ? "float32" : dname == "fp16" ? "float16" : "bfloat16",
                       ms * 1e3, gbs, err);
          std::fflush(json);
        }
      }
      Free(b);
    }
  }
  if (json != nullptr) std::fclose(json);
  return 0;
}
