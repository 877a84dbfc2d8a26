// Backward kernels (seed 004's backward, partial statistic of seed 003), per row,
// with r = q * rstd and sw = scale * w:
//   dr   = dy * sw
//   dq_i = rstd * (dr_i - [i < k] r_i * (r . dr) / k)
//   dp   = dq - mean(dq)            (LayerNorm; dp = dq for RMSNorm)
//   dx   = dp + d(residual_out)     (= dy, the residual branch's gradient)
//   dw  += dy * r (times scale, applied once at the end);  db += dy
// mean(dq) needs no second pass: sum(dq) = rstd * (sum dr - (r . dr) / k * sum_{i<k} r_i).
//
// dw / db are reduced in two deterministic stages: each block folds its chunk
// of rows (never crossing a segment) into one fp32 partial row of the
// workspace, in a fixed order; ReducePartialsKernel then adds a segment's
// partials in chunk order.
#ifndef NORMSERVE_KERNELS_CUDA_BACKWARD_KERNELS_CUH_
#define NORMSERVE_KERNELS_CUDA_BACKWARD_KERNELS_CUH_

#include "async_copy.cuh"
#include "cluster_sum.cuh"
#include "dependent_launch.cuh"
#include "forward_kernels.cuh"
#include "launch.h"
#include "realigned.cuh"
#include "row_layout.h"
#include "row_ops.cuh"

namespace normserve::kernels::cuda {

// Chunk -> rows. Without descriptors the batch is one segment of `chunks`
// chunks (the launch's) of `chunk_rows` rows.
__device__ __forceinline__ ChunkRows FindChunk(const BackwardArgs& a, int chunk, int chunks,
                                               int64_t chunk_rows, int rows_per_cta) {
  if (a.segments == nullptr) {
    ChunkRows c =
        ChunkOfSegment(0, a.rows, chunk_rows, chunks, chunk, rows_per_cta, a.interleaved_chunks);
    c.has_stats = a.rstd != nullptr;
    return c;
  }
  // The last segment whose first chunk is <= chunk (segments without rows own
  // no chunk and share chunk_begin with their successor).
  int lo = 0, hi = a.num_segments - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (a.segments[mid].chunk_begin <= chunk) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const SegmentPlan& s = a.segments[lo];
  ChunkRows c = ChunkOfSegment(s.row_begin, s.rows, s.chunk_rows, s.chunks, chunk - s.chunk_begin,
                               rows_per_cta, a.interleaved_chunks);
  c.has_stats = s.has_stats != 0 && a.rstd != nullptr;
  return c;
}

// One row's x and dy as stored, so a prefetched row costs registers of the
// storage type and no conversion stalls on it. (y, present only in the fused
// residual backward, is read when the row is processed.) A realigned 16-bit
// row's (kPending): its vectors' pieces (PendingRealigned16, five words each),
// shifted where the row uses them (X, Dy); shifted where the prefetch was
// issued, they were waited for there, before the current row. On the H200
// (bench/results/gpu-2026-11-29-round51.md, table 4, rawpend), fused rows
// with y (then on this kernel; since round 52 staged without scale * w, so
// it runs the fused rows whose residual gradient is fp32): bf16 4096 x 14501
// 542.0 -> 458.1 us, 2048 x 16383 290.9 -> 259.8; fp16 4096 x 14501 600.4 ->
// 461.5.
template <typename T, int VEC, int ITERS, bool kRealigned = false>
struct RawRow {
  static constexpr bool kPending = kRealigned && sizeof(T) == 2;
  Vec<T, VEC> x[kPending ? 1 : ITERS], dy[kPending ? 1 : ITERS];
  PendingRealigned16<T, /*kFewRegisters=*/true> px[kPending ? ITERS : 1], pdy[kPending ? ITERS : 1];
  __device__ __forceinline__ static Vec<T, VEC> AsVec(const uint4& word) {
    Vec<T, VEC> v;
    __builtin_memcpy(&v, &word, sizeof(word));
    return v;
  }
  __device__ __forceinline__ Vec<T, VEC> X(int it) const {
    if constexpr (kPending) {
      return AsVec(px[it].Word());
    } else {
      return x[it];
    }
  }
  __device__ __forceinline__ Vec<T, VEC> Dy(int it) const {
    if constexpr (kPending) {
      return AsVec(pdy[it].Word());
    } else {
      return dy[it];
    }
  }
};

// Loads one row's x and dy (zeros past the row's end or for a dead row).
// kRealigned: RowLayout::realigned (realigned.cuh).
template <bool kRealigned, typename T, int VEC, int ITERS>
__device__ __forceinline__ void LoadRawRow(const BackwardArgs& a, int64_t row, bool live, int tpr,
                                           int t, RawRow<T, VEC, ITERS, kRealigned>& raw) {
  const int d = static_cast<int>(a.hidden);
  const T* x = static_cast<const T*>(a.x) + row * a.hidden;
  const T* dy = static_cast<const T*>(a.grad_out) + row * a.hidden;
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    const int col = (it * tpr + t) * VEC;
    if constexpr (RawRow<T, VEC, ITERS, kRealigned>::kPending) {
      raw.px[it].Zero();
      raw.pdy[it].Zero();
      if (live && col < d) {
        raw.px[it].Issue(x, col, d);
        raw.pdy[it].Issue(dy, col, d);
      }
    } else {
      raw.x[it] = raw.dy[it] = Vec<T, VEC>{};
      if (live && col < d) {
        if constexpr (kRealigned) {
          raw.x[it] = LoadRealignedVec<T, VEC>(x, col, d);
          raw.dy[it] = LoadRealignedVec<T, VEC>(dy, col, d);
        } else {
          raw.x[it] = *reinterpret_cast<const Vec<T, VEC>*>(x + col);
          raw.dy[it] = *reinterpret_cast<const Vec<T, VEC>*>(dy + col);
        }
      }
    }
  }
}

// The weight's VEC columns at col as floats (a.weight not null); kRealigned:
// RowLayout::realigned (zeros past the row's end).
template <typename T, bool kRealigned = false, int VEC>
__device__ __forceinline__ void LoadWeight(const BackwardArgs& a, int col, float (&w)[VEC]) {
  if constexpr (kRealigned) {
    LoadRealignedFloats(static_cast<const T*>(a.weight), col, static_cast<int>(a.hidden), w);
  } else {
    LoadFloats(static_cast<const T*>(a.weight) + col, w);
  }
}

// sw = scale * w for the VEC columns at col (L1-resident after the first row).
template <typename T, bool kRealigned = false, int VEC>
__device__ __forceinline__ void LoadScaledWeight(const BackwardArgs& a, int col, float (&sw)[VEC]) {
  if (a.weight != nullptr) {
    LoadWeight<T, kRealigned>(a, col, sw);
#pragma unroll
    for (int i = 0; i < VEC; ++i) sw[i] *= a.norm.scale;
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) sw[i] = a.norm.scale;
  }
}

// Adds the vector at column `col` to the thread's partial sums of dq's
// scalars: sums[0] += r . dr, and with kCenter (LayerNorm) sums[1] += dr and
// sums[2] += r over elements inside the statistic (index < k). A vector wholly
// inside skips the per-element test, with the same additions.
template <bool kCenter, int VEC>
__device__ __forceinline__ void AddDqSums(const float (&r)[VEC], const float (&dr)[VEC], int col,
                                          int k, float (&sums)[3]) {
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    sums[0] += r[i] * dr[i];
    if constexpr (kCenter) sums[1] += dr[i];
  }
  if constexpr (kCenter) {
    if (col + VEC <= k) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) sums[2] += r[i];
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) sums[2] += col + i < k ? r[i] : 0.0f;
    }
  }
}

// The row's two scalars of dq, from the thread's partial sums (AddDqSums):
// coef = (r . dr) / k and mean_dq = mean(dq) (LayerNorm; RMSNorm reduces only
// sums[0] and its mean_dq is the constant 0).
struct DqScalars {
  float coef;
  float mean_dq;
};
template <bool kCenter, typename Scratch>
__device__ __forceinline__ DqScalars ReduceDqScalars(const BackwardArgs& a, float (&sums)[3],
                                                     float rstd, int tpr, Scratch& scratch) {
  DqScalars q;
  if constexpr (kCenter) {
    GroupSum(sums, tpr, scratch);
    q.coef = __fmul_rn(sums[0], a.norm.inv_stat_len);
    q.mean_dq = __fmul_rn(__fmul_rn(rstd, sums[1] - q.coef * sums[2]), a.norm.inv_hidden);
  } else {
    float dot[1] = {sums[0]};
    GroupSum(dot, tpr, scratch);
    q.coef = __fmul_rn(dot[0], a.norm.inv_stat_len);
    q.mean_dq = 0.0f;
  }
  return q;
}

// dx of the vector at column `col`: dq = rstd * (dr - [i < k] r * coef), then
// dx = dq - mean_dq + g. dr and dq are rounded products (no FMA contraction),
// so the sums and the per-element terms cancel exactly where the math says
// they do. A vector wholly inside the statistic skips the per-element test,
// with the same operations.
template <int VEC>
__device__ __forceinline__ void DxOf(const float (&r)[VEC], const float (&dr)[VEC],
                                     const float (&g)[VEC], int col, int k, float rstd,
                                     const DqScalars& s, float (&dx)[VEC]) {
  if (col + VEC <= k) {
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      dx[i] = __fmul_rn(rstd, dr[i] - __fmul_rn(r[i], s.coef)) - s.mean_dq + g[i];
    }
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      const float dq = __fmul_rn(rstd, dr[i] - (col + i < k ? __fmul_rn(r[i], s.coef) : 0.0f));
      dx[i] = dq - s.mean_dq + g[i];
    }
  }
}

// Launches without y or grad_residual_out ("plain") add a zero where the
// fused ones add y or the residual gradient: p = x + 0 and dx = (dq - mean_dq)
// + 0, which only turn a -0 into +0 (a row's bits must not depend on whether
// its batch carried a residual). For every v and m, (v + 0) - m and (v - m) + 0
// have the bits of v + NegatedOrPlusZero(m), so the plain kernels spend one
// addition where the generic ones spend two; and (v + 0) * s == fma(v, s, 0).
// (The backward kernels are issue-bound: ncu, round8.md.)
__device__ __forceinline__ float NegatedOrPlusZero(float m) { return m == 0.0f ? 0.0f : -m; }

// r = (p - mean) * rstd of a plain launch's element x (p = x + 0), given
// neg_mean = NegatedOrPlusZero(mean); RMSNorm's mean is the constant 0.
template <bool kCenter>
__device__ __forceinline__ float PlainR(float x, float neg_mean, float rstd) {
  if constexpr (kCenter) {
    return (x + neg_mean) * rstd;
  } else {
    return __fmaf_rn(x, rstd, 0.0f);
  }
}

// DxOf with g = 0 (a plain launch), the same bits.
template <bool kCenter, int VEC>
__device__ __forceinline__ void PlainDxOf(const float (&r)[VEC], const float (&dr)[VEC], int col,
                                          int k, float rstd, const DqScalars& s, float (&dx)[VEC]) {
  const float neg_mean_dq = NegatedOrPlusZero(s.mean_dq);
  auto finish = [&](float t) {  // (rstd * t - mean_dq) + 0
    if constexpr (kCenter) {
      return __fmul_rn(rstd, t) + neg_mean_dq;
    } else {
      return __fmaf_rn(rstd, t, 0.0f);  // mean_dq is the constant 0
    }
  };
  if (col + VEC <= k) {
#pragma unroll
    for (int i = 0; i < VEC; ++i) dx[i] = finish(dr[i] - __fmul_rn(r[i], s.coef));
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      dx[i] = finish(dr[i] - (col + i < k ? __fmul_rn(r[i], s.coef) : 0.0f));
    }
  }
}

// The per-row gradient math on registers: writes dx and accumulates
// dw (+= dy * r) and db (+= dy) into the group's shared-memory rows (each
// column owned by one thread; null when the launch wants neither).
// y and grad_residual_out, where the launch has none, add a loaded 0.
// kCenter: LayerNorm. kCtas > 1: the row is split over a cluster's blocks.
// kRealigned: RowLayout::realigned, whose last vector may lie partly past the
// row's end (its elements there load as zeros and are not stored).
template <bool kCenter, int kCtas, bool kRealigned, typename T, int VEC, int ITERS>
__device__ __forceinline__ void BackwardRow(const BackwardArgs& a, int64_t row, bool live,
                                            bool has_stats, int tpr, int t,
                                            ClusterScratch<kCtas>& scratch,
                                            const RawRow<T, VEC, ITERS, kRealigned>& raw, float* dw,
                                            float* db) {
  const int d = static_cast<int>(a.hidden);
  const int k = static_cast<int>(a.norm.stat_len);
  float p[ITERS][VEC];  // p = x + y, then r
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    const int col = (it * tpr + t) * VEC;
    float yv[VEC] = {};
    if (a.y != nullptr && live && col < d) {
      if constexpr (kRealigned) {
        LoadRealignedFloats(static_cast<const T*>(a.y) + row * a.hidden, col, d, yv);
      } else {
        LoadFloats(static_cast<const T*>(a.y) + row * a.hidden + col, yv);
      }
    }
    UnpackFloats(raw.X(it), p[it]);
#pragma unroll
    for (int i = 0; i < VEC; ++i) p[it][i] += yv[i];
  }
  float mean = 0.0f, rstd = 0.0f;
  if (has_stats) {
    if (live) {
      if constexpr (kCenter) mean = a.mean[row];
      rstd = a.rstd[row];
    }
  } else {
    RowStats<kCenter>(p, tpr, t, d, a.norm, scratch, mean, rstd);
  }
  float sums[3] = {0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    const int col = (it * tpr + t) * VEC;
    float sw[VEC], dy[VEC], dr[VEC];
    LoadScaledWeight<T, kRealigned>(a, col < d ? col : 0, sw);
    UnpackFloats(raw.Dy(it), dy);
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      p[it][i] = (p[it][i] - mean) * rstd;  // r
      dr[i] = __fmul_rn(dy[i], sw[i]);
    }
    AddDqSums<kCenter>(p[it], dr, col, k, sums);
  }
  const DqScalars dq = ReduceDqScalars<kCenter>(a, sums, rstd, tpr, scratch);
  const bool gres_f32 = a.residual_dtype == DType::kF32;
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    const int col = (it * tpr + t) * VEC;
    if (!live || col >= d) continue;
    float g[VEC] = {}, sw[VEC], dr[VEC], dx[VEC], dyr[VEC];
    if (a.grad_residual_out != nullptr) {
      if constexpr (kRealigned) {
        LoadRealignedEither<T>(a.grad_residual_out, row * a.hidden, col, d, gres_f32, g);
      } else {
        LoadFloatsEither<T>(a.grad_residual_out, row * a.hidden + col, gres_f32, g);
      }
    }
    LoadScaledWeight<T, kRealigned>(a, col, sw);
    UnpackFloats(raw.Dy(it), dyr);
#pragma unroll
    for (int i = 0; i < VEC; ++i) dr[i] = __fmul_rn(dyr[i], sw[i]);
    DxOf(p[it], dr, g, col, k, rstd, dq, dx);
    if constexpr (kRealigned) {
      StoreRealignedFloats(static_cast<T*>(a.grad_in) + row * a.hidden, col, d, dx);
    } else {
      StoreFloats(static_cast<T*>(a.grad_in) + row * a.hidden + col, dx);
    }
    const int acc_col = LocalColumn<VEC, kCtas>(it, tpr, t);
    if (dw != nullptr) {
      float acc[VEC];
      LoadFloats(dw + acc_col, acc);
#pragma unroll
      for (int i = 0; i < VEC; ++i) acc[i] += dyr[i] * p[it][i];
      StoreFloats(dw + acc_col, acc);
    }
    if (db != nullptr) {
      float acc[VEC];
      LoadFloats(db + acc_col, acc);
#pragma unroll
      for (int i = 0; i < VEC; ++i) acc[i] += dyr[i];
      StoreFloats(db + acc_col, acc);
    }
  }
}

// Writes the block's fp32 partial for its chunk: the row groups' rows of
// `acc` ([rows_per_cta][acc_len], acc_len >= hidden) added in group order.
__device__ __forceinline__ void WritePartial(const BackwardArgs& a, int chunk, int total_chunks,
                                             int rows_per_cta, const float* acc, int acc_len,
                                             int which) {
  const int d = static_cast<int>(a.hidden);
  float* out = static_cast<float*>(a.workspace) +
               (static_cast<int64_t>(which) * total_chunks + chunk) * a.hidden;
  for (int col = threadIdx.x; col < d; col += blockDim.x) {
    float sum = 0.0f;
    for (int g = 0; g < rows_per_cta; ++g) sum += acc[g * acc_len + col];
    out[col] = sum;
  }
}

// WritePartial for a row split over a cluster: the block writes its own
// columns, packed in `acc` ([acc_len], LocalColumn's order).
template <int VEC, int kCtas>
__device__ __forceinline__ void WriteBlockColumnsPartial(const BackwardArgs& a, int chunk,
                                                         int total_chunks, int tpr, int rank,
                                                         int acc_len, const float* acc, int which) {
  const int d = static_cast<int>(a.hidden);
  const int cta_tpr = tpr / kCtas;
  float* out = static_cast<float*>(a.workspace) +
               (static_cast<int64_t>(which) * total_chunks + chunk) * a.hidden;
  for (int j = threadIdx.x; j < acc_len; j += blockDim.x) {
    const int vector = j / VEC;  // it * cta_tpr + thread
    const int col = ((vector / cta_tpr) * tpr + rank * cta_tpr + vector % cta_tpr) * VEC + j % VEC;
    if (col < d) out[col] = acc[j];
  }
}

// A row group's walk over its chunk's tiles (its row of each), the next row's
// x / dy prefetched while the current one is reduced; but realigned rows split
// over a cluster load each row when they reach it: the second row's registers
// left BackwardKernel<16-bit, 8, 4, *, 2 or 4, true> spilling 260-412 bytes,
// and it measured slower (H200, bench/results/gpu-2026-11-28-round47.md, call
// 4: bf16 LayerNorm 2048 x 32767 476.5 -> 388.9 us, RMSNorm 1024 x 65535 448.3
// -> 374.5, add + RMSNorm 2048 x 20001 381.0 -> 346.5).
template <bool kCenter, int kCtas, bool kRealigned, typename T, int VEC, int ITERS>
__device__ __forceinline__ void BackwardRows(const BackwardArgs& a, const ChunkRows& c, int group,
                                             int tpr, int t, ClusterScratch<kCtas>& scratch,
                                             float* dw, float* db) {
  // Every group runs the same number of steps (GroupSum synchronizes the block).
  RawRow<T, VEC, ITERS, kRealigned> raw;
  int64_t row = c.first + group;
  LoadRawRow<kRealigned>(a, row, row < c.end, tpr, t, raw);
  for (int64_t tile = c.first; tile < c.end; tile += c.stride) {
    const int64_t next = row + c.stride;
    if constexpr (kRealigned && kCtas > 1) {
      if (tile != c.first) LoadRawRow<kRealigned>(a, row, row < c.end, tpr, t, raw);
      BackwardRow<kCenter, kCtas, kRealigned>(a, row, row < c.end, c.has_stats, tpr, t, scratch,
                                              raw, dw, db);
      row = next;
      continue;
    }
    const RawRow<T, VEC, ITERS, kRealigned> cur = raw;
    // Prefetch the next row while this one is reduced.
    LoadRawRow<kRealigned>(a, next, next < c.end, tpr, t, raw);
    BackwardRow<kCenter, kCtas, kRealigned>(a, row, row < c.end, c.has_stats, tpr, t, scratch, cur,
                                            dw, db);
    row = next;
  }
}

// One block per chunk; each row group walks its row of each of the chunk's
// tiles, accumulating its columns' dw / db in shared memory.
// kCenter (LayerNorm) is chosen by the launcher. kCtas > 1: one row group per
// cluster of kCtas blocks (launched as such), each block holding its share of
// the row (see row_layout.h). kRealigned: RowLayout::realigned, whose dw / db
// rows are padded to whole vectors (RealignedRowLength; a cluster's blocks hold
// whole vectors of their share anyway).
template <typename T, int VEC, int ITERS, bool kCenter, int kCtas = 1, bool kRealigned = false>
__global__ void __launch_bounds__(kMaxThreads)
    BackwardKernel(const BackwardArgs a, const int tpr, const int rows_per_cta,
                   const int64_t chunk_rows) {
  AllowDependentLaunch();  // ReducePartialsKernel waits for this grid's end itself
  // dw / db accumulators, [2][rows_per_cta][acc_len], when partials are wanted.
  extern __shared__ float acc[];
  __shared__ ClusterScratchStorage<kCtas> scratch_storage;
  auto scratch = MakeClusterScratch<kCtas>(scratch_storage, tpr);
  const auto [group, t, rank] = RowThreadOf<kCtas>(tpr);
  const int d = static_cast<int>(a.hidden);
  const int acc_len =
      static_cast<int>(kRealigned && kCtas == 1 ? RealignedRowLength(a.hidden, VEC)
                                                : LocalRowLength<VEC, ITERS, kCtas>(a.hidden, tpr));
  const int chunk = blockIdx.x / kCtas;
  const int total_chunks = gridDim.x / kCtas;
  const ChunkRows c = FindChunk(a, chunk, total_chunks, chunk_rows, rows_per_cta);
  const bool partials = a.workspace != nullptr;
  float* dw = partials && a.grad_weight != nullptr ? acc + group * acc_len : nullptr;
  float* db = partials && a.grad_bias != nullptr ? acc + (rows_per_cta + group) * acc_len : nullptr;
  if (partials) {
    // Zeroed by the threads that own the columns, so no barrier is needed
    // before the first accumulation.
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int col = (it * tpr + t) * VEC;
      if (col < d) {
        const float zero[VEC] = {};
        const int acc_col = LocalColumn<VEC, kCtas>(it, tpr, t);
        StoreFloats(acc + group * acc_len + acc_col, zero);
        StoreFloats(acc + (rows_per_cta + group) * acc_len + acc_col, zero);
      }
    }
  }

  BackwardRows<kCenter, kCtas, kRealigned, T, VEC, ITERS>(a, c, group, tpr, t, scratch, dw, db);

  DrainClusterSums(scratch);
  if (!partials) return;
  __syncthreads();
  for (int which = 0; which < 2; ++which) {
    if ((which == 0 ? a.grad_weight : a.grad_bias) == nullptr) continue;
    const float* rows = acc + which * rows_per_cta * acc_len;
    if constexpr (kCtas == 1) {
      WritePartial(a, chunk, total_chunks, rows_per_cta, rows, acc_len, which);
    } else {
      WriteBlockColumnsPartial<VEC, kCtas>(a, chunk, total_chunks, tpr, rank, acc_len, rows, which);
    }
  }
}

// Prefetches into L2 the tensors of `row` that BackwardStreamKernel's passes
// read: x, y, dy and the residual gradient. Rows of single elements (vec 1)
// ask memory for the whole row when they start: their passes' own loads, one
// element per thread at a time, keep too few bytes in flight. Measured on the
// H100 (bench/results/gpu-2026-11-28-round42.md, call 3) against none: bf16
// LayerNorm 8192 x 8191 514.4 -> 449.4 us, add + RMSNorm 4096 x 10001 432.0 ->
// 334.1, fp32 add + RMSNorm 16384 x 4097 920.9 -> 441.2, LayerNorm 8192 x 8191
// 591.4 -> 478.2; no shape slower. Asking for the next row as well (while this
// one is worked on) measured slower than the row alone (fp32 add + RMSNorm
// 16384 x 4097 441.2 -> 618.5, bf16 8192 x 8191 522.2 -> 643.8).
template <typename T>
__device__ __forceinline__ void PrefetchStreamedRow(const BackwardArgs& a, int64_t row) {
  const int64_t first = row * a.hidden;
  const int64_t bytes = a.hidden * static_cast<int64_t>(sizeof(T));
  PrefetchToL2(static_cast<const T*>(a.x) + first, bytes);
  if (a.y != nullptr) PrefetchToL2(static_cast<const T*>(a.y) + first, bytes);
  PrefetchToL2(static_cast<const T*>(a.grad_out) + first, bytes);
  if (a.grad_residual_out != nullptr) {
    const int64_t size = a.residual_dtype == DType::kF32 ? sizeof(float) : sizeof(T);
    PrefetchToL2(static_cast<const char*>(a.grad_residual_out) + first * size, a.hidden * size);
  }
}

// One chunk's rows for BackwardStreamKernel, several passes per row, dw / db
// accumulated into dw_acc / db_acc (each column owned by one thread; null
// where not wanted).
template <typename T, int VEC>
__device__ __forceinline__ void BackwardStreamRows(const BackwardArgs& a, const ChunkRows& c,
                                                   int tpr, int t, GroupScratch& scratch,
                                                   float* dw_acc, float* db_acc) {
  const int d = static_cast<int>(a.hidden);
  const int k = static_cast<int>(a.norm.stat_len);
  const bool gres_f32 = a.residual_dtype == DType::kF32;
  // One vector per batch of the passes (StreamPass): fp32 rows measured
  // slower at 2 or 4 on the H100 (bench/results/gpu-2026-11-28-round42.md,
  // call 2: RMSNorm 8192 x 8191 575.2 / 827.9 / 815.5 us at 1 / 2 / 4).
  constexpr int kBatch = 1;
  for (int64_t row = c.first; row < c.end; row += c.stride) {
    if (VEC == 1 && t == 0) PrefetchStreamedRow<T>(a, row);
    const int64_t base = row * a.hidden;
    // One batch's values: p = x + y, dy, sw = scale * w.
    float p[kBatch][VEC], dy[kBatch][VEC], sw[kBatch][VEC];
    auto load_p = [&](int j, int col) {
      float yv[VEC] = {};  // p = x + 0 without y, as the fused launches' rows of zeros
      LoadFloats(static_cast<const T*>(a.x) + base + col, p[j]);
      if (a.y != nullptr) LoadFloats(static_cast<const T*>(a.y) + base + col, yv);
#pragma unroll
      for (int i = 0; i < VEC; ++i) p[j][i] += yv[i];
    };
    auto load = [&](int j, int col) {
      load_p(j, col);
      LoadFloats(static_cast<const T*>(a.grad_out) + base + col, dy[j]);
      if (a.weight != nullptr) {
        LoadFloats(static_cast<const T*>(a.weight) + col, sw[j]);
      } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) sw[j][i] = 1.0f;
      }
#pragma unroll
      for (int i = 0; i < VEC; ++i) sw[j][i] *= a.norm.scale;
    };
    float mean = 0.0f, rstd;
    if (c.has_stats) {
      mean = a.norm.center ? a.mean[row] : 0.0f;
      rstd = a.rstd[row];
    } else {
      if (a.norm.center) {
        float sum[1] = {0.0f};
        StreamPass<VEC, kBatch>(t, tpr, d, load_p, [&](int j, int) {
#pragma unroll
          for (int i = 0; i < VEC; ++i) sum[0] += p[j][i];
        });
        GroupSum(sum, tpr, scratch);
        mean = MeanOfSum(sum[0], a.norm);
      }
      float sum_sq[1] = {0.0f};
      StreamPass<VEC, kBatch>(t, tpr, k, load_p, [&](int j, int col) {
        float q[VEC];
#pragma unroll
        for (int i = 0; i < VEC; ++i) q[i] = p[j][i] - mean;
        AddSquaresBelow(q, col, k, sum_sq[0]);
      });
      GroupSum(sum_sq, tpr, scratch);
      rstd = RstdOfSumOfSquares(sum_sq[0], a.norm);
    }
    float sums[3] = {0.0f, 0.0f, 0.0f};
    StreamPass<VEC, kBatch>(t, tpr, d, load, [&](int j, int col) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const float r = (p[j][i] - mean) * rstd;
        const float dr = __fmul_rn(dy[j][i], sw[j][i]);
        sums[0] += r * dr;
        sums[1] += dr;
        sums[2] += col + i < k ? r : 0.0f;
      }
    });
    const auto [coef, mean_dq] = a.norm.center
                                     ? ReduceDqScalars<true>(a, sums, rstd, tpr, scratch)
                                     : ReduceDqScalars<false>(a, sums, rstd, tpr, scratch);
    // The last pass also loads the batch's residual gradient and dw / db
    // partials before it stores anything.
    float g[kBatch][VEC], dw[kBatch][VEC], db[kBatch][VEC];
    auto load_last = [&](int j, int col) {
      load(j, col);
#pragma unroll
      for (int i = 0; i < VEC; ++i) g[j][i] = 0.0f;
      if (a.grad_residual_out != nullptr) {
        LoadFloatsEither<T>(a.grad_residual_out, base + col, gres_f32, g[j]);
      }
#pragma unroll
      for (int i = 0; i < VEC; ++i) dw[j][i] = db[j][i] = 0.0f;
      if (dw_acc != nullptr) LoadFloats(dw_acc + col, dw[j]);
      if (db_acc != nullptr) LoadFloats(db_acc + col, db[j]);
    };
    StreamPass<VEC, kBatch>(t, tpr, d, load_last, [&](int j, int col) {
      float dx[VEC];
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const float r = (p[j][i] - mean) * rstd;
        const float dr = __fmul_rn(dy[j][i], sw[j][i]);
        const float dq = __fmul_rn(rstd, dr - (col + i < k ? r * coef : 0.0f));
        dx[i] = dq - mean_dq + g[j][i];
        dw[j][i] += dy[j][i] * r;
        db[j][i] += dy[j][i];
      }
      StoreFloats(static_cast<T*>(a.grad_in) + base + col, dx);
      if (dw_acc != nullptr) StoreFloats(dw_acc + col, dw[j]);
      if (db_acc != nullptr) StoreFloats(db_acc + col, db[j]);
    });
  }
}

// Sets the thread's columns of dw / db (where not null) to zero.
template <int VEC>
__device__ __forceinline__ void ZeroOwnColumns(int t, int tpr, int d, float* dw, float* db) {
  for (int col = t * VEC; col < d; col += tpr * VEC) {
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      if (dw != nullptr) dw[col + i] = 0.0f;
      if (db != nullptr) db[col + i] = 0.0f;
    }
  }
}

// Rows too long for registers (fp32 rows of no whole 16-byte vector past
// 32768): one block per chunk, rows one after another, several passes per row
// (L2-resident; StreamPass). The chunk's dw / db partials accumulate in its
// workspace rows (too long to fit shared memory); each column is owned by one
// thread throughout, so no barrier orders them.
template <typename T, int VEC>
__global__ void __launch_bounds__(kMaxThreads)
    BackwardStreamKernel(const BackwardArgs a, const int64_t chunk_rows) {
  AllowDependentLaunch();  // ReducePartialsKernel waits for this grid's end itself
  __shared__ float scratch_buffers[GroupScratch::kFloats];
  GroupScratch scratch{scratch_buffers};
  const int tpr = blockDim.x;
  const int t = threadIdx.x;
  const int d = static_cast<int>(a.hidden);
  const int chunk = blockIdx.x;
  const int total_chunks = gridDim.x;
  const ChunkRows c = FindChunk(a, chunk, total_chunks, chunk_rows, 1);
  float* dw_part = a.workspace == nullptr || a.grad_weight == nullptr
                       ? nullptr
                       : static_cast<float*>(a.workspace) + chunk * a.hidden;
  float* db_part = a.workspace == nullptr || a.grad_bias == nullptr
                       ? nullptr
                       : static_cast<float*>(a.workspace) +
                             (static_cast<int64_t>(total_chunks) + chunk) * a.hidden;
  ZeroOwnColumns<VEC>(t, tpr, d, dw_part, db_part);
  BackwardStreamRows<T, VEC>(a, c, tpr, t, scratch, dw_part, db_part);
}

// Stage two: out[s][j] = scale_j * sum over segment s's chunks c of
// partial[c][j], in a fixed order. Block (32 columns x kReduceLanes lanes);
// lane l sums chunks l, l + kReduceLanes, ... (loads unrolled, so a lane has
// several in flight), and the lane sums are then added in lane order.
// blockIdx.y = segment, blockIdx.z = 0 for dw, 1 for db. (A template only so
// that each per-dtype translation unit may instantiate it.)
inline constexpr int kReduceLanes = 16;

template <typename T>
__global__ void __launch_bounds__(32 * kReduceLanes)
    ReducePartialsKernel(const BackwardArgs a, const int total_chunks) {
  __shared__ float lanes[kReduceLanes][33];
  const int which = blockIdx.z;
  float* out = which == 0 ? a.grad_weight : a.grad_bias;
  if (out == nullptr) return;
  // Launched as a dependent of stage one (LaunchDependent): the partials are
  // complete only once that grid is.
  WaitForPrimaryGrid();
  const int64_t col = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  const int segment = blockIdx.y;
  int first = 0, last = total_chunks;
  if (a.segments != nullptr) {
    first = a.segments[segment].chunk_begin;
    last = segment + 1 < a.num_segments ? a.segments[segment + 1].chunk_begin : total_chunks;
  }
  const float* partial = static_cast<const float*>(a.workspace) +
                         static_cast<int64_t>(which) * total_chunks * a.hidden;
  float sum = 0.0f;
  if (col < a.hidden) {
#pragma unroll 4
    for (int chunk = first + threadIdx.y; chunk < last; chunk += kReduceLanes) {
      sum += partial[chunk * a.hidden + col];
    }
  }
  lanes[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < a.hidden) {
    float total = 0.0f;
    for (int l = 0; l < kReduceLanes; ++l) total += lanes[l][threadIdx.x];
    out[segment * a.hidden + col] = which == 0 ? total * a.norm.scale : total;
  }
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_BACKWARD_KERNELS_CUH_
