// The forward kernel of rows that a launch runs with a fixed layout known at
// compile time: rows of 16-byte vectors, full (or, kFull = false, with bounds
// tests), plain (no y, no residual_out; held as loaded) or fused (kFused: y,
// residual_out optional; p = x + y held in fp32), kTpr threads per row placed
// by kSpread (CanonicalPosition); or plain rows of 8-byte vectors with bounds
// tests.
// ForwardKernel runs the same rows with a runtime layout (row groups,
// positions and reduction loops computed per thread) and every parameter
// combination behind runtime tests. Nine launches take it
// (forward_launch.cuh, forward_instances.cuh):
//  - plain 16-bit rows spread once (SpreadsOnce, where SpreadRowInstance
//    says which; on the H200 ForwardKernel's spread instance lost to the
//    unspread layouts where this one wins at most shapes, by up to 6 %:
//    bench/results/gpu-2026-11-26-round28.md, calls 3 and 7);
//  - plain rows of 4 vectors per thread, unspread (LeanUnspreadInstance:
//    16-bit rows of hidden 1024-16384, fp32 rows of 4096 and 8192;
//    ForwardKernel's instance executed 461 instructions a warp on an fp32
//    row of 8192 where Liger's kernel executes 278: round29.md, call 23);
//  - plain fp32 rows of 4096 spread once (SpreadFp32Instance; on the H200);
//  - plain fp32 rows of 2 vectors per thread, unspread (LeanPairInstance:
//    hidden 1024 and 2048);
//  - fused 16-bit rows spread once (LeanFusedInstance), and unspread ones of 4
//    vectors per thread: full of 3-16 warps, or with bounds tests
//    (LeanFusedUnspreadInstance; RMSNorm rows of 768, 1536 and 2304 at 3:
//    FusedThreeVectorInstance);
//  - plain 16-bit LayerNorm rows, and sparse RMSNorm rows (SparseRow), of 4
//    vectors per thread with bounds tests (kFull = false;
//    LaunchForwardRegisters), rows of 768, 1536 and 2304 at 3
//    (ThreeVectorInstance);
//  - plain rows of half vectors (8 bytes), of 4, 8 or 16 per thread
//    (LeanHalfInstance), and 16-bit ones of 16 per thread over 288 or 320
//    threads, which the layout streams (LongHalfRowInstance; over more
//    threads StagedLongRowKernel);
//  - plain 16-bit rows of 8 vectors of 8 per thread over 288 or 320
//    threads, hidden 16392-20480 (LongFullRowInstance; not latency-bound
//    launches; over more threads StagedLongRowKernel, forward_staged.cuh).
// The same arithmetic as ForwardKernel's instances of the row's other
// layouts (CanonicalRowStats, or RowStatsOf for rows with bounds tests;
// NormOutput), so the same bits (DeterminismTest, BoundsTestedRowsTest).
#ifndef NORMSERVE_KERNELS_CUDA_FORWARD_LEAN_CUH_
#define NORMSERVE_KERNELS_CUDA_FORWARD_LEAN_CUH_

#include <type_traits>

#include "forward_kernels.cuh"

namespace normserve::kernels::cuda {

// When LeanRowKernel loads a vector's weight and bias (see the output loop).
enum class ParamLoads {
  kAfterStore,   // after the previous vector's store (plain loads)
  kWithX,        // beside x, before the statistics: registers held throughout
  kWeightWithX,  // the weight beside x, the bias (if any) after the previous
                 // vector's store: the weight's registers alone held throughout
  kReadOnly,     // in the output loop through the read-only path
                 // (ld.global.nc), which the compiler may move ahead of the
                 // stores
};

// kFused: rows with y (p = x + y, residual_out optional), held as fp32 p.
// kMinBlocks > 0: compiled for blocks of at most kForwardBlockThreads threads
// (the forward launcher's blocks of short rows), or of one row where kTpr is
// more, kMinBlocks of them per SM (registers bounded to fit; 0: no bound past
// kMaxThreads). kFull = false: unspread rows with bounds tests (vectors past
// the row's end, or a partial statistic), plain or fused, their statistics from
// RowStatsOf as ForwardKernel's instances of such rows take them. kParams:
// when each vector's weight and bias are loaded.
template <typename T, int VEC, int ITERS, bool kCenter, int kTpr, int kSpread = kSpreadOnce,
          bool kFused = false, int kMinBlocks = 0, bool kFull = true,
          ParamLoads kParams = ParamLoads::kAfterStore>
__global__ void __launch_bounds__(kMinBlocks > 0
                                      ? (kTpr > kForwardBlockThreads ? kTpr : kForwardBlockThreads)
                                      : kMaxThreads,
                                  kMinBlocks)
    LeanRowKernel(const int rows_per_cta, const ForwardArgs a) {
  static_assert(sizeof(T) * VEC == 16 || (sizeof(T) * VEC == 8 && !kFull),
                "rows of 16-byte vectors, or bounds-tested rows of 8-byte ones");
  static_assert(ForwardCanonical<VEC, ITERS, true>() || (!kFull && VEC * ITERS <= 64),
                "rows of up to 32 values per thread, 64 with bounds tests");
  static_assert(kFull || kSpread == 0, "bounds-tested rows are unspread");
  __shared__ float scratch_buffers[GroupScratch::kFloats];
  GroupScratch scratch{scratch_buffers};
  const int thread = static_cast<int>(threadIdx.x);
  const int t = thread % kTpr;
  const int position = CanonicalPosition<kTpr >= 32>(t, kTpr, kSpread);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * rows_per_cta + thread / kTpr;
  const bool live = row < a.rows;
  const int64_t base = row * a.hidden;
  const int d = static_cast<int>(a.hidden);
  // Whether the thread's vector `it` lies inside the row.
  auto inside = [&](int it) { return kFull || (it * kTpr + position) * VEC < d; };
  const T* x = static_cast<const T*>(a.x) + base + position * VEC;
  const T* weight = static_cast<const T*>(a.weight);
  const T* bias = static_cast<const T*>(a.bias);
  // Vector `it` of a tensor: a constant offset from the thread's first one.
  auto at = [](auto* first, int it) { return first + it * kTpr * VEC; };
  constexpr bool kWeightBesideX =
      kParams == ParamLoads::kWithX || kParams == ParamLoads::kWeightWithX;
  constexpr bool kBiasBesideX = kParams == ParamLoads::kWithX;
  auto load_param = [&](const T* param, int it) {
    const auto* vector = reinterpret_cast<const RawVec<T, VEC>*>(at(param + position * VEC, it));
    if constexpr (kParams == ParamLoads::kReadOnly) return __ldg(vector);
    return *vector;
  };

  RawVec<T, VEC> raw[ITERS], y_raw[kFused ? ITERS : 1];
  RawVec<T, VEC> w_raw[ITERS], b_raw[ITERS];  // kWeightBesideX, kBiasBesideX
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    raw[it] = LoadRawOrZero<T, VEC>(at(x, it), live && inside(it));
    if constexpr (kWeightBesideX) {
      if (weight != nullptr && inside(it)) w_raw[it] = load_param(weight, it);
    }
    if constexpr (kBiasBesideX) {
      if (bias != nullptr && inside(it)) b_raw[it] = load_param(bias, it);
    }
    if constexpr (kFused) {
      y_raw[it] = LoadRawOrZero<T, VEC>(at(static_cast<const T*>(a.y) + base + position * VEC, it),
                                        live && inside(it));
    }
  }
  // Fused rows: p = x + y in fp32, as ForwardKernel forms it, and stored as
  // soon as formed (as ForwardKernel's fused 16-bit instances store it).
  float p[kFused ? ITERS : 1][VEC];
  if constexpr (kFused) {
    const bool residual_f32 = a.residual_dtype == DType::kF32;
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      float yv[VEC];
      UnpackRaw<T, VEC>(raw[it], p[it]);
      UnpackRaw<T, VEC>(y_raw[it], yv);
#pragma unroll
      for (int i = 0; i < VEC; ++i) p[it][i] += yv[i];
      if (live && inside(it) && a.residual_out != nullptr) {
        StoreFloatsEither<T>(a.residual_out, base + (it * kTpr + position) * VEC, residual_f32,
                             p[it]);
      }
    }
  }
  // Vector `it` of the row (x, or p), as floats.
  auto row_vector = [&](int it, float(&v)[VEC]) {
    if constexpr (kFused) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) v[i] = p[it][i];
    } else {
      UnpackRaw<T, VEC>(raw[it], v);
    }
  };
  float mean, rstd;
  if constexpr (kFull) {
    CanonicalRowStats<kCenter, VEC, ITERS, kTpr >= 32>(row_vector, kTpr, kSpread, a.norm, scratch,
                                                       mean, rstd);
  } else {
    RowStatsOf<kCenter, VEC, ITERS>(row_vector, kTpr, t, d, a.norm, scratch, mean, rstd);
  }
  if (!live) return;
  if (t == 0) StoreRowStats(a, row, mean, rstd);
  const float mul = rstd * a.norm.scale;
  T* const out = static_cast<T*>(a.out) + base + position * VEC;
  // The output, with which parameters there are known at compile time (as
  // ForwardKernel's kPreload instances). A vector's parameters are loaded
  // after the previous vector is stored (plain loads, which the compiler keeps
  // behind stores that may alias them): loaded through the read-only path
  // before the first store, they measured slower on the H100
  // (bench/results/gpu-2026-11-26-round28.md, call 5: LayerNorm 8192 x 8192
  // 93.4 -> 94.25 us). On the H200 (round57.md, calls 1-4) fp32 rows lost
  // with them one vector ahead (48 registers: two 512-thread blocks per SM
  // where 40 fit three; LayerNorm 16384 x 8192 263.25 -> 266.45 us) and with
  // them loaded beside x (70 registers, or 64 bounded: 263.1 -> 266.85, 262.25
  // -> 264.9); 16-bit RMSNorm rows one ahead were mixed (bf16 8192 x 16384
  // 133.75 -> 132.35, 32768 x 4096 132.45 -> 133.05). ncu places the fp32
  // LayerNorm gap to Liger's kernel here: ours waits on these loads (11.5 % of
  // the stall samples at 16384 x 8192), but through the read-only path they
  // lost too (round58.md, call D: bounded to 40 registers it spills, 262.35
  // -> 272.15 us; unbounded, 46 registers, 264.5), as did x cached in L2 only
  // so that they stay in L1 (call C: neutral) and persistent blocks reading
  // them from shared memory (call E: 262.65 -> 288.6). Rows of 2 vectors
  // per thread, which have the registers, gain from them loaded beside x
  // (ParamLoads::kWithX) on the H200: fp32 rows of 1024 and 2048, and
  // RMSNorm rows of 4096 spread once (round59.md, call B: RMSNorm 32768 x
  // 4096 262.8 -> 259.45 us); LayerNorm rows of 4096 spread once lost (261.25
  // -> 266.25), bf16 RMSNorm rows spread once too (32768 x 4096 131.8 ->
  // 141.95; with the weight alone beside x, 131.2). fp32 rows of half vectors
  // take either (LeanHalfInstance, round62.md); 16-bit rows of 3 vectors per
  // thread, the weight alone or both (ThreeVectorInstance, round78.md).
  auto store_row = [&](auto weight_is, auto bias_is) {
    constexpr bool kWeight = decltype(weight_is)::value == ParamIs::kPresent;
    constexpr bool kBias = decltype(bias_is)::value == ParamIs::kPresent;
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      if (!inside(it)) continue;
      float v[VEC], w[VEC], b[VEC], o[VEC];
      row_vector(it, v);
      if constexpr (kWeight) {
        UnpackRaw<T, VEC>(kWeightBesideX ? w_raw[it] : load_param(weight, it), w);
      } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) w[i] = 1.0f;
      }
      if constexpr (kBias) {
        UnpackRaw<T, VEC>(kBiasBesideX ? b_raw[it] : load_param(bias, it), b);
      } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) b[i] = 0.0f;
      }
#pragma unroll
      for (int i = 0; i < VEC; ++i) o[i] = NormOutput(v[i], mean, mul, w[i], b[i]);
      StoreFloats(at(out, it), o);
    }
  };
  using Present = std::integral_constant<ParamIs, ParamIs::kPresent>;
  using Absent = std::integral_constant<ParamIs, ParamIs::kAbsent>;
  switch ((weight != nullptr ? 2 : 0) | (bias != nullptr ? 1 : 0)) {
    case 3:
      return store_row(Present{}, Present{});
    case 2:
      return store_row(Present{}, Absent{});
    case 1:
      return store_row(Absent{}, Present{});
    default:
      return store_row(Absent{}, Absent{});
  }
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_FORWARD_LEAN_CUH_
