// Forward kernels (seed 004 with seed 003's partial statistic), per row:
//   p = x + y;  q = p - mean(p) (LayerNorm) or p (RMSNorm)
//   rstd = 1 / sqrt(sum_{i<k} q_i^2 / k + eps)
//   o = (q * rstd * scale) * w + b          scale = c / sqrt(d)
// y, w and b default to 0, 1 and 0; p is always formed as x + y (adding a
// zero when y is absent), so a row's bits do not depend on whether its
// neighbours in the batch carried a residual.
#ifndef NORMSERVE_KERNELS_CUDA_FORWARD_KERNELS_CUH_
#define NORMSERVE_KERNELS_CUDA_FORWARD_KERNELS_CUH_

#include "async_copy.cuh"
#include "launch.h"
#include "row_layout.h"
#include "row_ops.cuh"

namespace normserve::kernels::cuda {

// Adds q * q of the vector at column `col` to `sum`, counting only elements
// inside the statistic (index < k). Every kernel sums squares through this one
// function, with explicit fused multiply-adds: left to the compiler, the same
// source was contracted to FFMA in one kernel and FMUL + FADD in another, and
// the staged fused forward and the register forward of one hidden size
// disagreed in the last bit (DeterminismTest, hidden 20000,
// bench/results/gpu-2026-11-23-round6.md). A vector wholly inside k skips the
// per-element test: fma(q, 0, sum) == sum, so both forms give the same bits.
template <int VEC>
__device__ __forceinline__ void AddSquaresBelow(const float (&q)[VEC], int col, int k, float& sum) {
  if (col + VEC <= k) {
#pragma unroll
    for (int i = 0; i < VEC; ++i) sum = __fmaf_rn(q[i], q[i], sum);
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) sum = __fmaf_rn(q[i], col + i < k ? q[i] : 0.0f, sum);
  }
}

// Row statistics of a row group's row. `load(it, v)` fills v with the fp32
// values of the thread's vector `it` (zeros past the row's end); every caller
// forms them the same way, so the statistics' bits depend on the row alone.
// kCenter (LayerNorm) subtracts the mean; RMSNorm's mean is the constant 0,
// and p - 0.0f is p exactly, so the compiler drops it without changing a bit.
template <bool kCenter, int VEC, int ITERS, typename Load, typename Scratch>
__device__ __forceinline__ void RowStatsOf(Load load, int tpr, int t, int d,
                                           const NormScalars& norm, Scratch& scratch, float& mean,
                                           float& rstd) {
  mean = 0.0f;
  if constexpr (kCenter) {
    float sum[1] = {0.0f};
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      float p[VEC];
      load(it, p);
#pragma unroll
      for (int i = 0; i < VEC; ++i) sum[0] += p[i];
    }
    GroupSum(sum, tpr, scratch);
    mean = sum[0] / static_cast<float>(d);
  }
  const int k = static_cast<int>(norm.stat_len);
  float sum_sq[1] = {0.0f};
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    float q[VEC];
    load(it, q);
#pragma unroll
    for (int i = 0; i < VEC; ++i) q[i] -= mean;
    AddSquaresBelow(q, (it * tpr + t) * VEC, k, sum_sq[0]);
  }
  GroupSum(sum_sq, tpr, scratch);
  rstd = 1.0f / sqrtf(sum_sq[0] / static_cast<float>(k) + norm.eps);
}

// Row statistics from the fp32 row held in registers (padding holds zeros).
template <bool kCenter, int VEC, int ITERS, typename Scratch>
__device__ __forceinline__ void RowStats(const float (&p)[ITERS][VEC], int tpr, int t, int d,
                                         const NormScalars& norm, Scratch& scratch, float& mean,
                                         float& rstd) {
  RowStatsOf<kCenter, VEC, ITERS>(
      [&](int it, float(&v)[VEC]) {
#pragma unroll
        for (int i = 0; i < VEC; ++i) v[i] = p[it][i];
      },
      tpr, t, d, norm, scratch, mean, rstd);
}

// Where a ForwardKernel thread keeps its vectors of the row between the
// statistics and the output:
//  - kFloats: p = x + y as fp32 registers;
//  - kPacked (a launch with neither y nor residual_out, 16-bit storage): x as
//    stored, in half the registers, and p = x + 0.0f formed where used: the
//    fused kernels' bits (x + 0.0f turns -0 into +0), one more add per use;
//  - kShared (fused 16-bit launches, not latency-bound: forward_launch.cuh):
//    p as fp32 in shared memory (SharedFloatRow, each thread its own vectors,
//    so no barrier), which frees the row's registers for more rows in flight.
enum class RowStorage { kFloats, kPacked, kShared };

template <typename T, int VEC, int ITERS, RowStorage kRow>
struct ForwardRow {
  float p[ITERS][VEC];
  __device__ __forceinline__ void Set(int it, const float (&v)[VEC]) {
#pragma unroll
    for (int i = 0; i < VEC; ++i) p[it][i] = v[i];
  }
  __device__ __forceinline__ void Get(int it, float (&v)[VEC]) const {
#pragma unroll
    for (int i = 0; i < VEC; ++i) v[i] = p[it][i];
  }
};
template <typename T, int VEC, int ITERS>
struct ForwardRow<T, VEC, ITERS, RowStorage::kPacked> {
  Vec<T, VEC> raw[ITERS];
  __device__ __forceinline__ void Get(int it, float (&v)[VEC]) const {
    UnpackFloats(raw[it], v);
#pragma unroll
    for (int i = 0; i < VEC; ++i) v[i] += 0.0f;
  }
};
template <typename T, int VEC, int ITERS>
struct ForwardRow<T, VEC, ITERS, RowStorage::kShared> {
  SharedFloatRow<VEC> row;  // the group's row
  int tpr, t, d;
  __device__ __forceinline__ void Set(int it, const float (&v)[VEC]) {
    const int col = (it * tpr + t) * VEC;
    if (col < d) row.Store(col, v);
  }
  __device__ __forceinline__ void Get(int it, float (&v)[VEC]) const {
    const int col = (it * tpr + t) * VEC;
    if (col < d) {
      row.Load(col, v);
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) v[i] = 0.0f;
    }
  }
};

// One row per group of tpr threads, held in registers: read once, written once.
// kPreload (launches of at most one block per SM, 16-byte vectors; chosen by
// the launcher): weight and bias are copied into shared memory (cp.async, no
// registers) while the row is loaded and reduced, so a latency-bound launch
// makes one memory round trip instead of two. Each thread copies and reads
// back only its own columns, so no barrier is needed. The arithmetic is the
// same either way, so a row's bits do not depend on it. kCenter: LayerNorm.
// kRow: see ForwardRow (the same bits whichever holds the row).
template <typename T, int VEC, int ITERS, bool kPreload, bool kCenter, RowStorage kRow>
__global__ void __launch_bounds__(kMaxThreads)
    ForwardKernel(const ForwardArgs a, const int tpr, const int rows_per_cta) {
  constexpr bool kPacked = kRow == RowStorage::kPacked;
  static_assert(kRow == RowStorage::kFloats || sizeof(T) * VEC == 16,
                "packed and shared rows are 16-byte vectors");
  static_assert(!kPacked || sizeof(T) == 2, "packed rows are 16-bit");
  static_assert(!kPreload || kRow != RowStorage::kShared, "one use of the dynamic shared memory");
  // kPreload: [rows_per_cta][weight, bias][hidden] as stored; kShared:
  // [rows_per_cta][hidden] fp32 rows.
  extern __shared__ __align__(16) unsigned char preloaded[];
  __shared__ float scratch_buffers[GroupScratch::kFloats];
  GroupScratch scratch{scratch_buffers};
  const int group = threadIdx.x / tpr;
  const int t = threadIdx.x - group * tpr;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * rows_per_cta + group;
  const bool live = row < a.rows;
  const int d = static_cast<int>(a.hidden);
  const int64_t base = row * a.hidden;
  const T* x = static_cast<const T*>(a.x) + base;
  const T* y = static_cast<const T*>(a.y) + base;
  const bool residual_f32 = a.residual_dtype == DType::kF32;

  ForwardRow<T, VEC, ITERS, kRow> p;
  if constexpr (kRow == RowStorage::kShared) {
    p.row = {reinterpret_cast<float*>(preloaded) + static_cast<int64_t>(group) * d, d};
    p.tpr = tpr;
    p.t = t;
    p.d = d;
  }
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    const int col = (it * tpr + t) * VEC;
    if constexpr (kPacked) {
      p.raw[it] = Vec<T, VEC>{};
      if (live && col < d) p.raw[it] = *reinterpret_cast<const Vec<T, VEC>*>(x + col);
    } else {
      float v[VEC], yv[VEC] = {};
      if (live && col < d) {
        LoadFloats(x + col, v);
        if (a.y != nullptr) LoadFloats(y + col, yv);
      } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) v[i] = 0.0f;
      }
#pragma unroll
      for (int i = 0; i < VEC; ++i) v[i] += yv[i];
      p.Set(it, v);
    }
  }

  const T* weight = static_cast<const T*>(a.weight);
  const T* bias = static_cast<const T*>(a.bias);
  if constexpr (kPreload) {
    static_assert(sizeof(T) * VEC == 16, "cp.async moves 16-byte vectors");
    T* weight_copy = reinterpret_cast<T*>(preloaded) + static_cast<int64_t>(group) * 2 * d;
    T* bias_copy = weight_copy + d;
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int col = (it * tpr + t) * VEC;
      if (live && col < d) {
        if (weight != nullptr) CpAsync16(weight_copy + col, weight + col, true);
        if (bias != nullptr) CpAsync16(bias_copy + col, bias + col, true);
      }
    }
    CpAsyncCommit();
    if (weight != nullptr) weight = weight_copy;
    if (bias != nullptr) bias = bias_copy;
  }

  float mean, rstd;
  RowStatsOf<kCenter, VEC, ITERS>([&](int it, float(&v)[VEC]) { p.Get(it, v); }, tpr, t, d, a.norm,
                                  scratch, mean, rstd);
  const float mul = rstd * a.norm.scale;
  if constexpr (kPreload) CpAsyncWait<0>();  // this thread's weight / bias copies

#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    const int col = (it * tpr + t) * VEC;
    if (!live || col >= d) continue;
    float v[VEC], w[VEC], b[VEC], o[VEC];
    p.Get(it, v);
    if (weight != nullptr) {
      LoadFloats(weight + col, w);
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) w[i] = 1.0f;
    }
    if (bias != nullptr) {
      LoadFloats(bias + col, b);
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) b[i] = 0.0f;
    }
#pragma unroll
    for (int i = 0; i < VEC; ++i) o[i] = (v[i] - mean) * mul * w[i] + b[i];
    StoreFloats(static_cast<T*>(a.out) + base + col, o);
    if (!kPacked && a.residual_out != nullptr) {
      StoreFloatsEither<T>(a.residual_out, base + col, residual_f32, v);
    }
  }
  if (live && t == 0) {
    if (a.mean != nullptr) a.mean[row] = mean;
    if (a.rstd != nullptr) a.rstd[row] = rstd;
  }
}

// Rows too long for registers: one block per row, three passes over it
// (sum, sum of squares, output); the row stays in L2 between passes.
template <typename T, int VEC>
__global__ void __launch_bounds__(kMaxThreads) ForwardStreamKernel(const ForwardArgs a) {
  __shared__ float scratch_buffers[GroupScratch::kFloats];
  GroupScratch scratch{scratch_buffers};
  const int tpr = blockDim.x;
  const int t = threadIdx.x;
  const int64_t row = blockIdx.x;
  const int d = static_cast<int>(a.hidden);
  const int k = static_cast<int>(a.norm.stat_len);
  const int64_t base = row * a.hidden;
  const T* x = static_cast<const T*>(a.x) + base;
  const T* y = static_cast<const T*>(a.y) + base;
  const bool residual_f32 = a.residual_dtype == DType::kF32;
  auto load_p = [&](int col, float(&p)[VEC]) {
    float yv[VEC] = {};
    LoadFloats(x + col, p);
    if (a.y != nullptr) LoadFloats(y + col, yv);
#pragma unroll
    for (int i = 0; i < VEC; ++i) p[i] += yv[i];
  };

  float mean = 0.0f;
  if (a.norm.center) {
    float sum[1] = {0.0f};
    for (int col = t * VEC; col < d; col += tpr * VEC) {
      float p[VEC];
      load_p(col, p);
#pragma unroll
      for (int i = 0; i < VEC; ++i) sum[0] += p[i];
    }
    GroupSum(sum, tpr, scratch);
    mean = sum[0] / static_cast<float>(d);
  }
  float sum_sq[1] = {0.0f};
  for (int col = t * VEC; col < k; col += tpr * VEC) {
    float q[VEC];
    load_p(col, q);
#pragma unroll
    for (int i = 0; i < VEC; ++i) q[i] -= mean;
    AddSquaresBelow(q, col, k, sum_sq[0]);
  }
  GroupSum(sum_sq, tpr, scratch);
  const float rstd = 1.0f / sqrtf(sum_sq[0] / static_cast<float>(k) + a.norm.eps);
  const float mul = rstd * a.norm.scale;

  for (int col = t * VEC; col < d; col += tpr * VEC) {
    float p[VEC], w[VEC], b[VEC], o[VEC];
    load_p(col, p);
    if (a.weight != nullptr) {
      LoadFloats(static_cast<const T*>(a.weight) + col, w);
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) w[i] = 1.0f;
    }
    if (a.bias != nullptr) {
      LoadFloats(static_cast<const T*>(a.bias) + col, b);
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) b[i] = 0.0f;
    }
#pragma unroll
    for (int i = 0; i < VEC; ++i) o[i] = (p[i] - mean) * mul * w[i] + b[i];
    StoreFloats(static_cast<T*>(a.out) + base + col, o);
    if (a.residual_out != nullptr) {
      StoreFloatsEither<T>(a.residual_out, base + col, residual_f32, p);
    }
  }
  if (t == 0) {
    if (a.mean != nullptr) a.mean[row] = mean;
    if (a.rstd != nullptr) a.rstd[row] = rstd;
  }
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_FORWARD_KERNELS_CUH_
