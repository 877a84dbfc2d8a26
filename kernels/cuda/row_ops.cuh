// Device building blocks of the norm kernels: storage <-> fp32 conversion,
// vector loads and stores, and the row group's sum.
#ifndef NORMSERVE_KERNELS_CUDA_ROW_OPS_CUH_
#define NORMSERVE_KERNELS_CUDA_ROW_OPS_CUH_

#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "row_layout.h"

namespace normserve::kernels::cuda {

__device__ __forceinline__ float ToFloat(float v) { return v; }
__device__ __forceinline__ float ToFloat(__half v) { return __half2float(v); }
__device__ __forceinline__ float ToFloat(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T FromFloat(float v);
template <>
__device__ __forceinline__ float FromFloat<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half FromFloat<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// N elements accessed together; aligned to at most 16 bytes (the widest
// access of sm_90), so an fp32 vector of 8 is two 16-byte accesses.
template <typename T, int N>
struct alignas(sizeof(T) * N < 16 ? sizeof(T) * N : 16) Vec {
  T v[N];
};

// A vector as stored -> fp32. bf16 pairs are split with one integer op per
// element (shift or mask of the 32-bit word: bf16 is the high half of an
// fp32), where the compiler's conversion of the high half took two (PRMT +
// shift); exact either way. Hot in the backward kernels, which convert x and
// dy twice per row (bench/results/gpu-2026-11-24-round8.md).
__device__ __forceinline__ void Bf16PairToFloats(uint32_t word, float& lo, float& hi) {
  lo = __uint_as_float(word << 16);
  hi = __uint_as_float(word & 0xffff0000u);
}
template <typename T, int N>
__device__ __forceinline__ void UnpackFloats(const Vec<T, N>& raw, float (&dst)[N]) {
  if constexpr (std::is_same_v<T, __nv_bfloat16> && N % 2 == 0) {
    const auto* words = reinterpret_cast<const uint32_t*>(raw.v);
#pragma unroll
    for (int i = 0; i < N / 2; ++i) Bf16PairToFloats(words[i], dst[2 * i], dst[2 * i + 1]);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = ToFloat(raw.v[i]);
  }
}

template <typename T, int N>
__device__ __forceinline__ void LoadFloats(const T* src, float (&dst)[N]) {
  if constexpr (std::is_same_v<T, __nv_bfloat16> && N == 8) {
    // One 16-byte load: unpacking a loaded Vec word by word let the compiler
    // split the load into four 4-byte ones.
    const uint4 w = *reinterpret_cast<const uint4*>(src);
    Bf16PairToFloats(w.x, dst[0], dst[1]);
    Bf16PairToFloats(w.y, dst[2], dst[3]);
    Bf16PairToFloats(w.z, dst[4], dst[5]);
    Bf16PairToFloats(w.w, dst[6], dst[7]);
  } else {
    const Vec<T, N> raw = *reinterpret_cast<const Vec<T, N>*>(src);
    UnpackFloats(raw, dst);
  }
}

// A vector as loaded and held before conversion: one 16-byte word where the
// vector is 16 bytes, and one 8-byte word where it is 8 (half vectors), so
// that a select between it and zeros works on whole 32-bit registers (a Vec
// of 16-bit elements was selected half by half). The 8-byte word measured on
// the H100 (bench/results/gpu-2026-11-28-round44.md, call 1), the staged
// backward's residual gradient: bf16 add + RMSNorm backward 8192 x 4100
// 220.0 -> 191.5 us, 4096 x 6004 138.6 -> 109.9, 16384 x 1004 82.7 -> 66.6
// (fp32 rows unchanged, call 2: 8192 x 8190 410.1 -> 410.7).
template <typename T, int N>
using RawVec = std::conditional_t<sizeof(T) * N == 16, uint4,
                                  std::conditional_t<sizeof(T) * N == 8, uint2, Vec<T, N>>>;

// The vector at src when `valid`, zeros otherwise.
template <typename T, int N>
__device__ __forceinline__ RawVec<T, N> LoadRawOrZero(const T* src, bool valid) {
  RawVec<T, N> raw{};
  if (valid) raw = *reinterpret_cast<const RawVec<T, N>*>(src);
  return raw;
}

template <typename T, int N>
__device__ __forceinline__ void UnpackRaw(const RawVec<T, N>& raw, float (&dst)[N]) {
  Vec<T, N> v;
  static_assert(sizeof(v) == sizeof(raw));
  __builtin_memcpy(&v, &raw, sizeof(v));
  UnpackFloats(v, dst);
}

// LoadFloats through the read-only data path (ld.global.nc): for global
// memory that no thread writes during the kernel (weights, biases).
template <typename T, int N>
__device__ __forceinline__ void LoadFloatsReadOnly(const T* src, float (&dst)[N]) {
  if constexpr (sizeof(T) * N == 16) {
    const uint4 word = __ldg(reinterpret_cast<const uint4*>(src));
    Vec<T, N> raw;
    static_assert(sizeof(raw) == sizeof(word));
    __builtin_memcpy(&raw, &word, sizeof(word));
    UnpackFloats(raw, dst);
  } else if constexpr (sizeof(T) * N == 8) {  // half vectors
    const uint2 word = __ldg(reinterpret_cast<const uint2*>(src));
    Vec<T, N> raw;
    static_assert(sizeof(raw) == sizeof(word));
    __builtin_memcpy(&raw, &word, sizeof(word));
    UnpackFloats(raw, dst);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = ToFloat(__ldg(src + i));
  }
}

template <typename T, int N>
__device__ __forceinline__ void StoreFloats(T* dst, const float (&src)[N]) {
  Vec<T, N> raw;
#pragma unroll
  for (int i = 0; i < N; ++i) raw.v[i] = FromFloat<T>(src[i]);
  *reinterpret_cast<Vec<T, N>*>(dst) = raw;
}

// Loads N values stored as T, or as fp32 when `as_f32` (residual tensors).
template <typename T, int N>
__device__ __forceinline__ void LoadFloatsEither(const void* base, int64_t index, bool as_f32,
                                                 float (&dst)[N]) {
  if (as_f32) {
    LoadFloats(static_cast<const float*>(base) + index, dst);
  } else {
    LoadFloats(static_cast<const T*>(base) + index, dst);
  }
}

template <typename T, int N>
__device__ __forceinline__ void StoreFloatsEither(void* base, int64_t index, bool as_f32,
                                                  const float (&src)[N]) {
  if (as_f32) {
    StoreFloats(static_cast<float*>(base) + index, src);
  } else {
    StoreFloats(static_cast<T*>(base) + index, src);
  }
}

// A streaming kernel's pass (a block works on one row at a time, in several
// passes) over a thread's vectors t, t + tpr, ... of the columns below `end`,
// kBatch at a time: load(j, col) for each vector j of the batch, then
// use(j, col) for each, in column order (sums accumulate in the order of one
// vector at a time). A batch's loads are all issued before any use waits on them, where
// the use's stores would otherwise keep the next vector's loads behind them.
// j indexes the caller's per-batch registers.
template <int VEC, int kBatch, typename Load, typename Use>
__device__ __forceinline__ void StreamPass(int t, int tpr, int end, Load&& load, Use&& use) {
  const int step = tpr * VEC;
  for (int first = t * VEC; first < end; first += kBatch * step) {
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      if (first + j * step < end) load(j, first + j * step);
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      if (first + j * step < end) use(j, first + j * step);
    }
  }
}

// A row of fp32 vectors in shared memory, [row_len] floats, each thread
// storing and loading its own vectors at `local` (a multiple of VEC). A
// 16-bit row's vector of 8 covers 32 bytes of fp32, which a warp accessing
// them as two 16-byte halves at a 32-byte stride would take in twice the
// minimal wavefronts (bank conflicts); so the first halves of all vectors
// come first, then the second halves, each accessed at a 16-byte stride
// (ncu, bench/results/gpu-2026-11-24-round8.md).
template <int VEC>
struct SharedFloatRow {
  static constexpr bool kSplit = VEC == 8;
  float* base;
  int64_t row_len;
  __device__ __forceinline__ void Store(int local, const float (&v)[VEC]) const {
    if constexpr (kSplit) {
      const float lo[4] = {v[0], v[1], v[2], v[3]}, hi[4] = {v[4], v[5], v[6], v[7]};
      StoreFloats(base + local / 2, lo);
      StoreFloats(base + row_len / 2 + local / 2, hi);
    } else {
      StoreFloats(base + local, v);
    }
  }
  __device__ __forceinline__ void Load(int local, float (&v)[VEC]) const {
    if constexpr (kSplit) {
      float lo[4], hi[4];
      LoadFloats(base + local / 2, lo);
      LoadFloats(base + row_len / 2 + local / 2, hi);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        v[i] = lo[i];
        v[4 + i] = hi[i];
      }
    } else {
      LoadFloats(base + local, v);
    }
  }
};

// Largest block the kernels launch, in warps: sizes the reduction scratch.
inline constexpr int kMaxWarps = 16;
// Most values one GroupSum call reduces.
inline constexpr int kMaxGroupSums = 3;

// Shared-memory scratch of GroupSum over a block. Double-buffered:
// consecutive calls write alternate halves, so a call needs one block barrier
// instead of two (a thread writes a half again only after the barrier of the
// call in between, which every reader of that half has passed). Every thread
// of the block makes the same sequence of GroupSum calls, so `phase` stays
// block-uniform. kDoubleBuffered = false saves the phase register and pays the
// second barrier: the staged backward kernel, short of registers, measured
// faster so (bench/results/gpu-2026-11-23-round4.md). (Rows split over a
// cluster sum through ClusterSums, cluster_sum.cuh.)
template <bool kDoubleBuffered>
struct GroupScratchOf {
  static constexpr int kFloats = 2 * kMaxWarps * kMaxGroupSums;
  float* buffers;  // __shared__ float[kFloats]
  int phase = 0;
  // The buffer of the calling reduction (GroupSum, CanonicalGroupSum, ...).
  __device__ __forceinline__ float* Next() {
    if constexpr (kDoubleBuffered) {
      float* buffer = buffers + phase * kMaxWarps * kMaxGroupSums;
      phase ^= 1;
      return buffer;
    } else {
      __syncthreads();  // the previous call's readers are done with the buffer
      return buffers;
    }
  }
};
using GroupScratch = GroupScratchOf<true>;

// The static shared memory of a block's kernel: its GroupSum scratch.
inline constexpr size_t kScratchBytes = sizeof(float) * GroupScratch::kFloats;
// ... and of a cluster of `ctas` blocks (ClusterSums: partials of all its
// warps in two stages, and four mbarriers), the largest for clusters of at
// most kMaxClusterCtas blocks.
constexpr size_t ClusterScratchBytes(int ctas) {
  return sizeof(float) * 2 * (ctas * kMaxWarps) * kMaxGroupSums + 4 * sizeof(uint64_t);
}
inline constexpr int kMaxClusterCtas = kWidestClusterCtas;
inline constexpr size_t kClusterScratchBytes = ClusterScratchBytes(kMaxClusterCtas);

// Host side: dynamic shared memory that, with a kernel's static GroupSum
// scratch, goes beyond the default 48 KB needs the kernel's opt-in.
template <typename Kernel>
cudaError_t AllowDynamicShared(Kernel* kernel, size_t bytes) {
  if (bytes + kClusterScratchBytes <= 48 * 1024) return cudaSuccess;  // either kind of scratch
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(bytes));
}

// AllowDynamicShared for a kernel that stages rows through shared memory, and
// the largest shared-memory carveout (L1 gives way), so that several blocks'
// copies fit an SM.
template <typename Kernel>
cudaError_t AllowStagedShared(Kernel* kernel, size_t bytes) {
  if (const cudaError_t err = AllowDynamicShared(kernel, bytes); err != cudaSuccess) return err;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                              cudaSharedmemCarveoutMaxShared);
}

// The configuration of a 1-D launch of `clusters` clusters of `ctas` blocks
// each (for cudaLaunchKernelEx and cudaOccupancyMaxActiveClusters). Not
// copyable: `config` points at `cluster`.
struct ClusterLaunch {
  cudaLaunchAttribute cluster;
  cudaLaunchConfig_t config;
  ClusterLaunch(unsigned clusters, int ctas, unsigned block_threads, size_t shared_bytes,
                cudaStream_t stream) {
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = static_cast<unsigned>(ctas);
    cluster.val.clusterDim.y = 1;
    cluster.val.clusterDim.z = 1;
    config = {};
    config.gridDim = dim3(clusters * static_cast<unsigned>(ctas));
    config.blockDim = dim3(block_threads);
    config.dynamicSmemBytes = shared_bytes;
    config.stream = stream;
    config.attrs = &cluster;
    config.numAttrs = 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;
};

// Launches `kernel` as `clusters` clusters of `ctas` blocks each (1-D).
template <typename... Params, typename... Args>
cudaError_t LaunchClusters(void (*kernel)(Params...), unsigned clusters, int ctas,
                           unsigned block_threads, size_t shared_bytes, cudaStream_t stream,
                           Args... args) {
  const ClusterLaunch launch(clusters, ctas, block_threads, shared_bytes, stream);
  return cudaLaunchKernelEx(&launch.config, kernel, args...);
}

// A thread's place in the row layout (row_layout.h): its row group in the
// block, its index t among the row's tpr threads, and its block's rank in the
// cluster (kCtas > 1: one row group per cluster, block r holding threads
// [r * tpr / kCtas, (r + 1) * tpr / kCtas) of the row).
struct RowThread {
  int group;
  int t;
  int rank;
};
template <int kCtas>
__device__ __forceinline__ RowThread RowThreadOf(int tpr) {
  const int cta_tpr = tpr / kCtas;
  int rank = 0;
  if constexpr (kCtas > 1) rank = static_cast<int>(cooperative_groups::this_cluster().block_rank());
  const int group = static_cast<int>(threadIdx.x) / cta_tpr;
  return {group, rank * cta_tpr + static_cast<int>(threadIdx.x) - group * cta_tpr, rank};
}

// Where a thread's vector `it` sits in per-block row storage (shared-memory
// copies of weights, dw / db accumulators): at its column, or with a row split
// over kCtas blocks, among the block's own vectors packed in order (a block
// holds only its share of the columns).
template <int VEC, int kCtas>
__device__ __forceinline__ int LocalColumn(int it, int tpr, int t) {
  if constexpr (kCtas == 1) {
    return (it * tpr + t) * VEC;
  } else {
    const int cta_tpr = tpr / kCtas;
    return (it * cta_tpr + t % cta_tpr) * VEC;
  }
}

// The length of such per-block row storage: the row, or the block's share.
template <int VEC, int ITERS, int kCtas>
__host__ __device__ __forceinline__ int64_t LocalRowLength(int64_t hidden, int tpr) {
  return kCtas == 1 ? hidden : int64_t{ITERS} * (tpr / kCtas) * VEC;
}

// Each of v[0..N) summed over aligned groups of `width` lanes (a power of
// two), by an xor butterfly: every lane of a group ends with the same bits.
template <int N>
__device__ __forceinline__ void WarpSum(float (&v)[N], int width) {
  for (int offset = width / 2; offset > 0; offset /= 2) {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] += __shfl_xor_sync(0xffffffffu, v[i], offset);
  }
}

// The second butterfly's span for `warps` partials: the next power of two.
__device__ __forceinline__ int PartialsSpan(int warps) {
  return warps == 1 ? 1 : 1 << (32 - __clz(warps - 1));
}

// The first warp of the row group of `warps` warps that holds `warp`; without
// a division where warps is a power of two (these reductions are on the
// latency-bound path of small launches).
__device__ __forceinline__ int FirstWarpOfGroup(int warp, int warps) {
  return (warps & (warps - 1)) == 0 ? warp & ~(warps - 1) : warp / warps * warps;
}

// Sums each of v[0..N) over the `tpr` threads of the caller's row group
// (threads [g * tpr, (g + 1) * tpr) of the block); every thread of the group
// gets the same bits. The order of additions depends on tpr alone. Every
// thread of the block must call it (it synchronizes the block when tpr > 32).
//
// Both stages are xor butterflies: lane i and its partner add the same two
// partials (in either order, which gives the same bits), so all lanes end with
// identical sums. Across warps, lane l of every warp reads the partial of the
// group's warp l % span and the warp repeats the butterfly over them, so each
// thread spends N loads instead of one per warp and value.
template <int N, bool kDoubleBuffered>
__device__ __forceinline__ void GroupSum(float (&v)[N], int tpr,
                                         GroupScratchOf<kDoubleBuffered>& scratch) {
  static_assert(N <= kMaxGroupSums, "scratch holds kMaxGroupSums values per warp");
  WarpSum(v, tpr < 32 ? tpr : 32);
  if (tpr <= 32) return;
  float* buffer = scratch.Next();
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) {
#pragma unroll
    for (int i = 0; i < N; ++i) buffer[warp * N + i] = v[i];
  }
  const int warps = tpr / 32;  // the group's warps
  const int first = FirstWarpOfGroup(warp, warps);
  __syncthreads();
  // warps <= 16. Lanes form groups of `span` that each read all partials,
  // lane l the one of warp l % span, so the butterfly within every group
  // gives each lane the same full sum.
  const int span = PartialsSpan(warps);
  const int w = lane & (span - 1);
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = 0.0f;
  if (w < warps) {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = buffer[(first + w) * N + i];
  }
  WarpSum(v, span);
}

// ---------------------------------------------------------------------------
// Canonical row reductions (forward rows with every vector inside the row and
// at most 32 values per thread; RowLayout::spread). Their order of additions
// is a property of the row alone, the same for a row group of tpr threads
// holding ITERS vectors each and for one of tpr * 2^s threads holding
// ITERS / 2^s, so a launch may pick either by its row count without changing
// a bit: latency-bound launches spread a row over more threads.
//
// A row of V = ITERS * tpr vectors (both powers of two) is reduced as a
// binary tree over the bits of the vector index, one bit per level, after its
// leaves: runs of 8 values summed in element order (a 16-bit vector, or an
// fp32 vector and the one V / 2 further on: CanonicalLeafVectors). First the
// remaining top log2(ITERS) bits, those a thread of the unspread layout holds,
// from the highest down; then bits 0, 1, 2, ... Spreading by s moves the
// lowest s of the in-thread bits to the top s lane bits (CanonicalPosition),
// which the warp butterfly reduces first, highest first, before the low lane
// bits from the lowest up; the warps' partials then follow from the lowest
// warp bit up.

// The vector index within the row of thread t's vector 0 (vector `it` is at
// it * tpr + CanonicalPosition): thread t itself when spread is 0.
// kWarpWide: the caller knows tpr >= 32.
template <bool kWarpWide = false>
__device__ __forceinline__ int CanonicalPosition(int t, int tpr, int spread) {
  const int width = kWarpWide || tpr >= 32 ? 32 : tpr;
  const int low_bits = 31 - __clz(width) - spread;  // log2(width >> spread)
  const int lane = t & 31;
  const int low = lane & ((1 << low_bits) - 1);
  return (lane >> low_bits) * (tpr >> spread) + ((t >> 5) << low_bits) + low;
}

// An opaque copy of p: later offsets are added to it as they stand, not
// folded back into the arithmetic that formed it (a row's base added to each
// vector's column in 64 bits, on the path to the row's first load). Accesses
// through it are generic ones; asserting it global (__isGlobal) made them
// global ones but measured no faster (H200, ncu: fp32 RMSNorm 1 x 4096 3040
// -> 3168 ns; bench/results/gpu-2026-11-26-round23.md, call 9).
template <typename P>
__device__ __forceinline__ P* Opaque(P* p) {
  asm("" : "+l"(p));
  return p;
}

// A butterfly over `width` lanes (a power of two) in the canonical order: the
// top `spread` lane bits from the highest down, then the others from the
// lowest up. `merge(offset)` combines a lane with its partner at `offset`.
// kWarpWide: the caller knows width is 32 (rows of a warp or more), and the
// five steps are unrolled, the k-th at offset 16 >> k among the top `spread`
// bits, else 1 << (k - spread): the same order, no loop.
template <bool kWarpWide = false, typename Merge>
__device__ __forceinline__ void CanonicalButterfly(int width, int spread, Merge merge) {
  if constexpr (kWarpWide) {
#pragma unroll
    for (int k = 0; k < 5; ++k) merge(k < spread ? 16 >> k : 1 << (k - spread));
  } else {
    const int low_width = width >> spread;
    for (int offset = width / 2; offset >= low_width && offset > 0; offset /= 2) merge(offset);
    for (int offset = 1; offset < low_width; offset *= 2) merge(offset);
  }
}

// Chan's merge of two halves of n values each (half_weight = 1 / (2 n)):
// sum = a + b, M2 = M2a + M2b + (a - b)^2 / (2 n). Symmetric in the halves,
// so both partners of a butterfly get the same bits.
__device__ __forceinline__ void ChanMerge(float& sum, float& m2, float other_sum, float other_m2,
                                          float half_weight) {
  const float d = __fsub_rn(sum, other_sum);
  m2 = __fmaf_rn(d, __fmul_rn(d, half_weight), __fadd_rn(m2, other_m2));
  sum = __fadd_rn(sum, other_sum);
}

// The canonical sum of v over the caller's row group (see above): every
// thread of the group gets the same bits. Every thread of the block must call
// it (it synchronizes the block when tpr > 32).
template <bool kWarpWide = false, bool kDoubleBuffered>
__device__ __forceinline__ void CanonicalGroupSum(float& v, int tpr, int spread,
                                                  GroupScratchOf<kDoubleBuffered>& scratch) {
  CanonicalButterfly<kWarpWide>(tpr < 32 ? tpr : 32, spread,
                                [&](int offset) { v += __shfl_xor_sync(0xffffffffu, v, offset); });
  if (tpr <= 32) return;
  float* buffer = scratch.Next();
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) buffer[warp] = v;
  const int warps = tpr / 32;
  const int first = FirstWarpOfGroup(warp, warps);
  __syncthreads();
  const int span = PartialsSpan(warps);
  const int w = threadIdx.x % 32 & (span - 1);
  v = w < warps ? buffer[first + w] : 0.0f;
  for (int offset = 1; offset < span; offset *= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
}

// The canonical sum and M2 of a row group from each thread's sum and M2 of
// `count` values (ChanMerge at every level, so a level's bits do not depend on
// whether a thread, a lane pair or a warp pair merges it): one reduction where
// the sum and then the squares about its mean would take two. Rows of a number
// of warps that is not a power of two (never spread) cannot merge warps in
// equal halves: they sum the warps' sums s_w, then M2 = sum_w (M2_w +
// (s_w - n_w m)^2 / n_w) about the mean m = sum * inv_total. Every thread of
// the block must call it.
template <bool kWarpWide = false, bool kDoubleBuffered>
__device__ __forceinline__ void CanonicalGroupMoments(float& sum, float& m2, int count, int tpr,
                                                      int spread, float inv_total,
                                                      GroupScratchOf<kDoubleBuffered>& scratch) {
  float half_weight = 0.5f / static_cast<float>(count);  // halves at every level
  auto merge = [&](int offset) {
    const float other_sum = __shfl_xor_sync(0xffffffffu, sum, offset);
    const float other_m2 = __shfl_xor_sync(0xffffffffu, m2, offset);
    ChanMerge(sum, m2, other_sum, other_m2, half_weight);
    half_weight *= 0.5f;
  };
  CanonicalButterfly<kWarpWide>(tpr < 32 ? tpr : 32, spread, merge);
  if (tpr <= 32) return;
  float* buffer = scratch.Next();
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) {
    buffer[2 * warp] = sum;
    buffer[2 * warp + 1] = m2;
  }
  const int warps = tpr / 32;
  const int first = FirstWarpOfGroup(warp, warps);
  __syncthreads();
  const int span = PartialsSpan(warps);
  const int w = threadIdx.x % 32 & (span - 1);
  const float warp_sum = w < warps ? buffer[2 * (first + w)] : 0.0f;
  const float warp_m2 = w < warps ? buffer[2 * (first + w) + 1] : 0.0f;
  if (span == warps) {
    sum = warp_sum;
    m2 = warp_m2;
    for (int offset = 1; offset < span; offset *= 2) merge(offset);
    return;
  }
  float total = warp_sum;
  for (int offset = 1; offset < span; offset *= 2) {
    total += __shfl_xor_sync(0xffffffffu, total, offset);
  }
  sum = total;
  const float warp_count = 32.0f * static_cast<float>(count);
  const float inv_warp_count = 1.0f / warp_count;  // a power of two: exact
  const float e = w < warps ? __fmaf_rn(-warp_count, __fmul_rn(sum, inv_total), warp_sum) : 0.0f;
  float spread_m2 = __fmaf_rn(e, __fmul_rn(e, inv_warp_count), warp_m2);
  for (int offset = 1; offset < span; offset *= 2) {
    spread_m2 += __shfl_xor_sync(0xffffffffu, spread_m2, offset);
  }
  m2 = spread_m2;
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_ROW_OPS_CUH_
