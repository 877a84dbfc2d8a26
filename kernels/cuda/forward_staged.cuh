// Plain 16-bit rows of 64 values per thread over kStagedLongRowThreads
// threads or more: rows of 8 vectors of 8 (hidden 20488-32768) in launches
// that are not latency-bound, and rows of 16 half vectors (hidden 4 mod 8,
// 20484-32764, LayerNorm ones from 18436) in every launch. One row per block,
// x copied into shared memory as stored (cp.async) and read from there by
// each pass, so that a thread's registers hold no row (32-40 registers, where
// LongFullRowInstance's 117-127 held one block per SM): with a 40-64 KiB copy
// of the row, several rows are in flight per SM (launches of at most one row
// per SM: kStagedMinBlocks). Each thread copies and reads back only its own
// vectors (no block barrier), but in launches of more rows than SMs rows of
// half vectors are copied by the block in 16-byte pieces.
// The same arithmetic as ForwardKernel's and LongFullRowInstance's
// (RowStatsOf over the same columns, NormOutput), so the same bits as the
// latency-bound launches, which keep ForwardKernel's preload instance.
#ifndef NORMSERVE_KERNELS_CUDA_FORWARD_STAGED_CUH_
#define NORMSERVE_KERNELS_CUDA_FORWARD_STAGED_CUH_

#include <cstdint>
#include <utility>

#include "async_copy.cuh"
#include "forward_instances.cuh"
#include "forward_kernels.cuh"
#include "launch.h"
#include "row_layout.h"

namespace normserve::kernels::cuda {

// Measured on the H200 against LongFullRowInstance (and ForwardKernel's
// staged instance, RMSNorm rows over 384 threads) (bench/results/
// gpu-2026-12-01-round65.md, table 2, call C), bf16 RMSNorm: 4096 x 22528
// 117.34 -> 98.99 us, 8192 x 22000 227.10 -> 193.68, 4096 x 24576 117.84 ->
// 105.36, 4096 x 28672 132.99 -> 123.34, 2048 x 32768 78.28 -> 73.11, 300 x
// 32768 21.96 -> 16.26; LayerNorm 4096 x 22528 133.96 -> 99.53, 4096 x 24576
// 134.59 -> 107.01, 2048 x 32768 85.41 -> 75.15; fp16 alike; bounds-tested
// rows over 480-512 threads about even in RMSNorm (2048 x 30000 75.79 ->
// 75.36, 2048 x 32000 77.08 -> 76.70), faster in LayerNorm (88.66 -> 81.48).
// Rows over 288-320 threads lost so (table 1, call A): RMSNorm 4096 x 20480
// 88.31 -> 89.16, LayerNorm 89.10 -> 96.73; 8192 x 16392 138.06 -> 157.99
// and 145.95 -> 180.44. A cluster of two blocks per row (GroupSum through
// distributed shared memory, as Quack runs these rows) measured between the
// two (RMSNorm 4096 x 24576 109.98, 2048 x 32768 76.59; 4096 x 20480 94.83).
// Bounds tests on a thread's last vectors only (StagedSureIters), the vector
// past the row's end formed and not stored: 50-62 -> 33-40 registers, three
// 512-thread blocks per SM where two fit. Measured on the H200
// (gpu-2026-12-01-round66.md, table 1, call A), bf16 bounds-tested rows:
// RMSNorm 2048 x 30000 74.95 -> 69.65 us, 4096 x 30000 138.45 -> 130.15,
// 8192 x 22000 193.8 -> 185.5; LayerNorm 2048 x 30000 81.1 -> 74.1, 8192 x
// 22000 214.15 -> 199.5; fp16 alike.
inline constexpr int kStagedLongRowThreads = 352;
// Rows of half vectors (hidden 4 mod 8) take the kernel over as many threads,
// and LayerNorm ones from kStagedHalfLayerNormThreads. Measured on the H200
// against LongHalfRowInstance and the stream (round66.md, table 1, call A),
// bf16 RMSNorm 4096 x 22524 121.5 -> 112.8 us, 4096 x 24572 129.15 ->
// 122.05, 2048 x 32764 92.5 -> 84.95, 1024 x 32764 52.7 -> 46.15 (4096 x
// 28668 143.3 -> 143.7); LayerNorm 4096 x 22524 138.45 -> 121.9, 4096 x
// 30716 205.7 -> 166.3, 2048 x 32764 118.55 -> 91.35, 300 x 32764 30.65 ->
// 20.5. Then, copied in 16-byte pieces (table 3, call C): RMSNorm 4096 x
// 24572 121.05 -> 115.8, 4096 x 28668 142.2 -> 131.45, 16384 x 24572 463.05
// -> 436.0, 2048 x 32764 84.25 -> 80.8; LayerNorm 4096 x 22524 120.65 ->
// 112.15, 4096 x 30716 164.8 -> 151.8; but 300 x 32764 18.75 -> 19.05 and
// 64 x 32764 10.15 -> 10.65 (launches of at most one row per SM keep the
// per-thread copy). Over 320 threads LayerNorm rows gained (2048 x 20004
// 59.25 -> 55.4, 4096 x 20476 106.7 -> 102.65) where RMSNorm rows lost
// (4096 x 20476 92.3 -> 96.3, 8192 x 16388 over 288: 143.45 -> 150.85).
inline constexpr int kStagedHalfLayerNormThreads = 320;

// The vectors per thread that lie inside every row whose layout spreads ITERS
// per thread over `tpr` threads: the layout takes the fewest warps that hold
// the row (ThreadsFor), so the row has more than (tpr - 32) * ITERS vectors
// (of 64 values per thread: hidden > (tpr - 32) * 64).
__host__ __device__ constexpr int StagedSureIters(int tpr, int iters) {
  return (tpr - 32) * iters / tpr;
}

// Minimum blocks per SM for __launch_bounds__ (0: none). Rows of half vectors
// copied per thread run only in launches of at most one row per SM: told so
// (1), the compiler takes 72-88 registers where it took 32-39. Measured on
// the H200 (gpu-2026-12-01-round67.md, table 4), bf16 RMSNorm 1 x 32764 8.95
// -> 6.95 us, 64 x 32764 9.95 -> 8.4, 132 x 24572 10.1 -> 8.9; LayerNorm 64 x
// 22524 9.65 -> 8.15 (64 x 32764 10.0 -> 9.65). The other instances hold
// several rows per SM: none (one block per SM, full rows lost: table 1).
template <typename T, int VEC, bool kPieces>
inline constexpr int kStagedMinBlocks = sizeof(T) * VEC == 8 && !kPieces ? 1 : 0;

// kPieces: a row of half vectors copied in 16-byte pieces by the block (see
// below); otherwise each thread copies its own vectors.
template <typename T, int VEC, int ITERS, bool kCenter, int kTpr, bool kFull, bool kPieces = false>
__global__ void __launch_bounds__(kTpr, (kStagedMinBlocks<T, VEC, kPieces>))
    StagedLongRowKernel(const ForwardArgs a) {
  constexpr int kVectorBytes = sizeof(T) * VEC;
  static_assert(kVectorBytes == 16 || kVectorBytes == 8, "cp.async moves whole vectors");
  static_assert(!kPieces || kVectorBytes == 8, "pieces of rows of half vectors");
  extern __shared__ __align__(16) unsigned char staged_bytes[];
  __shared__ float scratch_buffers[GroupScratch::kFloats];
  GroupScratch scratch{scratch_buffers};
  const int t = static_cast<int>(threadIdx.x);
  const int64_t row = blockIdx.x;
  const int d = static_cast<int>(a.hidden);
  const int64_t base = row * a.hidden;
  const T* x = static_cast<const T*>(a.x) + base;
  auto column = [&](int it) { return (it * kTpr + t) * VEC; };
  // Only a thread's last vectors may lie past the row's end (StagedSureIters):
  // bounds tests on the others took rows of 8 vectors to 50-62 registers.
  constexpr int kSure = StagedSureIters(kTpr, ITERS);
  auto inside = [&](int it) { return kFull || it < kSure || column(it) < d; };
  T* copy = reinterpret_cast<T*>(staged_bytes);
  if constexpr (!kPieces) {
    // Each thread copies its own vectors (past the row's end: zeros).
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      CpAsync<kVectorBytes>(copy + column(it), inside(it) ? x + column(it) : x, inside(it));
    }
    CpAsyncCommit();
    CpAsyncWait<0>();
  } else {
    // Rows of half vectors (hidden 4 mod 8) start 8 bytes off a 16-byte
    // boundary every other row. The block copies the row in 16-byte pieces,
    // the copy shifted by the row's offset so that the boundaries in global
    // and shared memory meet, and its one 8-byte piece (the head or the tail)
    // apart; then a barrier, since threads read pieces others copied.
    const int shift = static_cast<int>(reinterpret_cast<uintptr_t>(x) & 15);  // 0 or 8
    copy = reinterpret_cast<T*>(staged_bytes + shift);
    const int bytes = static_cast<int>(sizeof(T)) * d;
    const int head = shift == 0 ? 0 : 16 - shift;
    const int pieces = (bytes - head) / 16;
    const char* src = reinterpret_cast<const char*>(x) + head;
    char* dst = reinterpret_cast<char*>(copy) + head;
    // At least 8 * (kTpr - 32) pieces (the row has more than kTpr - 32
    // threads' worth of 64 values): only the last may lie past them.
    constexpr int kSurePieces = StagedSureIters(kTpr, ITERS / 2);
#pragma unroll
    for (int i = 0; i < ITERS / 2; ++i) {
      const int piece = i * kTpr + t;
      if (i < kSurePieces || piece < pieces) {
        CpAsync16Shared(SharedAddress(dst + 16 * piece), src + 16 * piece);
      }
    }
    if (t == 0 && head > 0) CpAsync<8>(copy, x, true);
    const int rest = bytes - head - 16 * pieces;  // 0 or 8
    if (t == kTpr - 1 && rest > 0) {
      CpAsync<8>(dst + 16 * pieces, src + 16 * pieces, true);
    }
    CpAsyncCommit();
    CpAsyncWait<0>();
    __syncthreads();
  }
  auto load = [&](int it, float(&v)[VEC]) {
    if (kPieces && !inside(it)) {  // not copied
#pragma unroll
      for (int i = 0; i < VEC; ++i) v[i] = 0.0f;
    } else {
      LoadFloats(copy + column(it), v);
    }
  };
  float mean, rstd;
  RowStatsOf<kCenter, VEC, ITERS, kFull>(load, kTpr, t, d, a.norm, scratch, mean, rstd);
  const float mul = rstd * a.norm.scale;
  // Each vector's weight and bias loaded one vector ahead, through the
  // read-only path (the registers the row no longer takes hold them). A
  // vector past the row's end is formed too, from zeros and the row's last
  // parameters, and not stored: loads under the bounds test instead took the
  // instances to 50-60 registers.
  const T* weight = static_cast<const T*>(a.weight);
  const T* bias = static_cast<const T*>(a.bias);
  T* const out = static_cast<T*>(a.out) + base;
  float w[2][VEC], b[2][VEC];
  auto load_params = [&](int it) {
    const int col = inside(it) ? column(it) : d - VEC;
    LoadParam<true>(weight, col, 1.0f, w[it & 1]);
    LoadParam<true>(bias, col, 0.0f, b[it & 1]);
  };
  load_params(0);
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    if (it + 1 < ITERS) load_params(it + 1);
    float v[VEC], o[VEC];
    load(it, v);
#pragma unroll
    for (int i = 0; i < VEC; ++i) o[i] = NormOutput(v[i], mean, mul, w[it & 1][i], b[it & 1][i]);
    if (inside(it)) StoreFloats(out + column(it), o);
  }
  if (t == 0) StoreRowStats(a, row, mean, rstd);
}

// Launches StagedLongRowKernel for a plain 16-bit row of 64 values per thread
// in vectors of VEC over `tpr` threads; cudaErrorNotSupported where it does
// not take the row (fewer than kStagedLongRowThreads threads, or
// kStagedHalfLayerNormThreads for LayerNorm rows of half vectors; below that,
// rows of half vectors over 288-320 threads, but only in launches of at most
// one row per SM: LongHalfRowInstance takes the others).
template <typename T, int VEC, bool kCenter, bool kFull>
cudaError_t LaunchStagedLongRow(const ForwardArgs& a, int tpr, cudaStream_t stream) {
  static_assert(sizeof(T) == 2, "16-bit rows");
  constexpr int kIters = 64 / VEC;  // 64 values per thread
  cudaError_t result = cudaErrorNotSupported;
  auto fixed = [&](auto tpr_constant) {
    constexpr int kTpr = decltype(tpr_constant)::value;
    if (tpr != kTpr) return;
    auto* kernel = &StagedLongRowKernel<T, VEC, kIters, kCenter, kTpr, kFull>;
    if constexpr (sizeof(T) * VEC == 8) {
      const bool few_rows = AtMostOneRowPerSm(a.rows);
      if constexpr (kTpr < (kCenter ? kStagedHalfLayerNormThreads : kStagedLongRowThreads)) {
        if (!few_rows) return;  // LongHalfRowInstance's
      } else if (!few_rows) {
        // Launches of more rows than SMs copy rows of half vectors in 16-byte
        // pieces (the same bits: the copy holds the same values).
        kernel = &StagedLongRowKernel<T, VEC, kIters, kCenter, kTpr, kFull, true>;
      }
    }
    const size_t bytes = sizeof(T) * 64 * kTpr;
    // The row takes kTpr threads (StagedSureIters' premise).
    result = a.hidden > int64_t{kTpr - 32} * 64 ? AllowStagedShared(kernel, bytes)
                                                : cudaErrorInvalidConfiguration;
    if (result == cudaSuccess) {
      kernel<<<static_cast<unsigned>(a.rows), kTpr, bytes, stream>>>(a);
      result = cudaGetLastError();
    }
  };
  static_assert(kStagedLongRowThreads == 352 && kStagedHalfLayerNormThreads == 320,
                "the widths below start there");
  if constexpr (sizeof(T) * VEC == 8) {
    ForEachRowWidth(std::integer_sequence<int, 288, 320, 352, 384, 416, 448, 480, 512>{}, fixed);
  } else {
    ForEachRowWidth(std::integer_sequence<int, 352, 384, 416, 448, 480, 512>{}, fixed);
  }
  return result;
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_FORWARD_STAGED_CUH_
