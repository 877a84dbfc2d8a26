// The LeanRowKernel instances of the forward launcher (forward_launch.cuh):
// each chooser returns the instance of a row's width where its rule, measured
// against ForwardKernel's, takes the launch, or null where ForwardKernel runs it.
#ifndef NORMSERVE_KERNELS_CUDA_FORWARD_INSTANCES_CUH_
#define NORMSERVE_KERNELS_CUDA_FORWARD_INSTANCES_CUH_

#include <cstdint>
#include <type_traits>
#include <utility>

#include "forward_kernels.cuh"
#include "forward_lean.cuh"
#include "launch.h"
#include "row_layout.h"

namespace normserve::kernels::cuda {

// Calls f(std::integral_constant<int, kTpr>{}) for each row width of the list:
// the instance choosers below try one compile-time instance per width.
template <int... kTprs, typename F>
void ForEachRowWidth(std::integer_sequence<int, kTprs...>, F f) {
  (f(std::integral_constant<int, kTprs>{}), ...);
}

// The LeanRowKernel instance for a plain 16-bit row spread once over `tpr`
// threads, or null where ForwardKernel's spread instance runs it. Every such
// row on a GPU of high bandwidth per SM (HighDramBandwidthPerSm), where the
// generic instance lost to the unspread layouts and the lean one wins
// (bench/results/gpu-2026-11-26-round28.md, call 7, H200, with statistics):
// RMSNorm 131072 x 1024 135.25 -> 131.9 us, 32768 x 4096 134.3 -> 133.7,
// 16384 x 4096 70.65 -> 69.3; LayerNorm 131072 x 1024 134.6 -> 131.7, 65536 x
// 2048 137.25 -> 131.4 (32768 x 4096 134.3 -> 135.05, the one loss). On
// H100-class GPUs rows of kMaxThreads threads only (hidden 8192), LayerNorm
// 16384 x 8192 183.75 -> 182.25 us, 8192 x 8192 95.1 -> 94.25 (call 10): there
// LayerNorm rows of 64-256 threads ran slower lean (call 6: 131072 x 1024
// 183.1 -> 183.9, 65536 x 2048 183.4 -> 184.1; call 10: 16384 x 4096 94.2 ->
// 94.8), RMSNorm rows even.
template <typename T, int kVec, int kIters, bool kCenter>
auto* SpreadRowInstance(int tpr) {
  decltype(&LeanRowKernel<T, kVec, kIters, kCenter, 64>) kernel = nullptr;
  if (tpr < kMaxThreads && !HighDramBandwidthPerSm()) return kernel;
  auto fixed = [&](auto tpr_constant) {
    constexpr int kTpr = decltype(tpr_constant)::value;
    if (tpr == kTpr) kernel = &LeanRowKernel<T, kVec, kIters, kCenter, kTpr>;
  };
  ForEachRowWidth(std::integer_sequence<int, 64, 128, 256, 512>{}, fixed);
  return kernel;
}

// The waves (blocks that all SMs hold at once: ResidentBlocksPerSm) of
// `kernel` in a launch of `blocks` blocks of `threads` threads.
inline int64_t Waves(const void* kernel, int threads, int64_t blocks) {
  const int64_t per_wave = MultiprocessorCount() * ResidentBlocksPerSm(kernel, threads);
  return (blocks + per_wave - 1) / per_wave;
}

// Whether such a launch runs in fewer waves of `kernel` than of `other`.
inline bool FewerWaves(const void* kernel, const void* other, int threads, int64_t blocks) {
  return Waves(kernel, threads, blocks) < Waves(other, threads, blocks);
}

// The LeanRowKernel instance (unspread) for a plain full row of 4 vectors per
// thread over `tpr` threads, in a launch of `blocks` blocks of `threads`
// threads that is not latency-bound, or null where ForwardKernel's instance
// (`generic`) runs it.
// 16-bit rows of 32-512 threads (hidden 1024-16384), every such launch.
// Each row width takes its own instance (kTpr): powers of two, and widths
// common models use, 16-bit rows of 3072, 6144 and 12288 (3, 6 and 12 warps;
// 5, 7, 10 and 14 below)
// and fp32 rows of 6144 and 7168 (12 and 14; see below for fp32). Against
// ForwardKernel (bench/results/gpu-2026-11-27-round38.md, H200 call 8, H100
// call 9): bf16 LayerNorm 16384 x 6144 H200 107.5 -> 101.5 us, H100 139.2 ->
// 139.0; 8192 x 12288 117.4 -> 110.2 / 141.7 -> 138.7; 1024 x 6144 14.1 ->
// 13.0 / 15.7 -> 14.8; RMSNorm 2048 x 3072 13.0 -> 12.2 / 14.8 -> 14.1.
// And 16-bit rows of 5120, 7168, 10240 and 14336 (5, 7, 10 and 14 warps):
// round39.md, H200 (call 10) bf16 LayerNorm 16384 x 5120 90.8 -> 85.5 us,
// 16384 x 7168 126.7 -> 117.1, 8192 x 14336 130.3 -> 121.8, RMSNorm 8192 x
// 14336 122.7 -> 117.2, fp16 125.9 -> 117.2; H100 (call 11) bf16 LayerNorm
// 1024 x 14336 27.2 -> 26.2, 2048 x 5120 20.6 -> 20.4, the largest launches
// within 0.5 % (fp16 RMSNorm 16384 x 5120 116.05 -> 116.35, where rows that
// kept their kernel moved as much: bf16 RMSNorm 4096 x 3584 25.75 -> 25.8).
// And 16-bit rows of 480 threads (15 warps: hidden 15360, and LayerNorm rows
// of 14337-15359 with bounds tests): round41.md, H200 (call 1) bf16
// LayerNorm 8192 x 15000 146.7 -> 127.7 us, 8192 x 15360 136.9 -> 127.0,
// RMSNorm 127.8 -> 124.1, fp16 LayerNorm 8192 x 15000 158.4 -> 127.9; H100
// (call 2) bf16 LayerNorm 1024 x 15000 30.7 -> 28.0, 8192 x 15000 173.0 ->
// 169.7, fp16 178.8 -> 169.5, the others within 0.5 %.
// Measured on the H100 (bench/results/gpu-2026-11-26-round31.md, call 1,
// with statistics), bf16 RMSNorm 4096 x 4096 28.1 -> 27.6 us, 2048 x 4096
// 17.1 -> 16.55, 600 x 4096 8.75 -> 8.4, 4096 x 2048 17.15 -> 16.45, 2048 x
// 8192 28.75 -> 28.25; LayerNorm 4096 x 4096 28.8 -> 28.45, 4096 x 2048 17.6
// -> 17.15; rows of 16384 and launches of 8192 x 4096 even. On the H200 (call
// 2) by up to 7 %: bf16 LayerNorm 8192 x 16384 138.85 -> 133.35 us, 4096 x
// 16384 74.1 -> 70.8, 2048 x 8192 23.65 -> 22.4, 4096 x 2048 15.05 -> 14.25;
// RMSNorm 4096 x 2048 14.5 -> 13.45, 4096 x 1024 9.15 -> 8.6; fp16 LayerNorm
// 8192 x 16384 140.7 -> 133.2, RMSNorm 137.1 -> 132.3; none slower. But fp16
// RMSNorm rows of 64-256 threads on GPUs such as the H100 (not
// HighDramBandwidthPerSm; call 3): 4096 x 4096 27.7 -> 28.0 us, 2048 x 8192
// 27.95 -> 28.2, 8192 x 2048 27.95 -> 28.0, where bf16 gained (28.25 ->
// 27.65) and fp16 rows of 32 and 512 threads did (8192 x 1024 17.05 ->
// 16.65).
// LayerNorm and fp16 RMSNorm rows of 64 and 128 threads (hidden 2048 and
// 4096) take instances bounded to 56 registers (kLeanBlocksPerSm):
// nine of their 128-thread blocks fit an SM where 63-64 registers fit eight,
// and no value spills (bf16 RMSNorm takes 53 unbounded). Then fp16 RMSNorm
// gains too. Measured on the H100 (round32.md, call 9, with statistics):
// bf16 LayerNorm 4096 x 4096 28.5 -> 28.2 us, 2048 x 4096 17.0 -> 16.8, 8192 x
// 2048 28.4 -> 28.2; fp16 LayerNorm 4096 x 4096 28.6 -> 28.2, 8192 x 4096
// 50.7 -> 50.4; fp16 RMSNorm 2048 x 4096 17.0 -> 16.4, 4096 x 2048 17.0 ->
// 16.4, 8192 x 2048 27.9 -> 27.5; the largest launches even (calls 7-8 the
// same). Rows of 32 threads lost so (call 8: 8192 x 1024 LayerNorm 16.9 ->
// 17.1, fp16 17.3). Bounded to 48 registers (ten blocks) LayerNorm spills 28
// bytes and slows (call 7: 4096 x 4096 28.6 -> 30.1 us), RMSNorm 16-32. On
// the H200 (call 18): bf16 LayerNorm 4096 x 4096 22.4 -> 22.1, 2048 x 4096
// 14.3 -> 14.1; fp16 RMSNorm 2048 x 4096 13.7 -> 13.3, 4096 x 4096 22.1 ->
// 21.7; fp16 LayerNorm 2048 x 4096 14.2 -> 13.9. fp16 RMSNorm rows of 256
// threads stay with ForwardKernel on GPUs such as the H100.
inline constexpr int kLeanBlocksPerSm = 9;
// fp32 rows of 6144 and 7168 (384 and 448 threads), where ForwardKernel holds
// two blocks per SM and the lean instance three or four, take it on the same
// terms as rows of 512 (but for RMSNorm as well as LayerNorm on a GPU of high
// bandwidth per SM): round38.md, H200 (call 8) LayerNorm 16384 x 6144 217.6
// -> 199.2 us, RMSNorm 208.7 -> 198.5, LayerNorm 16384 x 7168 239.5 ->
// 229.3, 4096 x 6144 60.7 -> 53.8; H100 (call 9) LayerNorm 4096 x 6144 72.5
// -> 71.6, 1024 x 6144 23.4 -> 22.1, 2048 x 7168 44.9 -> 44.2, where the
// launches of more than kLeanFp32WideElements lost (16384 x 6144 269.3 ->
// 270.9, RMSNorm 268.8 -> 270.7; 16384 x 7168 314.6 -> 315.4).
// fp32 rows (FewerForwardVectors: hidden 4096 and 8192) where the lean
// instance's 35-40 registers, against ForwardKernel's 64, take the launch in
// fewer waves (FewerWaves). Launches of as many waves lost on the H200 (call
// 2: RMSNorm 1024 x 4096 13.85 -> 14.1 us, LayerNorm 14.15 -> 14.6, 512 x
// 8192 14.2 -> 14.65) and fewer waves won: on the H100 (call 3) RMSNorm 600 x
// 4096 12.6 -> 10.85 us (two waves to one), 300 x 8192 13.2 -> 11.35, 1536 x
// 4096 22.5 -> 21.4, 2048 x 4096 28.0 -> 26.85, 4096 x 4096 50.15 -> 49.05,
// 1024 x 8192 28.35 -> 27.55, LayerNorm the same (600 x 8192 even); on the
// H200 (call 2) 600 x 4096 11.0 -> 9.5, RMSNorm 1024 x 8192 22.6 -> 21.65,
// LayerNorm 16384 x 8192 264.7 -> 262.6 (round30.md, call 2). Rows of 512
// threads (hidden 8192) lose in launches of more than kLeanFp32WideElements
// elements, but for LayerNorm on a GPU of high bandwidth per SM
// (HighDramBandwidthPerSm): H100 RMSNorm 16384 x 8192 358.65 -> 360.45 us,
// LayerNorm 358.7 -> 360.75 (call 1); H200 RMSNorm 260.4 -> 262.45
// (round29.md, call 24).
inline constexpr int64_t kLeanFp32WideElements = int64_t{1} << 25;
template <typename T, int kVec, int kIters, bool kCenter, bool kFull = true, typename Generic>
auto* LeanUnspreadInstance(const ForwardArgs& a, int tpr, int threads, int64_t blocks,
                           Generic* generic) {
  static_assert(kIters == 4, "rows of 4 vectors per thread");
  static_assert(kFull || sizeof(T) == 2, "bounds-tested rows: 16-bit");
  decltype(&LeanRowKernel<T, kVec, kIters, kCenter, 256, 0>) kernel = nullptr;
  constexpr bool kBoundable = kCenter ? sizeof(T) == 2 : std::is_same_v<T, __half>;
  const bool bounded = kBoundable && threads <= kForwardBlockThreads;
  auto fixed = [&](auto tpr_constant) {
    constexpr int kTpr = decltype(tpr_constant)::value;
    if (tpr != kTpr) return;
    kernel = &LeanRowKernel<T, kVec, kIters, kCenter, kTpr, 0, false, 0, kFull>;
    if constexpr (kBoundable && (kTpr == 64 || kTpr == 128)) {
      if (bounded)
        kernel = &LeanRowKernel<T, kVec, kIters, kCenter, kTpr, 0, false, kLeanBlocksPerSm, kFull>;
    }
  };
  if constexpr (std::is_same_v<T, __half> && !kCenter) {
    if (tpr == 256 && !HighDramBandwidthPerSm()) return kernel;
  }
  if constexpr (sizeof(T) == 2) {
    ForEachRowWidth(
        std::integer_sequence<int, 32, 64, 96, 128, 160, 192, 224, 256, 320, 384, 448, 480, 512>{},
        fixed);
  } else {
    ForEachRowWidth(std::integer_sequence<int, 256, 384, 448, 512>{}, fixed);
  }
  if constexpr (sizeof(T) == 4) {
    const bool wide_rows_gain = HighDramBandwidthPerSm() && (kCenter || tpr < kMaxThreads);
    if (tpr > kTargetThreads && a.rows * a.hidden > kLeanFp32WideElements && !wide_rows_gain) {
      return decltype(kernel){nullptr};
    }
    if (kernel != nullptr && !FewerWaves(reinterpret_cast<const void*>(kernel),
                                         reinterpret_cast<const void*>(generic), threads, blocks)) {
      return decltype(kernel){nullptr};
    }
  }
  return kernel;
}

// The LeanRowKernel instance for a plain fp32 full row of 4 vectors per thread
// over 256 threads (FewerForwardVectors: hidden 4096) spread once (2 vectors
// over 512 threads, SpreadLayout's placement: the same canonical tree, so the
// same bits; one row per block), in a launch that is not latency-bound on a
// GPU of high bandwidth per SM (HighDramBandwidthPerSm), or null: RMSNorm rows
// with weight / bias loaded with x (ParamLoads::kWithX: 40 registers, three
// blocks per SM) in every such launch, LayerNorm rows, their parameters loaded
// late, in launches of more than kLeanFp32WideElements elements. Measured on the
// H200 against the rule before (bench/results/gpu-2026-11-30-round59.md, call
// B, table 2): RMSNorm 32768 x 4096 262.8 -> 259.45 us, 65536 x 4096 519.9 ->
// 513.15, 8192 x 4096 69.45 -> 68.85, 4096 x 4096 37.15 -> 36.8; LayerNorm
// 32768 x 4096 263.4 -> 261.25, 65536 x 4096 520.65 -> 517.7; the same
// within 0.4 % in call C (table 5). Beside Liger, each tree in its own process
// (call C, table 6): RMSNorm 32768 x 4096 1.015 of its speed (the rule before
// 1.002), LayerNorm 1.000 (0.989). (Call D, on another machine without the
// rule before beside it, timed RMSNorm 32768 x 4096 at 262.4: not
// understood.) Not taken: LayerNorm spread in
// smaller launches (4096 x 4096 37.35 -> 38.0, 8192 x 4096 even) or with its
// parameters loaded with x (32768 x 4096 263.4 -> 266.25); rows of 8192 over
// 1024 threads (LayerNorm 16384 x 8192 262.7 -> 271.1, RMSNorm even: call A).
template <typename T, int kVec, bool kCenter>
auto SpreadFp32Instance(const ForwardArgs& a, int tpr) -> void (*)(int, ForwardArgs) {
  if (tpr != 256 || !HighDramBandwidthPerSm()) return nullptr;
  if (kCenter && a.rows * a.hidden <= kLeanFp32WideElements) return nullptr;
  constexpr ParamLoads kParams = kCenter ? ParamLoads::kAfterStore : ParamLoads::kWithX;
  return &LeanRowKernel<T, kVec, 2, kCenter, 512, kSpreadOnce, false, 0, true, kParams>;
}

// The LeanRowKernel instance (unspread) for a plain fp32 full row of 2 vectors
// per thread over `tpr` threads (FewerForwardVectors: hidden 1024 and 2048),
// in a launch of `blocks` blocks of `threads` threads that is not
// latency-bound, or null where ForwardKernel's instance (`generic`) runs it.
// The lean instances take 27-30 registers, ForwardKernel's 40: sixteen
// 128-thread blocks per SM rather than twelve, eight 256-thread ones rather
// than six. They run launches they take in fewer waves (FewerWaves), up to
// 2^26 elements of rows of 1024 and 2^25 of rows of 2048
// (kLeanFp32PairElements). Measured on the H100 (bench/results/gpu-2026-11-27-
// round32.md, with statistics), the rule as landed (call 15): RMSNorm 2048 x
// 1024 11.0 -> 9.6 us, 4096 x 1024 16.9 -> 16.1, 65536 x 1024 183.7 ->
// 183.0, 1024 x 2048 11.0 -> 9.4, 8192 x 2048 50.0 -> 49.4, 16384 x 2048
// 94.1 -> 93.8; LayerNorm 2048 x 1024 11.2 -> 9.8, 1024 x 2048 11.8 -> 10.1;
// launches it leaves to ForwardKernel even. Every launch lean (calls 13-14)
// lost where the waves are as many (600 x 1024 LayerNorm 6.0 -> 6.2 us) and in
// the larger launches (LayerNorm 32768 x 2048 183.3 -> 183.4, 65536 x 2048
// 359.8 -> 360.7; 131072 x 1024 361.9 -> 362.9 on one H100, even on another).
// On GPUs of high bandwidth per SM (HighDramBandwidthPerSm), up to 2^22
// elements (kLeanFp32PairHighBandwidthElements): on the H200 (call 18, every
// launch lean) RMSNorm 2048 x 1024 9.3 -> 8.4, 4096 x 1024 13.4 -> 13.1,
// 1024 x 2048 9.6 -> 8.4, LayerNorm 9.9 -> 8.4; but 8192 x 2048 mixed
// (RMSNorm 37.5 -> 37.6, LayerNorm 38.2 -> 37.9) and 65536 x 1024 slower
// (RMSNorm 130.6 -> 131.6, LayerNorm 130.1 -> 131.9). There, launches that
// the lean instance runs in more than one wave, or the one with x in one,
// take instead the instances that load weight / bias with x
// (ParamLoads::kWithX: 38-40 registers, so fewer blocks per SM), but RMSNorm
// rows of 2048 in
// launches of more than kLeanFp32PairElements elements. Measured on the H200
// against the rule before (bench/results/gpu-2026-11-30-round59.md, call B):
// LayerNorm 32768 x 2048 133.6 -> 130.3 us, 8192 x 2048 38.1 -> 37.05, 4096
// x 1024 13.4 -> 12.6; RMSNorm 4096 x 1024 13.15 -> 12.5, 16384 x 1024 36.95
// -> 36.1, 8192 x 2048 37.35 -> 36.95; 65536 x 1024 and 131072 x 1024 within
// 0.5 %; but RMSNorm 32768 x 2048 130.15 -> 132.5; and (call C) 1024 x 2048,
// one wave of the lean instance and two with x, 8.45 -> 8.55, which the lean
// instance keeps.
inline constexpr int64_t kLeanFp32PairElements = int64_t{1} << 25;
inline constexpr int64_t kLeanFp32PairHighBandwidthElements = int64_t{1} << 22;
template <typename T, int kVec, bool kCenter, typename Generic>
auto LeanPairInstance(const ForwardArgs& a, int tpr, int threads, int64_t blocks, Generic* generic)
    -> void (*)(int, ForwardArgs) {
  if (tpr != 128 && tpr != 256) return nullptr;
  const bool wide = tpr == 256;
  auto* lean = wide ? &LeanRowKernel<T, kVec, 2, kCenter, 256, 0>
                    : &LeanRowKernel<T, kVec, 2, kCenter, 128, 0>;
  const int64_t elements = a.rows * a.hidden;
  const bool high_bandwidth = HighDramBandwidthPerSm();
  if (high_bandwidth && (kCenter || !wide || elements <= kLeanFp32PairElements)) {
    auto* with_x =
        wide ? &LeanRowKernel<T, kVec, 2, kCenter, 256, 0, false, 0, true, ParamLoads::kWithX>
             : &LeanRowKernel<T, kVec, 2, kCenter, 128, 0, false, 0, true, ParamLoads::kWithX>;
    const auto* lean_code = reinterpret_cast<const void*>(lean);
    const auto* with_x_code = reinterpret_cast<const void*>(with_x);
    if (Waves(lean_code, threads, blocks) > 1 || Waves(with_x_code, threads, blocks) == 1) {
      return with_x;
    }
  }
  // Rows of 1024 (128 threads) gain up to twice as many elements.
  const int64_t most =
      high_bandwidth ? kLeanFp32PairHighBandwidthElements : (wide ? 1 : 2) * kLeanFp32PairElements;
  if (elements > most || !FewerWaves(reinterpret_cast<const void*>(lean),
                                     reinterpret_cast<const void*>(generic), threads, blocks)) {
    return nullptr;
  }
  return lean;
}

// The LeanRowKernel instance for a plain row of half vectors (8 bytes: 16-bit
// widths of 4 mod 8, fp32 widths of 2 mod 4) with bounds tests, over `tpr`
// threads in a launch of `rows` rows, or null where ForwardKernel's instance
// runs it: 16-bit rows of 4 per thread (hidden 388-8188) and 8 (8196-16380),
// fp32 rows of 8 (hidden 258-8190) and 16 (8194-16382), every launch, but
// fp32 rows of 320 threads (below). ForwardKernel computes each vector's
// address from the run-time row width; with the width a constant, fp32 rows
// of 16 take 64 registers where ForwardKernel's took 94-96 (one block of
// 352-512 threads per SM), two blocks. Measured on the H200 against
// ForwardKernel
// (bench/results/gpu-2026-11-30-round60.md, table 7, call F), fp32 LayerNorm
// 4096 x 12002 162.3 -> 121.45 us, 16384 x 12002 607.65 -> 444.35, 4096 x
// 16382 209.1 -> 162.95, 512 x 16382 36.75 -> 32.3, 4096 x 9002 95.65 ->
// 91.05; RMSNorm 4096 x 12002 133.6 -> 106.25, 4096 x 11002 130.1 -> 98.15;
// bf16 LayerNorm 8192 x 4100 59.9 -> 44.4, 65536 x 2052 230.5 -> 157.35,
// 8192 x 388 10.2 -> 9.2, 600 x 4100 9.2 -> 8.0; RMSNorm 8192 x 4100 48.05 ->
// 41.0, 8192 x 8188 81.7 -> 72.25; fp16 LayerNorm 8192 x 8188 105.7 -> 76.75.
// fp32 rows of 320 threads (hidden 9218-10238), whose ForwardKernel instance
// already held two blocks per SM, keep it (RMSNorm 4096 x 10002 91.65 ->
// 93.5 with LeanRowKernel), but LayerNorm rows in larger launches (below).
// Staged through shared memory instead (RowStorage::kStaged at 8-byte
// vectors, 64 registers), fp32 rows gained less and RMSNorm rows of 512
// threads lost (table 2, call C: LayerNorm 4096 x 12002 161.7 -> 148.2 us,
// RMSNorm 8192 x 16382 311.9 -> 321.05).
// Rows of 8 per thread, measured on the H200 against ForwardKernel
// (gpu-2026-11-30-round61.md, table 1, call A): 16-bit 0.71-0.85 of the time
// (bf16 LayerNorm 4096 x 14500 95.2 -> 71.7 us, 8192 x 12004 155.25 ->
// 119.15; RMSNorm 139.05 -> 107.05, 4096 x 16380 89.8 -> 73.05; fp16
// LayerNorm 8192 x 12004 138.9 -> 117.65), fp32 0.65-0.99 (LayerNorm 65536 x
// 514 112.5 -> 72.85, 8192 x 4098 92.0 -> 72.95, 8192 x 8190 154.05 -> 137.4;
// RMSNorm 8192 x 8190 145.45 -> 137.0) but for 16384 x 2042, the same within
// 0.2 % (LayerNorm 73.75 -> 73.8).
// fp32 rows load their weight and bias (ParamLoads) as measured on the H200
// against loads after each store (gpu-2026-11-30-round62.md: probes, tables
// 1-3; the rule, table 4, call D). Rows of 8 per thread over at most 128
// threads that fill at least 7/8 of their vector slots load them beside x
// (75-79 registers where 40 held twice the blocks): LayerNorm 16384 x 1002
// 40.5 -> 37.35 us, 16384 x 2042 74.05 -> 69.85, 65536 x 506 71.8 -> 68.3,
// 16384 x 1530 57.45 -> 53.9, 1024 x 1002 9.4 -> 6.85; RMSNorm 16384 x 1002
// 39.5 -> 37.15; beside Quack 1.015 / 1.021 of its speed at 16384 x 2042
// (table 5, call E; 0.971 / 0.976 before, table 3), 0.975 / 0.990 at 16384 x
// 1002 (call E; 1.006 / 1.013 in call B, 0.945 / 0.950 before). Emptier rows
// lost so (table 2: LayerNorm 32768 x 514 39.9 -> 46.95, 16384 x 1538 56.4 ->
// 57.6) and take the read-only path (44-52 registers): RMSNorm rows (65536 x
// 258 39.55 -> 38.35, 32768 x 642 47.75 -> 46.5, 8192 x 2562 47.75 -> 46.45,
// 8192 x 4098 73.15 -> 72.05), and LayerNorm rows over at most 128 threads
// that fill at least 5/8 (65536 x 386 56.2 -> 55.1, 32768 x 770 56.8 ->
// 55.45, 16384 x 1538 56.35 -> 55.3, 65536 x 322 47.9 -> 47.3). LayerNorm
// rows that fill less lost so (table 2: 65536 x 258 39.5 -> 40.45, 32768 x
// 514 39.9 -> 42.1), as did wider ones in some launches (table 4: 8192 x
// 8190 139.25 -> 142.3, 1024 x 3002 13.0 -> 13.7, though 8192 x 4090 73.05
// -> 70.9): loads after each store, but for LayerNorm rows over 160-256
// threads in launches of at least kReadOnlyRows8 rows, read-only
// (gpu-2026-11-30-round63.md, table 1, call A: 2048 x 4090 25.45 -> 23.27 us,
// 8192 x 4090 72.54 -> 70.06, 8192 x 3002 55.58 -> 53.88, 16384 x 3002
// 102.36 -> 100.5, 32768 x 2562 169.07 -> 165.52; 1024 x 3002 12.89 -> 13.62
// lost; rows over 320 and 512 threads lost at 16384 x 5002 and 16384 x 8190).
// Rows of 16 per thread take the read-only path where LayerNorm (4096 x
// 12002 122.35 -> 113.6, 16384 x 12002 449.0 -> 426.2, 4096 x 16382 165.0 ->
// 153.5, 4096 x 8194 80.85 -> 76.6, 512 x 16382 31.1 -> 27.45) or RMSNorm of
// 512 threads (4096 x 16382 148.8 -> 143.2, 512 x 16382 28.7 -> 25.1);
// RMSNorm rows of fewer lost so (table 2: 4096 x 12002 106.1 -> 145.9, 4096 x
// 8194 75.95 -> 93.2). LayerNorm rows of 320 threads, which ForwardKernel
// runs, too in launches of at least kReadOnlyRows16 rows (round63.md, table
// 1: 4096 x 10002 102.25 -> 94.12 us, 8192 x 10002 191.91 -> 178.97, 16384 x
// 10002 371.22 -> 347.5, 1024 x 10002 34.52 -> 32.29, 4096 x 9218 96.62 ->
// 85.94; 512 x 10002 21.88 -> 22.21 lost; RMSNorm lost by a fifth, 4096 x
// 10002 91.03 -> 114.24). Beside Quack (table 3, call B) LayerNorm 4096 x
// 10002 0.845 -> 0.966 of its speed. 16-bit rows lost either way (table 1:
// bf16 LayerNorm 8192 x 4100 44.35 -> 56.85 beside x, 45.55 read-only).
// The parameter path changes the loads, not the arithmetic, so a row's bits
// do not depend on which side of a threshold its launch falls.
inline constexpr int64_t kReadOnlyRows8 = 2048;
inline constexpr int64_t kReadOnlyRows16 = 1024;
template <typename T, int kVec, int kIters, bool kCenter>
auto LeanHalfInstance(int64_t hidden, int64_t rows, int tpr) -> void (*)(int, ForwardArgs) {
  static_assert(sizeof(T) * kVec == 8, "rows of half vectors");
  static_assert(kIters == 4 || kIters == 8 || kIters == 16, "see ChooseRowLayout");
  // The row's share of its threads' vector slots, in eighths (rounded down).
  const int64_t fill_eighths = 8 * ((hidden + kVec - 1) / kVec) / (int64_t{kIters} * tpr);
  void (*kernel)(int, ForwardArgs) = nullptr;
  auto fixed = [&](auto tpr_constant) {
    constexpr int kTpr = decltype(tpr_constant)::value;
    if (tpr != kTpr) return;
    auto take = [&](auto params_constant) {
      kernel = &LeanRowKernel<T, kVec, kIters, kCenter, kTpr, 0, false, 0, false,
                              decltype(params_constant)::value>;
    };
    using AfterStore = std::integral_constant<ParamLoads, ParamLoads::kAfterStore>;
    using WithX = std::integral_constant<ParamLoads, ParamLoads::kWithX>;
    using ReadOnly = std::integral_constant<ParamLoads, ParamLoads::kReadOnly>;
    if constexpr (sizeof(T) == 2) {
      take(AfterStore{});
    } else if constexpr (kIters == 16) {
      if constexpr (kTpr == 320) {
        if constexpr (kCenter) {
          if (rows >= kReadOnlyRows16) take(ReadOnly{});
        }
      } else if constexpr (kCenter || kTpr == 512) {
        take(ReadOnly{});
      } else {
        take(AfterStore{});
      }
    } else {
      if constexpr (kTpr <= 128) {
        if (fill_eighths >= 7) return take(WithX{});
      }
      if constexpr (kCenter) {
        if constexpr (kTpr <= 128) {
          if (fill_eighths >= 5) return take(ReadOnly{});
        } else if constexpr (kTpr <= 256) {
          if (rows >= kReadOnlyRows8) return take(ReadOnly{});
        }
        take(AfterStore{});
      } else {
        take(ReadOnly{});
      }
    }
  };
  if constexpr (kIters == 16) {  // fp32 rows of hidden 8194-16382
    ForEachRowWidth(std::integer_sequence<int, 288, 320, 352, 384, 416, 448, 480, 512>{}, fixed);
  } else if constexpr (kIters == 8 && sizeof(T) == 2) {  // 16-bit rows of hidden 8196-16380
    ForEachRowWidth(std::integer_sequence<int, 288, 320, 352, 384, 416, 448, 480, 512>{}, fixed);
  } else {  // 16-bit rows of 4 per thread, fp32 rows of 8
    ForEachRowWidth(std::integer_sequence<int, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352,
                                          384, 416, 448, 480, 512>{},
                    fixed);
  }
  return kernel;
}

// The LeanRowKernel instance for a plain 16-bit row of 8 vectors of 8 per
// thread over 288 or 320 threads (hidden 16392-20480): ForwardKernel's layout
// and arithmetic (the same bits, so latency-bound launches keep
// ForwardKernel's preload instance), bounded to two blocks per SM (94
// registers; unbounded 121 held one block). Rows of 288 threads (16392-18432)
// ran at about half their neighbours' bandwidth in ForwardKernel (99+
// registers, one block per SM; gpu-2026-11-30-round63.md, table 4). Measured
// on the H200 against ForwardKernel (round64.md, table 1, call A), bf16
// RMSNorm 8192 x 16392 238.64 -> 137.07 us, 2048 x 16392 67.55 -> 41.94,
// 2048 x 32768 85.46 -> 77.87, 4096 x 24576 136.26 -> 121.07,
// LayerNorm 8192 x 16392 290.10 -> 144.68, 4096 x 20480 149.56 -> 88.41, 4096
// x 24576 159.15 -> 133.92, 2048 x 32768 97.01 -> 84.72; fp16 alike. RMSNorm
// over 320 threads about even (4096 x 20480 88.72 -> 87.87, 16384 x 20480
// 324.14 -> 326.81); unbounded, rows over 288 and 320 threads lost to the
// bounded ones (4096 x 20480 RMSNorm 111.80, 8192 x 16392 198.83). Rows over
// kStagedLongRowThreads threads or more, which it took too, now take
// StagedLongRowKernel (forward_staged.cuh).
template <typename T, int kVec, int kIters, bool kCenter>
auto LongFullRowInstance(int tpr) -> void (*)(int, ForwardArgs) {
  static_assert(sizeof(T) == 2 && kVec == 8 && kIters == 8, "16-bit rows of 64 per thread");
  void (*kernel)(int, ForwardArgs) = nullptr;
  auto fixed = [&](auto tpr_constant) {
    constexpr int kTpr = decltype(tpr_constant)::value;
    if (tpr != kTpr) return;
    kernel = &LeanRowKernel<T, kVec, kIters, kCenter, kTpr, 0, false, 2, false>;
  };
  ForEachRowWidth(std::integer_sequence<int, 288, 320>{}, fixed);
  return kernel;
}

// The LeanRowKernel instance for a fused 16-bit row (y) of 4 vectors per
// thread over `tpr` threads, full (kFull) or with bounds tests, unspread
// (SpreadsOnce spreads only full rows of a power-of-two width up to 256
// threads), in a launch that is not latency-bound, or null where
// ForwardKernel's instance (`generic`) runs it.
// kFull: rows of 3, 5, 6, 7, 12, 14, 15 and 16 warps (hidden 3072, 5120,
// 6144, 7168, 12288, 14336, 15360, 16384) where the lean instance holds more
// blocks per SM (ResidentBlocksPerSm). ForwardKernel's takes 86 registers,
// one block per SM from 12 warps on (12 warps in flight at 12288); the lean
// one 58 (RMSNorm) or 64 (LayerNorm), two. Measured on the H200 against
// ForwardKernel (bench/results/gpu-2026-12-03-round74.md, table 2), add +
// RMSNorm / add + LayerNorm: bf16 8192 x 12288 217.05 -> 200.1 / 226.15 ->
// 200.85 us, 1024 x 12288 34.35 -> 30.4 / 36.0 -> 30.9, 8192 x 14336 241.7
// -> 228.85 / 253.45 -> 229.85, 8192 x 16384 267.3 -> 263.9 / 272.65 ->
// 264.45, 16384 x 7168 231.1 -> 228.1 / 239.3 -> 228.75; fp16 8192 x 12288
// 219.45 -> 200.15 / 228.95 -> 200.8; hidden 3072-6144 within 1 % (16384 x
// 3072 101.3 -> 100.3). Rows of 10 warps (hidden 10240: ForwardKernel two
// blocks, lean three) lost (165.2 -> 166.3 / 165.55 -> 166.75) and keep
// ForwardKernel.
// kFull = false: fused rows with bounds tests (vectors past the row's end, or
// a partial statistic) over 1-4, 7 and 11-16 warps (LayerNorm also 8 and 9),
// where ForwardKernel's instance takes 90-93 registers and the lean one 58-60.
// Measured on the H200 against ForwardKernel (bench/results/gpu-2026-12-03-
// round75.md, table 3), add + RMSNorm / add + LayerNorm: bf16 8192 x 12000
// 219.2 -> 197.15 / 244.05 -> 197.45 us, 8192 x 15000 257.2 -> 244.9 / 277.8
// -> 245.15, 4096 x 1536 18.75 -> 17.15 / 19.35 -> 17.45, 32768 x 1536 100.95
// -> 99.55 / 103.3 -> 100.15, 32768 x 2560 (LayerNorm) 168.45 -> 164.85,
// 65536 x 768 100.35 -> 99.7 / 101.25 -> 100.1; fp16 8192 x 12000 220.35 ->
// 196.65 / 246.8 -> 196.9; rows of 1000, 3000 and 3584 within 0.7 %. Rows of
// 7-16 warps (round76.md, table 3): bf16 8192 x 11000 210.1 -> 180.1 /
// 236.65 -> 180.6, 8192 x 13000 235.35 -> 212.25 / 258.65 -> 212.6, 8192 x
// 14000 245.05 -> 226.1 / 267.35 -> 226.45, 16384 x 7000 234.55 -> 227.9 /
// 248.6 -> 228.65, 8192 x 16000 261.3 -> 255.95 / 276.15 -> 256.55, 4096 x
// 14000 126.85 -> 116.3 / 138.15 -> 117.15; fp16 8192 x 14000 247.7 -> 226.4
// / 272.1 -> 226.6; LayerNorm 8192 x 8000 133.35 -> 131.4, 8192 x 9000 153.15
// -> 149.4. ForwardKernel keeps RMSNorm rows of 8 and 9 warps, even or slower
// there (8192 x 8000 129.8 -> 130.65, 8192 x 9000 148.7 -> 149.05), and rows
// of 5, 6 and 10 warps, which lost (16384 x 5000 163.65 -> 165.2 / 163.4 ->
// 166.3; round76.md, table 1: 16384 x 6000 195.85 -> 196.95, 8192 x 10000
// 163.35 -> 165.05 in add + RMSNorm).
// The residency test below is for full rows (ForwardKernel's 86 registers);
// for bounds-tested rows the lean instance (58-60) always holds more blocks
// than ForwardKernel's (90-93), so it never rejects them.
template <typename T, int kVec, int kIters, bool kCenter, bool kFull, typename Generic>
auto* LeanFusedUnspreadInstance(int tpr, int threads, Generic* generic) {
  void (*kernel)(int, ForwardArgs) = nullptr;
  auto fixed = [&](auto tpr_constant) {
    constexpr int kTpr = decltype(tpr_constant)::value;
    if (tpr == kTpr) kernel = &LeanRowKernel<T, kVec, kIters, kCenter, kTpr, 0, true, 0, kFull>;
  };
  if constexpr (kFull) {
    ForEachRowWidth(std::integer_sequence<int, 96, 160, 192, 224, 384, 448, 480, 512>{}, fixed);
  } else {
    ForEachRowWidth(
        std::integer_sequence<int, 32, 64, 96, 128, 224, 352, 384, 416, 448, 480, 512>{}, fixed);
    if constexpr (kCenter) ForEachRowWidth(std::integer_sequence<int, 256, 288>{}, fixed);
  }
  if (kernel == nullptr ||
      ResidentBlocksPerSm(reinterpret_cast<const void*>(kernel), threads) <=
          ResidentBlocksPerSm(reinterpret_cast<const void*>(generic), threads)) {
    return decltype(kernel){nullptr};
  }
  return kernel;
}

// LeanRowKernel's unspread bounds-tested instance at 3 vectors per thread
// over `tpr` threads, one of kTprs, or null (ThreeVectorInstance,
// FusedThreeVectorInstance).
template <typename T, int kVec, bool kCenter, bool kFused, ParamLoads kParams, int... kTprs>
auto ThreeVectorKernel(int tpr) -> void (*)(int, ForwardArgs) {
  void (*kernel)(int, ForwardArgs) = nullptr;
  ForEachRowWidth(std::integer_sequence<int, kTprs...>{}, [&](auto tpr_constant) {
    constexpr int kTpr = decltype(tpr_constant)::value;
    if (tpr == kTpr) {
      kernel = &LeanRowKernel<T, kVec, 3, kCenter, kTpr, 0, kFused, 0, false, kParams>;
    }
  });
  return kernel;
}

// The LeanRowKernel instance at 3 vectors per thread for a plain 16-bit row
// of 3 vectors per thread over 32, 64 or 96 threads (hidden 768, 1536, 2304;
// ItersFor gives 4, every thread's fourth past the row's end, which only adds
// zeros to RowStatsOf's sums: the same bits) in a launch that is not
// latency-bound, or null where the 4-vector instance (`four`: 55-63
// registers, eight or nine 128-thread blocks per SM) runs it. The weight is
// loaded beside x (ParamLoads::kWeightWithX: 59-64 registers, eight blocks),
// or, for bf16 LayerNorm rows of 768 in launches that `four` takes in more
// than one wave, of at most kThreeVectorLayerNormElements elements, weight
// and bias (kWithX: 71 registers, seven blocks).
// Measured on the H200 against 3120e31 (kWithX rows of 768 only;
// bench/results/gpu-2026-12-03-round78.md, table 2, the rule as landed), us:
// bf16 RMSNorm 2048 x 768 6.2 -> 5.75, 8192 x 768 10.95 -> 10.75, 4096 x
// 1536 11.7 -> 10.65, 8192 x 1536 17.5 -> 16.6, 16384 x 1536 29.8 -> 28.25,
// 65536 x 1536 100.05 -> 99.0, 4096 x 2304 14.75 -> 13.75, 8192 x 2304 23.55
// -> 22.55, 32768 x 2304 76.6 -> 75.45 (fp16 alike), 65536 x 768 and 131072
// x 768 within 0.2 %; LayerNorm bf16 2048 x 768 6.3 -> 6.05, 65536 x 768
// 53.45 -> 52.75, 131072 x 768 100.45 -> 99.6, fp16 8192 x 768 11.9 -> 11.55,
// 32768 x 768 29.8 -> 29.5, 8192 x 2304 24.8 -> 24.1, 32768 x 2304 79.95 ->
// 78.25. Round 77 (gpu-2026-12-03-round77.md, table 4) measured kWithX's
// rows of 768 against `four`: bf16 RMSNorm 32768 x 768 29.6 -> 28.6,
// LayerNorm 8192 x 768 12.0 -> 11.1. Not taken:
//  - the weight alone beside x in bf16 LayerNorm launches that kWithX takes
//    (round78.md, table 1: 6144 x 768 9.15 -> 10.1 us, 8192 x 768 11.0 ->
//    11.65), nor in bf16 LayerNorm rows of 1536 and 2304 (16384 x 1536 29.45
//    -> 29.75, 32768 x 2304 77.15 -> 78.3) or fp16 ones of 1536 (65536 x 1536
//    100.1 -> 100.6);
//  - kWithX in other launches: in launches that `four` holds in one wave, at
//    seven blocks per SM (round77.md: 4096 x 768 RMSNorm 7.5 -> 7.75), fp16
//    LayerNorm (90 registers: 32768 x 768 29.6 -> 32.2), rows over 64 and 96
//    threads (72-74 registers: RMSNorm 65536 x 1536 100.1 -> 103.6);
//  - 3 vectors per thread with the parameters loaded after each store
//    (round77.md, table 1: LayerNorm 32768 x 2304 77.25 -> 78.7 us);
//  - narrower rows, whose third vectors lie partly past the row's end
//    (round77.md: 32768 x 640 RMSNorm 25.2 -> 25.6).
inline constexpr int64_t kThreeVectorLayerNormElements = int64_t{1} << 25;
template <typename T, int kVec, bool kCenter>
auto ThreeVectorInstance(const ForwardArgs& a, const RowLayout& layout, int64_t blocks,
                         const void* four) -> void (*)(int, ForwardArgs) {
  if (a.hidden != 3 * layout.tpr * kVec) return nullptr;
  constexpr ParamLoads kWeight = ParamLoads::kWeightWithX;
  if constexpr (!kCenter) {
    return ThreeVectorKernel<T, kVec, kCenter, false, kWeight, 32, 64, 96>(layout.tpr);
  } else if constexpr (std::is_same_v<T, __half>) {
    return ThreeVectorKernel<T, kVec, kCenter, false, kWeight, 32, 96>(layout.tpr);
  } else {  // bf16 LayerNorm rows of 768
    if (layout.tpr != 32) return nullptr;
    const bool bias_with_x = a.rows * a.hidden <= kThreeVectorLayerNormElements &&
                             Waves(four, layout.threads(), blocks) > 1;
    return bias_with_x
               ? ThreeVectorKernel<T, kVec, kCenter, false, ParamLoads::kWithX, 32>(layout.tpr)
               : ThreeVectorKernel<T, kVec, kCenter, false, kWeight, 32>(layout.tpr);
  }
}

// The LeanRowKernel instance at 3 vectors per thread, the weight loaded
// beside x (ParamLoads::kWeightWithX: 56-60 registers), for a fused 16-bit
// RMSNorm row with bounds tests of 3 vectors per thread over 32, 64 or 96
// threads (hidden 768, 1536, 2304; the same bits as ThreeVectorInstance's
// rows), or null where LeanFusedUnspreadInstance's 4-vector instance runs it.
// Measured on the H200 against it (bench/results/gpu-2026-12-03-round78.md,
// table 2, new against new-nofused3), bf16 add + RMSNorm, us: 4096 x 2304
// 23.5 -> 22.95, 8192 x 2304 40.95 -> 40.4, 32768 x 2304 147.95 -> 147.15,
// 32768 x 768 53.05 -> 52.5, 4096 x 1536 17.15 -> 17.0; fp16 16384 x 768
// 29.05 -> 28.6; 65536 x 1536 within 0.2 % (bf16 195.65 -> 196.0, fp16
// 196.15 -> 195.95). Round 77 measured fused rows at 3 vectors per thread
// with the weight loaded after each store within 1.5 %, both ways.
template <typename T, int kVec>
auto FusedThreeVectorInstance(const ForwardArgs& a, int tpr) -> void (*)(int, ForwardArgs) {
  if (a.hidden != 3 * tpr * kVec) return nullptr;
  return ThreeVectorKernel<T, kVec, false, true, ParamLoads::kWeightWithX, 32, 64, 96>(tpr);
}

// The LeanRowKernel instance for a fused 16-bit row (y) spread once
// (SpreadsOnce: 2 vectors over `tpr` threads), full, in a launch of `blocks`
// blocks of `threads` threads that is not latency-bound, or null where
// ForwardKernel's spread instance (`generic`) runs it: in launches of at most
// kLeanFusedElements elements that the lean instance takes in fewer waves
// (FewerWaves). Measured on the H100 (bench/results/gpu-2026-11-26-
// round31.md, call 7): bf16 add + RMSNorm 700 x 4096 13.0 -> 11.9 us, 4096 x
// 4096 49.8 -> 49.3, 4096 x 2048 27.75 -> 27.45, 8192 x 1024 27.9 -> 27.35;
// fp16 4096 x 4096 49.65 -> 49.1. Slower in a launch of as many waves (1024 x
// 4096 16.25 -> 16.35) and in the largest (16384 x 8192 359.45 -> 360.3; 32768
// x 4096 and 65536 x 1024 even). Slower everywhere, so not taken: fused rows
// unspread (bf16 600 x 4096 11.1 -> 11.25, fp16 11.1 -> 11.4) and fused fp32
// rows (32768 x 4096 716.7 -> 746.0, 4096 x 4096 94.0 -> 97.55). The rule as
// landed, twice (round32.md, calls 1 and 3): bf16 700 x 4096 12.8 -> 11.7 and
// 12.7 -> 11.8 us, 4096 x 4096 49.8 -> 49.3 and 49.8 -> 49.2. On the H200
// (call 18): 700 x 4096 10.8 -> 9.2, 2048 x 4096 21.9 -> 21.1, 4096 x 4096
// 37.5 -> 37.1, 8192 x 1024 21.6 -> 21.0.
inline constexpr int64_t kLeanFusedElements = int64_t{1} << 25;
template <typename T, int kVec, int kIters, bool kCenter, typename Generic>
auto* LeanFusedInstance(const ForwardArgs& a, int tpr, int threads, int64_t blocks,
                        Generic* generic) {
  void (*kernel)(int, ForwardArgs) = nullptr;
  auto fixed = [&](auto tpr_constant) {
    constexpr int kTpr = decltype(tpr_constant)::value;
    if (tpr == kTpr) kernel = &LeanRowKernel<T, kVec, kIters, kCenter, kTpr, kSpreadOnce, true>;
  };
  ForEachRowWidth(std::integer_sequence<int, 64, 128, 256, 512>{}, fixed);
  if (kernel == nullptr || a.rows * a.hidden > kLeanFusedElements ||
      !FewerWaves(reinterpret_cast<const void*>(kernel), reinterpret_cast<const void*>(generic),
                  threads, blocks)) {
    return decltype(kernel){nullptr};
  }
  return kernel;
}

// The LeanRowKernel instance for a plain 16-bit row of half vectors that the
// layout streams (ForwardStreamKernel: 8 per thread would take more than 512
// threads) and 16 per thread hold over 288 threads, or RMSNorm rows over 320
// (hidden 16388-20476), one row per block, bounded to two blocks per SM (96
// registers, where 100-128 held one block), or null; `tpr` is set for every
// plain row that 16 per thread hold in one block (the longer rows, and
// LayerNorm rows over 320 threads, take StagedLongRowKernel,
// forward_staged.cuh). Launches of more rows than SMs take it; the others
// StagedLongRowKernel's instance of one block per SM (kStagedMinBlocks), the
// same arithmetic (RowStatsOf over the same columns, NormOutput), so the same
// bits (BoundsTestedRows compares them): on the H200 (gpu-2026-12-01-
// round67.md, table 7) bf16 RMSNorm 1 x 16388 10.4 -> 6.2 us, 64 x 20004
// 11.45 -> 7.3, 100 x 20476 12.1 -> 7.75, LayerNorm 64 x 16388 12.05 -> 7.75.
// LongHalfRowInstance measured on the H200 against the stream (bench/results/
// gpu-2026-11-30-round62.md, table 6, call F): bf16 RMSNorm 8192 x 16388
// 157.8 -> 144.65 us, 2048 x 20004 60.45 -> 51.6, LayerNorm 191.45 -> 160.15
// and 68.55 -> 59.2, fp16 RMSNorm 8192 x 16388 153.45 -> 142.8; 512 x 20004
// and 64 x 20004 even. Beside Quack
// (table 7, call G), bf16 RMSNorm 8192 x 16388 1.008 of its speed (0.920
// streamed), 2048 x 20004 0.950 (0.829); LayerNorm 1.398, 1.150.
template <typename T, bool kCenter>
auto LongHalfRowInstance(const ForwardArgs& a, int& tpr) -> void (*)(int, ForwardArgs) {
  static_assert(sizeof(T) == 2, "16-bit rows");
  if (a.y != nullptr || a.residual_out != nullptr) return nullptr;
  const int64_t threads = ThreadsFor((a.hidden + 3) / 4, 16);
  if (threads > kMaxThreads) return nullptr;
  tpr = static_cast<int>(threads);
  if (tpr == 288) return &LeanRowKernel<T, 4, 16, kCenter, 288, 0, false, 2, false>;
  if constexpr (!kCenter) {
    if (tpr == 320) return &LeanRowKernel<T, 4, 16, kCenter, 320, 0, false, 2, false>;
  }
  return nullptr;
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_FORWARD_INSTANCES_CUH_
