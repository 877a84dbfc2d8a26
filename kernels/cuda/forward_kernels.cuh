// Forward kernels (seed 004 with seed 003's partial statistic), per row:
//   p = x + y;  q = p - mean(p) (LayerNorm) or p (RMSNorm)
//   rstd = 1 / sqrt(sum_{i<k} q_i^2 / k + eps)
//   o = (q * rstd * scale) * w + b          scale = c / sqrt(d)
// y, w and b default to 0, 1 and 0; p is always formed as x + y (adding a
// zero when y is absent), so a row's bits do not depend on whether its
// neighbours in the batch carried a residual.
#ifndef NORMSERVE_KERNELS_CUDA_FORWARD_KERNELS_CUH_
#define NORMSERVE_KERNELS_CUDA_FORWARD_KERNELS_CUH_

#include <type_traits>

#include "async_copy.cuh"
#include "launch.h"
#include "row_layout.h"
#include "row_ops.cuh"

namespace normserve::kernels::cuda {

// Adds q * q of the vector at column `col` to `sum`, counting only elements
// inside the statistic (index < k). Every kernel sums squares through this one
// function, with explicit fused multiply-adds: left to the compiler, the same
// source was contracted to FFMA in one kernel and FMUL + FADD in another, and
// two forward kernels of one hidden size (a staged fused forward, since
// deleted, and the register forward) disagreed in the last bit
// (DeterminismTest, hidden 20000, bench/results/gpu-2026-11-23-round6.md).
// A vector wholly inside k skips the per-element test: fma(q, 0, sum) == sum,
// so both forms give the same bits.
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

// A row's mean and rstd from its group sums: the one formula of every kernel.
// Multiplications by NormScalars' reciprocals and one rsqrtf (at most 2 ulp):
// no IEEE division or square root after the row's reductions, on the
// latency-bound path of small launches.
__device__ __forceinline__ float MeanOfSum(float sum, const NormScalars& norm) {
  return __fmul_rn(sum, norm.inv_hidden);
}
__device__ __forceinline__ float RstdOfSumOfSquares(float sum_sq, const NormScalars& norm) {
  return rsqrtf(__fmaf_rn(sum_sq, norm.inv_stat_len, norm.eps));
}

// Row statistics of a row group's row. `load(it, v)` fills v with the fp32
// values of the thread's vector `it` (zeros past the row's end); every caller
// forms them the same way, so the statistics' bits depend on the row alone.
// kCenter (LayerNorm) subtracts the mean; RMSNorm's mean is the constant 0,
// and p - 0.0f is p exactly, so the compiler drops it without changing a bit.
// kFull: every vector of every thread lies inside the row and the statistic
// (hidden = ITERS * tpr * VEC, k = hidden), so no test is compiled.
template <bool kCenter, int VEC, int ITERS, bool kFull = false, typename Load, typename Scratch>
__device__ __forceinline__ void RowStatsOf(Load load, int tpr, int t, int d,
                                           const NormScalars& norm, Scratch& scratch, float& mean,
                                           float& rstd) {
  const int k = static_cast<int>(norm.stat_len);
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
    mean = MeanOfSum(sum[0], norm);
  }
  float sum_sq[1] = {0.0f};
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    float q[VEC];
    load(it, q);
#pragma unroll
    for (int i = 0; i < VEC; ++i) q[i] -= mean;
    AddSquaresBelow(q, kFull ? 0 : (it * tpr + t) * VEC, kFull ? VEC : k, sum_sq[0]);
  }
  GroupSum(sum_sq, tpr, scratch);
  rstd = RstdOfSumOfSquares(sum_sq[0], norm);
}

// Whether a forward instance reduces its rows canonically (row_ops.cuh: the
// order of additions is the row's alone, so a launch may spread a row over
// more threads, RowLayout::spread): full rows of at most 32 values per thread.
// It depends on the row's layout and statistic, never on the batch. Against
// RowStatsOf's running sums, measured on the H100 (bench/results/
// gpu-2026-11-25-round13.md, call 5): large launches within 0.2 %, fp32
// LayerNorm faster (4096 x 1024 18.8 -> 17.8 us, 4096 x 4096 51.15 -> 50.3),
// with the unspread layouts. Rows of 64 values per thread keep RowStatsOf:
// their 16-bit register instances are at 124-128 registers, and their rows
// already fill a block.
template <int VEC, int ITERS, bool kFull>
__host__ __device__ constexpr bool ForwardCanonical() {
  return kFull && ITERS * VEC <= kMaxCanonicalElemsPerThread;
}

// Canonical row statistics (row_ops.cuh) of a full row. The tree's leaves are
// runs of 8 values (CanonicalLeafVectors: one 16-bit vector, or an fp32 vector
// and the one half a row further on, which every layout of the row keeps in
// one thread), each summed in order; then the tree's levels. LayerNorm's mean
// and squares come from one reduction of each leaf's sum and squares about
// its own mean (ChanMerge), measured on the H100 (round12.md) against a
// reduction for the mean and then one for the squares about it: the 1 x 4096
// kernel 160 ns (bf16) and 256 ns (fp32) shorter (ncu), fp32 4096 x 3072
// 41.8 -> 40.4 us, fp32 32768 x 4096 359.9 -> 361.1 us.
template <bool kCenter, int VEC, int ITERS, bool kWarpWide = false, typename Load, typename Scratch>
__device__ __forceinline__ void CanonicalRowStats(Load load, int tpr, int spread,
                                                  const NormScalars& norm, Scratch& scratch,
                                                  float& mean, float& rstd) {
  static_assert((ITERS & (ITERS - 1)) == 0 && (VEC & (VEC - 1)) == 0, "powers of two");
  constexpr int kLeafVectors = CanonicalLeafVectors(VEC, ITERS);
  constexpr int kLeaves = ITERS / kLeafVectors;  // leaf j: vectors j + m * kLeaves
  constexpr int kLeafCount = kLeafVectors * VEC;
  float sum[kLeaves], sq[kLeaves];  // per leaf: its sum, and its squares (about its mean)
#pragma unroll
  for (int j = 0; j < kLeaves; ++j) {
    float p[kLeafVectors][VEC];
#pragma unroll
    for (int m = 0; m < kLeafVectors; ++m) load(j + m * kLeaves, p[m]);
    sum[j] = 0.0f;
    sq[j] = 0.0f;
    if constexpr (kCenter) {
#pragma unroll
      for (int m = 0; m < kLeafVectors; ++m) {
#pragma unroll
        for (int i = 0; i < VEC; ++i) sum[j] += p[m][i];
      }
      const float center = __fmul_rn(sum[j], 1.0f / kLeafCount);  // exact scale
#pragma unroll
      for (int m = 0; m < kLeafVectors; ++m) {
#pragma unroll
        for (int i = 0; i < VEC; ++i) p[m][i] -= center;
      }
    }
#pragma unroll
    for (int m = 0; m < kLeafVectors; ++m) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) sq[j] = __fmaf_rn(p[m][i], p[m][i], sq[j]);
    }
  }
  // The in-thread levels: vector bits from the highest down.
  float half_weight = 0.5f / kLeafCount;
#pragma unroll
  for (int step = kLeaves / 2; step > 0; step /= 2) {
#pragma unroll
    for (int j = 0; j < step; ++j) {
      if constexpr (kCenter) {
        ChanMerge(sum[j], sq[j], sum[j + step], sq[j + step], half_weight);
      } else {
        sq[j] += sq[j + step];
      }
    }
    half_weight *= 0.5f;
  }
  if constexpr (kCenter) {
    CanonicalGroupMoments<kWarpWide>(sum[0], sq[0], ITERS * VEC, tpr, spread, norm.inv_hidden,
                                     scratch);
    mean = MeanOfSum(sum[0], norm);
  } else {
    CanonicalGroupSum<kWarpWide>(sq[0], tpr, spread, scratch);
    mean = 0.0f;
  }
  rstd = RstdOfSumOfSquares(sq[0], norm);
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
//  - kFloats: p = x + y as fp32 registers (p = x where there is no y);
//  - kPacked (a launch with neither y nor residual_out, 16-bit storage): x as
//    stored, in half the registers, converted where used: the same bits.
//  - kStaged (plain fp32 rows of 8 vectors per thread): x copied as stored
//    into shared memory (cp.async) and read from there by each pass, so the
//    registers no longer hold the row and more rows are in flight per SM
//    (forward_launch.cuh); each thread reads back only what it copied, with
//    the same arithmetic: the same bits. (Plain 16-bit rows so staged:
//    StagedLongRowKernel, forward_staged.cuh.)
//  - kStagedSum (fused fp32 rows of 8 vectors per thread): as kStaged, with
//    y, loaded into registers while x lands, added into the copy (full rows
//    store p from it right away, ForwardKernel's load_row). Its own
//    instance: the y path in kStaged's moved the plain instances' registers
//    (RMSNorm with bounds tests 56 -> 60) and slowed them (H200, fp32 8192 x
//    12000 RMSNorm 197.7 -> 208.4 us: bench/results/gpu-2026-11-29-round54.md,
//    table 3).
// (kFloats and kPacked once formed x + 0.0f without y, which turns -0 into
// +0: one more add per value and use on the latency-bound path.)
// (Fused 16-bit rows once kept p as fp32 in shared memory, for more rows in
// flight per SM; registers with the residual stored as loaded measured
// faster: bench/results/gpu-2026-11-25-round21.md.)
enum class RowStorage { kFloats, kPacked, kStaged, kStagedSum };

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
struct ForwardRow<T, VEC, ITERS, RowStorage::kStaged> {
  const T* first;  // the thread's vector 0, in shared memory, as stored
  int stride;      // elements from one of its vectors to the next
  __device__ __forceinline__ void Get(int it, float (&v)[VEC]) const {
    LoadFloats(first + it * stride, v);
  }
};
template <typename T, int VEC, int ITERS>
struct ForwardRow<T, VEC, ITERS, RowStorage::kStagedSum>
    : ForwardRow<T, VEC, ITERS, RowStorage::kStaged> {};
// (Held as Vec: as one 16-byte word per vector, the compiler kept the
// converted row live between LayerNorm's passes, 59 -> 104 registers.)
template <typename T, int VEC, int ITERS>
struct ForwardRow<T, VEC, ITERS, RowStorage::kPacked> {
  Vec<T, VEC> raw[ITERS];
  __device__ __forceinline__ void Get(int it, float (&v)[VEC]) const { UnpackFloats(raw[it], v); }
};

// VEC values of a per-column parameter (weight, bias) at col as fp32, or
// `fill` when the parameter is absent. kReadOnly: a global-memory parameter
// read through the read-only path (see the output loop of ForwardKernel).
template <bool kReadOnly, typename T, int VEC>
__device__ __forceinline__ void LoadParam(const T* param, int col, float fill, float (&v)[VEC]) {
  if (param == nullptr) {
#pragma unroll
    for (int i = 0; i < VEC; ++i) v[i] = fill;
  } else if constexpr (kReadOnly) {
    LoadFloatsReadOnly(param + col, v);
  } else {
    LoadFloats(param + col, v);
  }
}

// Whether a latency-bound (kPreload) ForwardKernel's per-column parameter is
// there, as a template argument: such kernels branch once on which there are.
enum class ParamIs { kPresent, kAbsent };

// thread / tpr for a thread of a block (both at most kMaxThreads), with
// neither an integer division nor a branch: a branch that skipped the division
// in blocks of one row group held back the reads of every later kernel
// parameter, and the constant cache is cold at each launch. Exact: (thread +
// 0.5) / tpr lies at least 0.5 / tpr away from an integer, far more than the
// 2-ulp error of __fdividef.
__device__ __forceinline__ int RowGroupOf(int thread, int tpr) {
  return __float2int_rz(__fdividef(static_cast<float>(thread) + 0.5f, static_cast<float>(tpr)));
}

// One output value: (v - mean) * mul rounded, then times the weight plus the
// bias in one FMA, every rounding explicit, as every forward kernel forms it.
// Written as (v - mean) * mul * w + b, the compiler contracted it as it chose
// per instance: where it knew there is no weight (w = 1 at compile time, and,
// by the bits, in some instances that test for it at run time), it folded
// the `* w` away and formed (v - mean) * mul + b in one FMA, one rounding
// fewer than elsewhere. Rows with a bias and no weight then got other bits
// alone than in a larger launch (bench/results/gpu-2026-11-26-round29.md,
// call 25: fp32 rows; round30.md, call 1: fp16 rows of 2048-16384 in
// launches of 600 rows, which a fix in the compile-time instances alone left
// failing).
__device__ __forceinline__ float NormOutput(float v, float mean, float mul, float w, float b) {
  return __fmaf_rn(__fmul_rn(v - mean, mul), w, b);
}

// A row's statistics, where the caller asks for them.
__device__ __forceinline__ void StoreRowStats(const ForwardArgs& a, int64_t row, float mean,
                                              float rstd) {
  if (a.mean != nullptr) a.mean[row] = mean;
  if (a.rstd != nullptr) a.rstd[row] = rstd;
}

// One row per group of tpr threads, held in registers: read once, written once.
// kPreload (latency-bound launches, 16-byte vectors; chosen by
// the launcher): weight and bias are copied into shared memory (cp.async, no
// registers) while the row is loaded and reduced, so a latency-bound launch
// makes one memory round trip instead of two. Each thread copies and reads
// back only its own columns, so no barrier is needed. The arithmetic is the
// same either way, so a row's bits do not depend on it. kCenter: LayerNorm.
// kRow: see ForwardRow (the same bits whichever holds the row). kFull: see
// RowStatsOf (the launcher picks it with FullRow, never by the row count);
// full rows of at most 32 values per thread are reduced canonically
// (ForwardCanonical), their vectors placed by `spread` (RowLayout::spread;
// 0 for the other instances). kMinBlocks: blocks of kMaxThreads threads that
// must fit one SM's registers (forward_launch.cuh); 0, no minimum, is not 1:
// an explicit 1 let ptxas take 123-128 registers where the bare bound gives
// 78-87 (bench/results/gpu-2026-11-26-round22.md, call 2). kOneRow: a
// latency-bound launch of full rows of a warp or more, one row per block
// (grid = rows), whose row is then the block's: the row's addresses formed
// once (Opaque), no row-group arithmetic before the row's loads, and the
// warp's butterflies unrolled. kSpread: a row of a launch spread once
// (SpreadsOnce), placed as kPreload instances place it.
template <typename T, int VEC, int ITERS, bool kPreload, bool kCenter, RowStorage kRow,
          bool kFull = false, int kMinBlocks = 0, bool kOneRow = false, bool kSpread = false>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocks)
    ForwardKernel(const int tpr, const int rows_per_cta, const int spread,
                  const bool early_residual, const bool residual_f32, const ForwardArgs a) {
  // (The layout's scalars come before `a`, and residual_f32 is passed rather
  // than read from a.residual_dtype, so that what the kernel reads before its
  // row's statistics shares two constant-cache lines: see ForwardArgs.)
  constexpr bool kCanonical = ForwardCanonical<VEC, ITERS, kFull>();
  constexpr bool kPacked = kRow == RowStorage::kPacked;
  constexpr bool kStaged = kRow == RowStorage::kStaged || kRow == RowStorage::kStagedSum;
  static_assert(!kStaged || (std::is_same_v<T, float> && VEC == 4 && !kPreload),
                "staged rows are fp32 rows of 16-byte vectors");
  static_assert(kRow != RowStorage::kStagedSum || std::is_same_v<T, float>,
                "p = x + y is staged as fp32");
  static_assert(!kPacked || sizeof(T) * VEC >= 8, "packed rows are 16- or 8-byte vectors");
  static_assert(!kPacked || sizeof(T) == 2, "packed rows are 16-bit");
  static_assert(!kOneRow || (kPreload && kFull), "one-row instances are latency-bound, full");
  static_assert(!kSpread || (!kPreload && kCanonical), "see SpreadsOnce");
  // residual_out stored as loaded: in latency-bound launches of at most one
  // block per SM (early_residual), and by the 16-byte-vector 16-bit instances
  // of up to 32 values per thread that are not latency-bound (see the store
  // below; it took bf16 instances of 4 vectors from 107 to 90 registers, of 8
  // vectors from 103 to 128 and a spill). And 16-bit instances of half
  // vectors (8 bytes), measured on the H100 together with RawVec's uint2 for
  // them (bench/results/gpu-2026-11-28-round44.md, call 1): bf16 add + RMSNorm
  // 8192 x 4100 111.8 -> 96.9 us, 4096 x 14500 211.8 -> 170.9, 2048 x 16380
  // 115.7 -> 100.5, 16384 x 1004 54.7 -> 50.4.
  constexpr bool kEarlyAlways =
      !kPreload && sizeof(T) == 2 && sizeof(T) * VEC >= 8 && ITERS * VEC <= 32 && !kPacked;
  // Full kStagedSum rows store p from the shared copy once y is added (see
  // load_row).
  constexpr bool kStagedSumEarly = kRow == RowStorage::kStagedSum && kFull;
  const bool early = kEarlyAlways || kStagedSumEarly || (kPreload && early_residual);
  // kPreload: [rows_per_cta][weight, bias][hidden] as stored.
  extern __shared__ __align__(16) unsigned char preloaded[];
  __shared__ float scratch_buffers[GroupScratch::kFloats];
  GroupScratch scratch{scratch_buffers};
  // The row group. Latency-bound launches (kPreload) compute it without a
  // branch (RowGroupOf); 16-bit rows of 8 vectors per thread among them are
  // longer than 16384 elements, one row group per block (row_layout.h), where
  // computing the group cost the spilling LayerNorm instance 92 more bytes of
  // spill (bf16 1 x 32768 7.6 -> 8.2 us). The other instances skip the
  // division in blocks of one row group, the common case, as before: either
  // change to them moved their registers and measured slower (fp32 LayerNorm
  // 8192 x 16384 362 -> 375 us, bf16 RMSNorm 4096 x 20000 151 -> 156 us).
  constexpr bool kOneGroup = kPreload && sizeof(T) == 2 && VEC == 8 && ITERS == 8;
  const int thread = static_cast<int>(threadIdx.x);
  const int group = kOneGroup || kOneRow ? 0
                    : kPreload           ? RowGroupOf(thread, tpr)
                    : rows_per_cta == 1  ? 0
                                         : thread / tpr;
  const int t = threadIdx.x - group * tpr;
  // Thread t's vector `it` is the row's vector it * tpr + position. Only
  // latency-bound (kPreload) launches and 16-bit ones of many rows (kSpread:
  // SpreadsOnce, forward_launch.cuh) are spread; the others keep position =
  // t, and the registers a runtime position took (bf16 RMSNorm at 4 vectors
  // per thread: 56 -> 64).
  const int position =
      kCanonical && (kPreload || kSpread) ? CanonicalPosition<kOneRow>(t, tpr, spread) : t;
  auto column = [&](int it) { return (it * tpr + position) * VEC; };
  const int64_t row = kOneRow ? static_cast<int64_t>(blockIdx.x)
                              : static_cast<int64_t>(blockIdx.x) * rows_per_cta + group;
  const bool live = kOneRow || row < a.rows;
  const int d = static_cast<int>(a.hidden);
  const int64_t base = row * a.hidden;
  // The row's tensors from its first element on (Opaque: see row_ops.cuh).
  auto row_of = [&](auto* tensor) { return kOneRow ? Opaque(tensor + base) : tensor + base; };
  const T* x = row_of(static_cast<const T*>(a.x));
  const T* y = row_of(static_cast<const T*>(a.y));
  T* const out = row_of(static_cast<T*>(a.out));

  // Weight / bias copies into shared memory, issued right after the row's
  // loads, with the shared address formed once per tensor: issued first, or
  // with per-vector address arithmetic the compiler then placed first, they
  // delayed the row (bf16 1 x 4096 RMSNorm 5.3 -> 5.7 us, add + RMSNorm
  // 5.6 -> 5.0 us; bench/results/gpu-2026-11-24-round9.md).
  const T* weight = static_cast<const T*>(a.weight);
  const T* bias = static_cast<const T*>(a.bias);
  // One-row bf16 rows of one vector per thread, and plain RMSNorm rows of two
  // held packed, load weight / bias into registers with the row instead: no
  // copy to wait for and read back. Kernel durations on the H200 (ncu, median
  // of 26; bench/results/gpu-2026-11-29-round55.md, call 4): one vector, 1 x
  // 4096 RMSNorm 3296 -> 3184 ns, LayerNorm 3680 -> 3488, add + RMSNorm 3520
  // -> 3328; two, RMSNorm 256 x 4096 4256 -> 4160, 128 x 8192 4384 -> 4352.
  // The others keep the copies: at two vectors LayerNorm lost at 128 x 8192
  // (4768 -> 4928 ns) and add + RMSNorm at 256 x 4096 (5120 -> 5216), fp32
  // rows at most shapes (LayerNorm 256 x 4096 5440 -> 5664). (The launcher
  // sizes the copies' shared memory for these instances too, as measured.)
  constexpr bool kParamsInRegisters = kOneRow && std::is_same_v<T, __nv_bfloat16> &&
                                      (ITERS == 1 || (ITERS == 2 && kPacked && !kCenter));
  RawVec<T, VEC> w_reg[kParamsInRegisters ? ITERS : 1], b_reg[kParamsInRegisters ? ITERS : 1];
  auto preload = [&] {
    if constexpr (kParamsInRegisters) {
#pragma unroll
      for (int it = 0; it < ITERS; ++it) {
        const int col = column(it);
        w_reg[it] = LoadRawOrZero<T, VEC>(weight + col, weight != nullptr);
        b_reg[it] = LoadRawOrZero<T, VEC>(bias + col, bias != nullptr);
      }
    } else if constexpr (kPreload) {
      static_assert(sizeof(T) * VEC == 16, "cp.async moves 16-byte vectors");
      // A scheduling barrier (no instruction): without it ptxas issued the
      // copies before the row's loads in 16 of the 44 fp32 / bf16 instances, fp32
      // LayerNorm at 1 x 4096 among them (5.4 -> 5.15 us, 1 x 16384 7.1 ->
      // 6.55 us; round10.md). Rows of more than 32 values per thread kept
      // the order without it and spilled with it.
      if constexpr (ITERS * VEC <= 32) __syncwarp();
      T* weight_copy = reinterpret_cast<T*>(preloaded) + static_cast<int64_t>(group) * 2 * d;
      T* bias_copy = weight_copy + d;
      auto copy = [&](const T* src, T* dst) {
        const unsigned dst_shared = SharedAddress(dst);
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
          const int col = column(it);
          if (kFull || col < d) CpAsync16Shared(dst_shared + col * sizeof(T), src + col);
        }
      };
      if (live && weight != nullptr) copy(weight, weight_copy);
      if (live && bias != nullptr) copy(bias, bias_copy);
      CpAsyncCommit();
    }
  };

  ForwardRow<T, VEC, ITERS, kRow> p;
  // Every load of the row is issued before the first is used: converting
  // each vector right after its load let the compiler close a branch around
  // each, one memory round trip per vector (bf16 add + RMSNorm 1 x 4096
  // 6.8 -> 5.5 us, 32768 x 4096 367.1 -> 361 us; round9.md).
  auto load_row = [&](auto has_y) {
    [[maybe_unused]] constexpr bool kHasY = decltype(has_y)::value;
    if constexpr (kStaged) {  // x into this row group's shared copy (ForwardRow)
      T* copy = reinterpret_cast<T*>(preloaded) + static_cast<int64_t>(group) * ITERS * tpr * VEC;
#pragma unroll
      for (int it = 0; it < ITERS; ++it) {
        const int col = column(it);
        if (live && (kFull || col < d)) {
          CpAsync16Shared(SharedAddress(copy + col), x + col);
        } else {
#pragma unroll
          for (int i = 0; i < VEC; ++i) copy[col + i] = static_cast<T>(0.0f);
        }
      }
      CpAsyncCommit();
      p.first = copy + position * VEC;
      p.stride = tpr * VEC;
      if constexpr (kHasY) {  // kStagedSum
        // y through registers while x lands, then p = x + y over the copy:
        // the row's registers hold y alone (forward_launch.cuh).
        RawVec<T, VEC> y_raw[ITERS];
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
          const int col = column(it);
          y_raw[it] = LoadRawOrZero<T, VEC>(y + col, live && (kFull || col < d));
        }
        CpAsyncWait<0>();
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
          float v[VEC], yv[VEC];
          LoadFloats(copy + column(it), v);
          UnpackRaw<T, VEC>(y_raw[it], yv);
#pragma unroll
          for (int i = 0; i < VEC; ++i) v[i] += yv[i];
          StoreFloats(copy + column(it), v);
        }
        // p stored now, read back from the copy, so its writes overlap the
        // row's reductions: stored from the add above, the full instance went
        // from 42 to 69 registers (one block per SM); this way 44. Measured
        // on the H200 against p stored with the output
        // (bench/results/gpu-2026-11-29-round55.md, call 2): add + LayerNorm
        // 8192 x 16384 538.5 -> 533.4 us, 4096 x 16384 276.85 -> 273.75, 512 x
        // 16384 42.8 -> 40.85; add + RMSNorm 1024 x 16384 75.85 -> 74.55, 512 x
        // 16384 41.2 -> 39.35, 8192 x 16384 527.4 -> 526.8. Partial rows lost
        // so (add + RMSNorm 8192 x 12000 395.55 -> 416.75, 2048 x 14000 121.75
        // -> 125.55) and store p with the output.
        if constexpr (kStagedSumEarly) {
          if (a.residual_out != nullptr) {
#pragma unroll
            for (int it = 0; it < ITERS; ++it) {
              const int col = column(it);
              if (!live) continue;
              float v[VEC];
              LoadFloats(copy + col, v);
              StoreFloatsEither<T>(a.residual_out, base + col, residual_f32, v);
            }
          }
        }
      } else {
        CpAsyncWait<0>();
      }
    } else if constexpr (kPacked) {  // held as stored (ForwardRow)
      // (Through a local array, not loaded into p.raw directly: the direct
      // form changed the packed LayerNorm's registers, 63 -> 100.)
      // Latency-bound (kPreload) instances load a vector as one 16-byte word
      // or zeros, where the others' zeroed Vec took 24 PRMT merging 16-bit
      // halves at 2 vectors per thread (the others keep it: as a word, the
      // packed rows of 4 vectors went from 56 to 77 registers).
      Vec<T, VEC> x_raw[ITERS];
#pragma unroll
      for (int it = 0; it < ITERS; ++it) {
        const int col = column(it);
        if constexpr (kPreload) {
          const RawVec<T, VEC> word = LoadRawOrZero<T, VEC>(x + col, live && (kFull || col < d));
          __builtin_memcpy(&x_raw[it], &word, sizeof(word));
        } else {
          x_raw[it] = Vec<T, VEC>{};
          if (live && (kFull || col < d))
            x_raw[it] = *reinterpret_cast<const Vec<T, VEC>*>(x + col);
        }
      }
      preload();
#pragma unroll
      for (int it = 0; it < ITERS; ++it) p.raw[it] = x_raw[it];
    } else {
      RawVec<T, VEC> x_raw[ITERS], y_raw[kHasY ? ITERS : 1];
#pragma unroll
      for (int it = 0; it < ITERS; ++it) {
        const int col = column(it);
        const bool valid = live && (kFull || col < d);
        x_raw[it] = LoadRawOrZero<T, VEC>(x + col, valid);
        if constexpr (kHasY) y_raw[it] = LoadRawOrZero<T, VEC>(y + col, valid);
      }
      preload();
#pragma unroll
      for (int it = 0; it < ITERS; ++it) {
        float v[VEC], yv[VEC];
        UnpackRaw<T, VEC>(x_raw[it], v);
        if constexpr (kHasY) {
          UnpackRaw<T, VEC>(y_raw[it], yv);
#pragma unroll
          for (int i = 0; i < VEC; ++i) v[i] += yv[i];
        }
        p.Set(it, v);
        // The updated residual stream p needs no statistic: stored now
        // (`early`), its writes overlap the row's reductions. So in launches
        // of at most one block per SM, instead of adding to the launch's
        // tail, and by fused 16-bit launches that are not latency-bound
        // (round21.md: bf16 add + RMSNorm 4096 x 5000 63.0 -> 61.6 us, 8192 x
        // 16384 364.5 -> 361.0). Other launches store it with the output:
        // early, it measured slower at two blocks per SM (bf16 add + RMSNorm
        // 512 x 4096 9.9 -> 10.4 us, round13.md call 9) and took non-preload
        // fp32 instances of 8 vectors per thread from 82 to 128 registers.
        const int col = column(it);
        if (early && a.residual_out != nullptr && live && (kFull || col < d)) {
          StoreFloatsEither<T>(a.residual_out, base + col, residual_f32, v);
        }
      }
    }
  };
  // Packed and plain staged launches have no y.
  if (!kPacked && kRow != RowStorage::kStaged && a.y != nullptr) {
    load_row(std::true_type{});
  } else {
    load_row(std::false_type{});
  }

  float mean, rstd;
  auto load_p = [&](int it, float(&v)[VEC]) { p.Get(it, v); };
  if constexpr (kCanonical) {
    CanonicalRowStats<kCenter, VEC, ITERS, kOneRow>(load_p, tpr, spread, a.norm, scratch, mean,
                                                    rstd);
  } else {
    RowStatsOf<kCenter, VEC, ITERS, kFull>(load_p, tpr, t, d, a.norm, scratch, mean, rstd);
  }
  const float mul = rstd * a.norm.scale;
  // The row's statistics stored as soon as known by packed rows of up to 2
  // vectors per thread and bf16 LayerNorm rows of 4, after the output by the
  // others. Early took those instances' registers down (bf16 LayerNorm at 4
  // vectors 61 -> 58, most packed rows at 2 vectors 40-64 -> 32-40), and measured
  // faster on the H200 whether or not the launch stores statistics
  // (gpu-2026-11-26-round26.md, calls 2-3): bf16 LayerNorm 32768 x 4096
  // 137.35 -> 134.35 us, 65536 x 1024 72.8 -> 71.0, 16384 x 8192 138.2 ->
  // 135.35; bf16 RMSNorm 1 x 2048 4.55 -> 4.2. The H100 measured the same
  // within 0.2 % (call 8: 184.55 -> 184.35 us). Not fp16 LayerNorm at 4
  // vectors (50 registers as it is; 8192 x 16384 140.85 -> 143.05), nor
  // RMSNorm at 4 (56 -> 64 registers, one block fewer per SM: 65536 x 1024
  // with statistics 71.25 -> 71.7 us), nor rows held as floats (fp32
  // LayerNorm 8192 x 16384 267.9 -> 270.2).
  constexpr bool kEarlyStats =
      kPacked && (ITERS <= 2 || (kCenter && std::is_same_v<T, __nv_bfloat16>));
  if constexpr (kEarlyStats) {
    if (live && t == 0) StoreRowStats(a, row, mean, rstd);
  }
  if constexpr (kPreload) CpAsyncWait<0>();  // this thread's weight / bias copies

  // Unpacked rows read from global memory load a vector's parameters before
  // the previous vector is stored, through the read-only path: the compiler
  // keeps plain loads after stores that may alias them, one L2 round trip per
  // vector (fp32 RMSNorm 8192 x 16384 364.6 -> 361.4 us, bf16 add + RMSNorm
  // 16384 x 8192 361.3 -> 360.4 us, round9.md). Packed rows do not (the
  // registers it costs took 16384-wide LayerNorm off two blocks per SM:
  // 190 -> 288 us), nor register rows of more than 32 values per thread
  // (spills). (Padding vectors read column 0's parameters and store nothing.)
  // Staged rows, whose registers do not hold the row, load them kAhead
  // vectors ahead: plain RMSNorm rows 3 (62-64 registers, still two blocks
  // per SM), full fused rows 2 (64). Measured on the H200 against 1
  // (bench/results/gpu-2026-11-29-round56.md, call D): RMSNorm 8192 x 16384
  // 267.55 -> 263.95 us, 2048 x 14000 68.75 -> 65.0, 8192 x 12000 199.25 ->
  // 199.65; add + RMSNorm 8192 x 16384 527.5 -> 525.35, add + LayerNorm
  // 534.1 -> 531.75. Staged LayerNorm rows (partial) and partial fused rows
  // keep 1: further ahead they lost (call C: LayerNorm 8192 x 12000 226.5 ->
  // 228.7 at 3, add + LayerNorm 408.9 -> 417.85 at 2), as did full fused rows
  // at 3 (add + RMSNorm 8192 x 16384 527.25 -> 531.9).
  constexpr bool kPrefetch = !kPreload && !kPacked && (ITERS * VEC <= 32 || kStaged);
  constexpr int kAhead = kRow == RowStorage::kStaged && !kCenter ? 3 : kStagedSumEarly ? 2 : 1;
  constexpr int kSlots = kAhead + 1;
  // The output of vector `it` from its parameters w, b.
  auto store_output = [&](int it, int col, const float(&w)[VEC], const float(&b)[VEC]) {
    float v[VEC], o[VEC];
    p.Get(it, v);
#pragma unroll
    for (int i = 0; i < VEC; ++i) o[i] = NormOutput(v[i], mean, mul, w[i], b[i]);
    StoreFloats(out + col, o);
    if (!early && !kPacked && a.residual_out != nullptr) {
      StoreFloatsEither<T>(a.residual_out, base + col, residual_f32, v);
    }
  };
  if constexpr (kPreload) {
    // The parameters from their shared-memory copies, with which of them
    // there are known at compile time: one branch here instead of a test and
    // fills per vector, and shared-memory loads where a pointer that was
    // either global or shared took generic ones. The same arithmetic, so the
    // same bits. (The copies' address is formed here and in `preload`, not
    // once for both: either single form changed the PTX of the fp32 8-vector
    // preload instances, whose timings round 23 did not measure again.)
    const T* weight_copy =
        reinterpret_cast<const T*>(preloaded) + static_cast<int64_t>(group) * 2 * d;
    const T* bias_copy = weight_copy + d;
    auto store_row = [&](auto weight_is, auto bias_is) {
#pragma unroll
      for (int it = 0; it < ITERS; ++it) {
        const int col = column(it);
        if (!live || (!kFull && col >= d)) continue;
        // A parameter's vector: the fill where the kernel knows it absent,
        // else from the registers it was loaded into or its shared-memory copy.
        auto param = [&](auto is, const auto& regs, const T* copy, float fill, float(&v)[VEC]) {
          if constexpr (decltype(is)::value == ParamIs::kAbsent) {
#pragma unroll
            for (int i = 0; i < VEC; ++i) v[i] = fill;
          } else if constexpr (kParamsInRegisters) {
            UnpackRaw<T, VEC>(regs[it], v);
          } else {
            LoadFloats(copy + col, v);
          }
        };
        float w[VEC], b[VEC];
        param(weight_is, w_reg, weight_copy, 1.0f, w);
        param(bias_is, b_reg, bias_copy, 0.0f, b);
        store_output(it, col, w, b);
      }
    };
    using Present = std::integral_constant<ParamIs, ParamIs::kPresent>;
    using Absent = std::integral_constant<ParamIs, ParamIs::kAbsent>;
    if (weight != nullptr) {
      bias != nullptr ? store_row(Present{}, Present{}) : store_row(Present{}, Absent{});
    } else {
      bias != nullptr ? store_row(Absent{}, Present{}) : store_row(Absent{}, Absent{});
    }
  } else {
    float w[kSlots][VEC], b[kSlots][VEC];
    auto load_params = [&](int it, int col) {
      LoadParam<kPrefetch>(weight, col, 1.0f, w[it % kSlots]);
      LoadParam<kPrefetch>(bias, col, 0.0f, b[it % kSlots]);
    };
    auto prefetch_params = [&](int it) {
      load_params(it, kFull || column(it) < d ? column(it) : 0);
    };
    if constexpr (kPrefetch) {
      // (Vector 0 apart: as one loop, instances of kAhead 1 compiled to other PTX.)
      prefetch_params(0);
#pragma unroll
      for (int it = 1; it < kAhead; ++it) prefetch_params(it);
    }
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int col = column(it);
      if constexpr (kPrefetch) {
        if (it + kAhead < ITERS) prefetch_params(it + kAhead);
      }
      if (!live || (!kFull && col >= d)) continue;
      if constexpr (!kPrefetch) load_params(it, col);
      store_output(it, col, w[it % kSlots], b[it % kSlots]);
    }
  }
  if constexpr (!kEarlyStats) {
    if (live && t == 0) StoreRowStats(a, row, mean, rstd);
  }
}

// Vectors per batch of ForwardStreamKernel's passes (StreamPass): 4 for
// 16-bit rows of single elements (vec 1), else 1. Measured on the H100 against
// 1 (bench/results/gpu-2026-11-28-round42.md, call 1): bf16 RMSNorm 4096 x
// 10001 135.7 -> 113.3 us, 16384 x 4097 227.3 -> 205.8, 2048 x 30001 246.8
// -> 224.4, LayerNorm 156.7 -> 145.6, 267.8 -> 277.0, 300.7 -> 281.3; fp32
// rows slower at 4 (8192 x 8191 RMSNorm 223.8 -> 391.7: 86 registers, one
// block per SM) and mixed at 8 (16384 x 4097 212.1 -> 267.3, 2048 x 30001
// 330.6 -> 282.8).
template <typename T, int VEC>
inline constexpr int kForwardStreamBatch = VEC == 1 && sizeof(T) == 2 ? 4 : 1;

// Rows too long for registers: one block per row, three passes over it
// (sum, sum of squares, output), each a batch of loads at a time (StreamPass);
// the row stays in L2 between passes.
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
  // Rows of single elements (vec 1) ask memory for the whole row at once: the
  // first pass's own loads, one element per thread at a time, keep too few
  // bytes in flight. Measured on the H100 (bench/results/gpu-2026-11-28-
  // round42.md, call 3) against none: bf16 RMSNorm 4096 x 10001 113.6 -> 97.3
  // us, 2048 x 20001 122.8 -> 108.5, LayerNorm 16384 x 4097 276.5 -> 247.3;
  // fp32 LayerNorm 8192 x 8191 232.1 -> 218.4. Rows of 16-byte vectors, whose
  // loads keep enough in flight, measured slower with it (bf16 RMSNorm 1024 x
  // 65536 146.8 -> 162.8, fp32 2048 x 30000 260.3 -> 292.8). Rows of half
  // vectors too where they have no y (gpu-2026-11-28-round43.md, call 3):
  // fp32 RMSNorm 4096 x 12002 186.5 -> 166.4, LayerNorm 196.8 -> 172.9, 2048 x
  // 16382 148.3 -> 140.9, 166.9 -> 149.9; bf16 2048 x 20004 79.8 -> 74.3,
  // 86.9 -> 80.3; but add + RMSNorm slower (fp32 4096 x 12002 410.9 -> 455.8,
  // bf16 2048 x 20004 173.6 -> 186.3).
  if (VEC * sizeof(T) < 16 && (VEC == 1 || a.y == nullptr) && t == 0) {
    PrefetchToL2(x, a.hidden * static_cast<int64_t>(sizeof(T)));
    if (a.y != nullptr) PrefetchToL2(y, a.hidden * static_cast<int64_t>(sizeof(T)));
  }
  constexpr int kBatch = kForwardStreamBatch<T, VEC>;
  float p[kBatch][VEC];  // one batch's p = x + y (StreamPass)
  auto load_p = [&](int j, int col) {
    LoadFloats(x + col, p[j]);
    if (a.y != nullptr) {
      float yv[VEC];
      LoadFloats(y + col, yv);
#pragma unroll
      for (int i = 0; i < VEC; ++i) p[j][i] += yv[i];
    }
  };

  float mean = 0.0f;
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
  const float rstd = RstdOfSumOfSquares(sum_sq[0], a.norm);
  const float mul = rstd * a.norm.scale;

  float w[kBatch][VEC], b[kBatch][VEC];
  auto load_all = [&](int j, int col) {
    load_p(j, col);
    if (a.weight != nullptr) {
      LoadFloats(static_cast<const T*>(a.weight) + col, w[j]);
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) w[j][i] = 1.0f;
    }
    if (a.bias != nullptr) {
      LoadFloats(static_cast<const T*>(a.bias) + col, b[j]);
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) b[j][i] = 0.0f;
    }
  };
  StreamPass<VEC, kBatch>(t, tpr, d, load_all, [&](int j, int col) {
    float o[VEC];
#pragma unroll
    for (int i = 0; i < VEC; ++i) o[i] = NormOutput(p[j][i], mean, mul, w[j][i], b[j][i]);
    StoreFloats(static_cast<T*>(a.out) + base + col, o);
    if (a.residual_out != nullptr) {
      StoreFloatsEither<T>(a.residual_out, base + col, residual_f32, p[j]);
    }
  });
  if (t == 0) StoreRowStats(a, row, mean, rstd);
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_FORWARD_KERNELS_CUH_
