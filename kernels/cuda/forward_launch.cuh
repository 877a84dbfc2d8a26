// The forward launcher: layout from (dtype, hidden, alignment), then the
// dispatch table onto a kernel instance.
#ifndef NORMSERVE_KERNELS_CUDA_FORWARD_LAUNCH_CUH_
#define NORMSERVE_KERNELS_CUDA_FORWARD_LAUNCH_CUH_

#include <type_traits>
#include <utility>

#include "dispatch.cuh"
#include "forward_instances.cuh"
#include "forward_kernels.cuh"
#include "forward_lean.cuh"
#include "forward_staged.cuh"
#include "launch.h"
#include "row_layout.h"

namespace normserve::kernels::cuda {

// Whether a launch of `rows` rows in the layout is latency-bound (weight /
// bias preloaded, LaunchForwardRegisters): at most one block per SM at the
// layout's rows per block, or two for rows of 128 threads or more. Measured
// on the H100 (gpu-2026-11-24-round12.md, call 8), the second case: bf16
// 512 x 4096 RMSNorm 8.3 -> 7.75 us, LayerNorm 8.5 -> 8.15, add + RMSNorm
// 10.1 -> 9.95; fp32 11.4 -> 10.2 us LayerNorm; 256 x 8192 fp32 LayerNorm
// 11.3 -> 10.25. Rows of fewer threads, several per block, each row group
// copying its own parameters, measured slower so (bf16 2048 x 1024 RMSNorm
// 7.9 -> 8.55 us), and so did four blocks per SM (bf16 LayerNorm 512 x 8192
// 10.6 -> 11.3 us).
inline bool LatencyBound(const RowLayout& layout, int64_t rows, int max_chunks) {
  const int64_t layout_blocks = (rows + layout.rows_per_cta - 1) / layout.rows_per_cta;
  return 2 * layout_blocks <= max_chunks || (layout.tpr >= 128 && layout_blocks <= max_chunks);
}

// Plain fp32 rows of at least this many threads may take register-bounded
// instances (LaunchForwardRegisters).
inline constexpr int kTwoBlockRowThreads = 384;

// A register-kernel launch of the layout's instance (kernel choice below).
template <typename T, int kVec, int kIters, bool kCenter>
cudaError_t LaunchForwardRegisters(const ForwardArgs& a, RowLayout layout, cudaStream_t stream) {
  const int max_chunks = MaxChunksPerSegment();  // 2 per SM
  const bool latency_bound = LatencyBound(layout, a.rows, max_chunks);
  // One row per block for row groups of 128 threads or more, and in launches
  // of fewer rows than SMs (more SMs busy, no idle row group in a block of one
  // row). Measured on the H100 (round8.md): bf16 add + RMSNorm 32768 x 4096
  // 380.7 -> 373.9 us, fp32 64 x 4096 RMSNorm 6.9 -> 6.5 us. Shorter rows of
  // launches that are not latency-bound: blocks of kForwardBlockThreads
  // threads rather than the layout's 256 (round21.md: bf16 RMSNorm 16384 x
  // 1024 28.45 -> 27.9 us, add + RMSNorm 4096 x 2048 28.6 -> 28.2; fp32 add +
  // RMSNorm 65536 x 512 190.3 -> 186.7). A row's bits depend on tpr, never on
  // rows_per_cta.
  if (layout.tpr >= kForwardBlockThreads || 2 * a.rows <= max_chunks) {
    layout.rows_per_cta = 1;
  } else if (!latency_bound) {
    layout.rows_per_cta = kForwardBlockThreads / layout.tpr;  // tpr < 128: at least 1
  }
  const int64_t blocks = (a.rows + layout.rows_per_cta - 1) / layout.rows_per_cta;
  constexpr bool kWide = kVec * sizeof(T) == 16;
  // (Fused 16-bit rows of 16385-29000 elements once took a kernel that staged
  // x and y through shared memory, two rows per block; the register kernel
  // measured faster since it holds p in registers (gpu-2026-11-26-round22.md,
  // calls 1-2): bf16 add + RMSNorm 4096 x 17000 233.4 -> 203.6 us on the
  // H100, 194.5 -> 166.2 on the H200; 4096 x 20000 255.9 -> 232.5 and
  // 205.8 -> 181.4.)
  // A latency-bound launch preloads weight / bias into shared memory while the
  // row is reduced (16-byte vectors only; cp.async).
  const bool preload = kWide && latency_bound;
  // Preload instances place a spread row's vectors, and the kSpread ones
  // (SpreadsOnce: 16-bit rows of 4 vectors per thread spread once); the
  // others place vector `it` at it * tpr + t.
  constexpr bool kSpreadable = sizeof(T) == 2 && kWide && kIters <= 2;
  if (layout.spread > 0 && !preload && !kSpreadable) return cudaErrorInvalidConfiguration;
  // 16-bit rows of a launch with neither y nor residual_out are held packed
  // (ForwardRow) at up to 32 values per thread: 78 -> 61 registers at 4
  // vectors, so a 512-thread block of 16384-wide rows fits twice per SM
  // (bench/results/gpu-2026-11-23-round6.md: bf16; fp16 rows kept as fp32
  // measured 15-25 % slower in LayerNorm and at 16384). At 8 vectors packing
  // saved no registers (99 -> 107) and measured slower (4096 x 20000).
  // Rows of half vectors (8 bytes) too, up to 8 per thread: held as fp32 they
  // took 80-90 registers at 8 (RMSNorm, LayerNorm; packed 64), five or four
  // 160-thread blocks per SM at hidden 4100 (packed six). Measured on the H100
  // (bench/results/gpu-2026-11-28-round44.md, call 1), as fp32 -> packed:
  // bf16 RMSNorm 8192 x 4100 77.5 -> 59.8 us, LayerNorm 93.4 -> 63.9, 4096 x
  // 14500 147.0 -> 99.1 and 181.9 -> 106.2; fp16 RMSNorm 4096 x 14500 159.4 ->
  // 99.5. Fused rows (y) keep fp32 p, as rows of 16-byte vectors do.
  constexpr bool kHalf = kVec * sizeof(T) == 8;
  constexpr bool kPackable = sizeof(T) == 2 && (kWide || kHalf) && kIters * kVec <= 32;
  const bool packed = kPackable && a.y == nullptr && a.residual_out == nullptr;
  // Rows that fill every thread's vectors, with the statistic over the whole
  // row, run an instance without bounds tests (FullRow; for rows of up to 32
  // values per thread also reduced canonically, ForwardCanonical):
  // fewer instructions on the latency-bound path of small launches. Every
  // launch of the row's hidden size and statistic takes it, whatever its rows.
  const bool full = kWide && FullRow(layout, a.hidden, a.norm.stat_len);
  // Latency-bound launches of full rows of a warp or more, at most 4 vectors
  // per thread, one row per block: the one-row instances (ForwardKernel's
  // kOneRow). At 8 vectors bf16 LayerNorm spilled 200 bytes there, and fp32
  // rows measured slower (H200, ncu: LayerNorm 256 x 8192 6768 -> 7040 ns).
  const bool one_row = layout.rows_per_cta == 1 && layout.tpr >= 32;
  // LeanRowKernel (forward_lean.cuh) where one of the six rules of
  // forward_instances.cuh takes the launch (their layouts exclude each other),
  // ForwardKernel otherwise (`generic`: the instance a rule weighs it against).
  void (*lean)(int, ForwardArgs) = nullptr;
  if constexpr (kSpreadable && kIters == 2) {
    // SpreadsOnce halves a row's 4 vectors per thread: 2.
    if (layout.spread > 0 && !preload && packed && full) {
      lean = SpreadRowInstance<T, kVec, kIters, kCenter>(layout.tpr);
    }
    if (layout.spread == kSpreadOnce && !preload && full && a.y != nullptr) {
      auto* generic = &ForwardKernel<T, kVec, kIters, false, kCenter, RowStorage::kFloats, true, 0,
                                     false, true>;
      lean = LeanFusedInstance<T, kVec, kIters, kCenter>(a, layout.tpr, layout.threads(), blocks,
                                                         generic);
    }
  }
  if constexpr (sizeof(T) == 2 && kWide && kIters == 4) {  // fused rows unspread
    if (layout.spread == 0 && !preload && a.y != nullptr) {
      auto unspread = [&](auto full_constant) {
        constexpr bool kFull = decltype(full_constant)::value;
        auto* generic = &ForwardKernel<T, kVec, kIters, false, kCenter, RowStorage::kFloats, kFull>;
        return LeanFusedUnspreadInstance<T, kVec, kIters, kCenter, kFull>(
            layout.tpr, layout.threads(), generic);
      };
      lean = full ? unspread(std::true_type{}) : unspread(std::false_type{});
      if constexpr (!kCenter) {  // RMSNorm rows of 3 vectors per thread
        if (!full && lean != nullptr) {
          if (auto* three = FusedThreeVectorInstance<T, kVec>(a, layout.tpr)) lean = three;
        }
      }
    }
  }
  if constexpr (kWide && (kIters == 4 || (sizeof(T) == 4 && kIters == 2))) {
    if (layout.spread == 0 && !preload && full && a.y == nullptr && a.residual_out == nullptr) {
      auto* generic = &ForwardKernel<T, kVec, kIters, false, kCenter, RowStorage::kFloats, true>;
      if constexpr (kIters == 4 && sizeof(T) == 4) {
        if (auto* spread = SpreadFp32Instance<T, kVec, kCenter>(a, layout.tpr)) {
          spread<<<static_cast<unsigned>(a.rows), 2 * layout.tpr, 0, stream>>>(1, a);
          return cudaGetLastError();
        }
      }
      if constexpr (kIters == 4) {
        lean = LeanUnspreadInstance<T, kVec, kIters, kCenter>(a, layout.tpr, layout.threads(),
                                                              blocks, generic);
      } else {
        lean = LeanPairInstance<T, kVec, kCenter>(a, layout.tpr, layout.threads(), blocks, generic);
      }
    }
  }
  // Plain 16-bit LayerNorm rows of 4 vectors per thread with bounds tests
  // (hidden 768, 1536, 2560, 3584, 1000, 3000 ...: vectors past the row's end, or
  // a partial statistic) over a row width that has an instance, in every
  // launch that is not latency-bound: LeanRowKernel's bounds-tested instances
  // (the same arithmetic as ForwardKernel's, so the same bits). ForwardKernel
  // is issue-bound there on the H200 (ncu, bf16 LayerNorm 8192 x 15000: 0.71
  // instructions issued per scheduler and cycle, 31 % more instructions than
  // RMSNorm; bench/results/gpu-2026-11-27-round39.md, call 7). Measured (calls
  // 8-9), bf16 LayerNorm H200: 32768 x 3000 110.8 -> 99.9 us, 16384 x 6000
  // 112.9 -> 99.9, 8192 x 12000 128.2 -> 112.2, 32768 x 2000 74.3 -> 69.3,
  // 65536 x 1000 71.5 -> 69.2; fp16 16384 x 6000 112.5 -> 98.8; H100: 8192 x
  // 12000 145.0 -> 136.3, 16384 x 4000 93.5 -> 92.7, others within 0.4 %
  // (16384 x 6000 136.0 -> 136.4); call 10 (H200) 65536 x 1536 123.0 -> 100.4,
  // 32768 x 2560 101.1 -> 85.1, 65536 x 768 60.8 -> 54.1; call 11 (H100)
  // 65536 x 1536 139.5 -> 138.25. Rows of 5, 7, 10, 14 and 16 warps
  // (round40.md, calls 2, 5 and 8), bf16 LayerNorm H200: 16384 x 5000 94.7 ->
  // 84.2 us, 16384 x 7000 132.7 -> 116.1, 8192 x 14000 140.1 -> 121.8, 8192 x
  // 16000 143.3 -> 132.8, fp16 8192 x 14000 150.1 -> 121.0; H100: 4096 x 5000
  // 34.9 -> 33.3, 8192 x 14000 163.0 -> 157.6, fp16 169.6 -> 157.4, none
  // slower. RMSNorm rows lost up to 0.9 % so on the H200 (round39.md: bf16
  // 16384 x 6000 99.2 -> 99.9 us) and keep ForwardKernel, but for sparse rows
  // (SparseRow), which gain: H200 bf16 RMSNorm 65536 x 1536 106.3 -> 99.7,
  // 16384 x 1536 31.3 -> 29.0, 65536 x 768 55.1 -> 53.0, 32768 x 2560 85.8 ->
  // 84.6, fp16 65536 x 1536 106.3 -> 99.7; H100 16384 x 1536 39.2 -> 38.5,
  // 4096 x 3584 25.5 -> 25.1, the largest launches within 0.5 %.
  if constexpr (kPackable && kWide && kIters == 4) {
    if (layout.spread == 0 && !preload && !full && packed &&
        (kCenter || SparseRow(layout, a.hidden))) {
      auto* generic = &ForwardKernel<T, kVec, kIters, false, kCenter, RowStorage::kPacked, false>;
      lean = LeanUnspreadInstance<T, kVec, kIters, kCenter, false>(a, layout.tpr, layout.threads(),
                                                                   blocks, generic);
      if (lean != nullptr) {
        if (auto* three = ThreeVectorInstance<T, kVec, kCenter>(
                a, layout, blocks, reinterpret_cast<const void*>(lean))) {
          lean = three;
        }
      }
    }
  }
  if constexpr (kHalf && (kIters == 8 || kIters == (sizeof(T) == 2 ? 4 : 16))) {
    if (layout.spread == 0 && a.y == nullptr && a.residual_out == nullptr) {
      lean = LeanHalfInstance<T, kVec, kIters, kCenter>(a.hidden, a.rows, layout.tpr);
    }
  }
  if constexpr (sizeof(T) == 2 && kWide && kIters == 8) {
    if (layout.spread == 0 && !preload && a.y == nullptr && a.residual_out == nullptr) {
      if (layout.tpr >= kStagedLongRowThreads) {  // forward_staged.cuh
        return full ? LaunchStagedLongRow<T, kVec, kCenter, true>(a, layout.tpr, stream)
                    : LaunchStagedLongRow<T, kVec, kCenter, false>(a, layout.tpr, stream);
      }
      lean = LongFullRowInstance<T, kVec, kIters, kCenter>(layout.tpr);
    }
  }
  if (lean != nullptr) {
    lean<<<static_cast<unsigned>(blocks), layout.threads(), 0, stream>>>(layout.rows_per_cta, a);
    return cudaGetLastError();
  }
  auto choose = [&](auto full_constant) {
    constexpr bool kFull = decltype(full_constant)::value;
    auto* chosen = &ForwardKernel<T, kVec, kIters, false, kCenter, RowStorage::kFloats, kFull>;
    if constexpr (kPackable && kHalf) {
      if (packed)
        chosen = &ForwardKernel<T, kVec, kIters, false, kCenter, RowStorage::kPacked, kFull>;
    }
    if constexpr (kWide) {
      if (preload)
        chosen = &ForwardKernel<T, kVec, kIters, true, kCenter, RowStorage::kFloats, kFull>;
      if constexpr (kPackable) {
        if (packed) {
          chosen =
              preload ? &ForwardKernel<T, kVec, kIters, true, kCenter, RowStorage::kPacked, kFull>
                      : &ForwardKernel<T, kVec, kIters, false, kCenter, RowStorage::kPacked, kFull>;
        }
      }
      if constexpr (kFull && kIters <= 4) {
        if (preload && one_row) {
          chosen =
              &ForwardKernel<T, kVec, kIters, true, kCenter, RowStorage::kFloats, true, 0, true>;
          if constexpr (kPackable) {
            if (packed)
              chosen = &ForwardKernel<T, kVec, kIters, true, kCenter, RowStorage::kPacked, true, 0,
                                      true>;
          }
        }
      }
    }
    return chosen;
  };
  auto* kernel = choose(std::false_type{});
  if constexpr (kWide) {
    if (full) kernel = choose(std::true_type{});
  }
  if constexpr (kSpreadable) {
    if (layout.spread > 0 && !preload) {
      if (!full) return cudaErrorInvalidConfiguration;
      kernel = &ForwardKernel<T, kVec, kIters, false, kCenter, RowStorage::kFloats, true, 0, false,
                              true>;
      if constexpr (std::is_same_v<T, __nv_bfloat16>) {  // SpreadsOnce: plain bf16 rows
        if (packed)
          kernel = &ForwardKernel<T, kVec, kIters, false, kCenter, RowStorage::kPacked, true, 0,
                                  false, true>;
      }
    }
  }
  // Plain fp32 rows of 8 vectors per thread over kTwoBlockRowThreads threads
  // or more (hidden 11268-16384): at their 78-87 registers one block fits an
  // SM, which then waits on each row's reductions with nothing else in
  // flight. Staged through shared memory (RowStorage::kStaged: 52-64
  // registers, a 64 KiB copy of the row), two fit. Measured on the H100
  // (bench/results/gpu-2026-11-26-round26.md, calls 11-12): LayerNorm
  // 512 x 16384 33.6 -> 29.6 us, 2048 x 16384 98.9 -> 96.6, 2048 x 12000
  // 84.0 -> 76.2, 8192 x 16384 361.9 -> 361.7; RMSNorm 512 x 16384 31.2 ->
  // 28.3, 2048 x 12000 75.5 -> 72.0. On a device of high bandwidth per SM
  // (HighDramBandwidthPerSm) full LayerNorm rows instead take the register
  // instance bounded to 64 registers (8-80 bytes of spill), which fits twice
  // too: on the H200 (call 13) staged LayerNorm measured slower, 8192 x 16384
  // 266.95 -> 275.1 us, 8192 x 12288 199.95 -> 206.4, where staged RMSNorm
  // gained (270.2 -> 265.65) and so did LayerNorm's partial rows (2048 x
  // 12000 68.3 -> 63.7). (Bounded, round22.md: H200 LayerNorm 292.9 -> 267.5
  // us, H100 361.8 -> 370.2.) Rows of fewer threads fit twice as they are.
  // Fused rows (y) on a device of high bandwidth per SM, where the register
  // instance (78-86 registers) holds one block per SM, are staged too
  // (RowStorage::kStagedSum: x copied and y added in shared memory, 42-60
  // registers): where p in registers bounded to 64 lost (H200 add + RMSNorm
  // 8192 x 16384 525 -> 548.5 us), staged won on the H200
  // (bench/results/gpu-2026-11-29-round54.md, table 3): add + LayerNorm 2048 x
  // 14000 140.4 -> 126.8 us, 8192 x 12000 439.8 -> 406.0, 512 x 16384 45.25 ->
  // 42.6, 4096 x 16384 285.65 -> 274.6, 8192 x 16384 542.2 -> 534.3; add +
  // RMSNorm 2048 x 14000 127.4 -> 121.45, 8192 x 12000 410.25 -> 393.1, 512 x
  // 16384 42.8 -> 41.1, 8192 x 16384 526.85 -> 524.65; but 4096 x 16384
  // 267.25 -> 268.85 and 1024 x 16384 75.45 -> 75.65. Full rows of 12288 (384
  // threads), whose register instance holds two blocks, lost staged (add +
  // RMSNorm 4096 x 12288 200.5 -> 203.0, add + LayerNorm 201.7 -> 204.2) and
  // keep it. Not measured on the H100.
  bool staged = false;
  if constexpr (sizeof(T) == 4 && kWide && kIters == 8) {
    const bool fused = a.y != nullptr;
    if (!preload && layout.tpr >= kTwoBlockRowThreads) {
      if (!fused && a.residual_out == nullptr) {
        if (kCenter && full && HighDramBandwidthPerSm()) {
          if constexpr (kCenter)
            kernel = &ForwardKernel<T, kVec, kIters, false, kCenter, RowStorage::kFloats, true, 2>;
        } else {
          staged = true;
          kernel =
              full ? &ForwardKernel<T, kVec, kIters, false, kCenter, RowStorage::kStaged, true>
                   : &ForwardKernel<T, kVec, kIters, false, kCenter, RowStorage::kStaged, false>;
        }
      }
      if (fused && HighDramBandwidthPerSm() &&
          ResidentBlocksPerSm(reinterpret_cast<const void*>(kernel), layout.threads()) < 2) {
        staged = true;
        kernel =
            full ? &ForwardKernel<T, kVec, kIters, false, kCenter, RowStorage::kStagedSum, true>
                 : &ForwardKernel<T, kVec, kIters, false, kCenter, RowStorage::kStagedSum, false>;
      }
    }
  }
  const size_t rows = static_cast<size_t>(layout.rows_per_cta);
  const size_t hidden = static_cast<size_t>(a.hidden);
  const size_t padded = static_cast<size_t>(kIters) * layout.tpr * kVec;
  const size_t shared_bytes = preload  ? 2 * sizeof(T) * rows * hidden
                              : staged ? sizeof(T) * rows * padded
                                       : 0;
  if (shared_bytes > 0) {
    const cudaError_t err =
        staged ? AllowStagedShared(kernel, shared_bytes) : AllowDynamicShared(kernel, shared_bytes);
    if (err != cudaSuccess) return err;
  }
  kernel<<<static_cast<unsigned>(blocks), layout.threads(), shared_bytes, stream>>>(
      layout.tpr, layout.rows_per_cta, layout.spread, preload && 2 * blocks <= max_chunks,
      a.residual_dtype == DType::kF32, a);
  return cudaGetLastError();
}

template <typename T, bool kCenter>
cudaError_t LaunchForwardLayout(const ForwardArgs& a, const RowLayout& layout,
                                cudaStream_t stream) {
  return DispatchRowLayout<Pass::kForward, T>(layout, [&](auto vec, auto iters) {
    constexpr int kVec = decltype(vec)::value;
    constexpr int kIters = decltype(iters)::value;
    if constexpr (kIters == 0) {
      if constexpr (sizeof(T) == 2 && kVec == 4) {
        int tpr = 0;
        if (auto* lean = LongHalfRowInstance<T, kCenter>(a, tpr)) {
          if (AtMostOneRowPerSm(a.rows)) {
            return LaunchStagedLongRow<T, kVec, kCenter, false>(a, tpr, stream);
          }
          lean<<<static_cast<unsigned>(a.rows), tpr, 0, stream>>>(1, a);
          return cudaGetLastError();
        }
        if (tpr >= (kCenter ? kStagedHalfLayerNormThreads : kStagedLongRowThreads)) {
          // plain rows staged: forward_staged.cuh
          return LaunchStagedLongRow<T, kVec, kCenter, false>(a, tpr, stream);
        }
      }
      ForwardStreamKernel<T, kVec><<<static_cast<unsigned>(a.rows), kMaxThreads, 0, stream>>>(a);
      return cudaGetLastError();
    } else {
      return LaunchForwardRegisters<T, kVec, kIters, kCenter>(a, layout, stream);
    }
  });
}

// Fused 16-bit launches (with y) of full rows spread each row once
// (SpreadLayout: twice the threads, half the vectors each, the same bits)
// where they have more than five rows per SM (rows of more than a warp) or
// at least eight (rows of one warp): the row's x and y loads and its fp32 p
// took the 4-vector instance to 86 registers, the 2-vector one takes 62-64.
// Measured on the H100 (bench/results/gpu-2026-11-26-round25.md, calls 8-9),
// bf16 add + RMSNorm: 4096 x 1024 16.65 -> 16.15 us, 4096 x 4096 50.25 ->
// 49.7, 8192 x 2048 50.35 -> 50.0, 32768 x 4096 361.0 -> 360.5, 65536 x 1024
// 183.35 -> 182.9. Spread twice measured slower than once. Five rows per SM:
// at 86 registers five 128-thread blocks fit an SM, so the unspread launch
// needs a second wave past them (H200, gpu-2026-11-26-round26.md, calls 1-3:
// 660 -> 661 rows of 4096 took 9.7 -> 11.0 us, spread 10.75; 700 x 2048
// 7.85 -> 7.35; H100, call 8: 661 x 4096 12.85 -> 12.6, 700 x 2048 8.75 ->
// 8.35). Fewer, spread rows lose (600 x 4096 9.2 -> 10.05 us), and
// so do rows of one warp below eight per SM, which spreading gives a
// cross-warp reduction (900 x 1024 6.25 -> 6.45).
// Plain bf16 rows of up to 256 threads (hidden <= 8192) spread once too in
// launches of at least 2^25 elements: the packed 2-vector instances take 39-40
// registers where the 4-vector ones take 56-58, six 256-thread blocks per SM
// (48 warps) where eight 128-thread blocks were 32. Measured on the H100
// (round26.md, calls 17-18), LayerNorm 32768 x 4096 183.3 -> 181.5 us (with
// statistics 184.35 -> 182.45), 65536 x 2048 183.5 -> 181.9, 131072 x 1024
// 183.0 -> 182.3, 8192 x 4096 50.6 -> 50.15; RMSNorm 32768 x 4096 183.1 ->
// 182.05; rows of 8192 (512-thread rows of 2 vectors, as Liger runs them;
// round27.md, call 11, and round28.md, call 10, with LeanRowKernel): RMSNorm
// 16384 x 8192 183.2 -> 181.55 us, LayerNorm 183.75 -> 182.25. Smaller
// launches lose to the extra waves and cross-warp reductions (4096 x 1024
// 10.15 -> 11.15 us, 1056 x 4096 10.85 -> 11.55; 4096 x 4096 even); so does
// fp16 LayerNorm (16384 x 4096 94.5 -> 94.95), whose packed instance already
// takes 50 registers. On a device of high bandwidth per SM
// (HighDramBandwidthPerSm) rows of 32-128 threads (hidden 1024-4096), which
// LeanRowKernel runs there (SpreadRowInstance), fp16 rows too (round28.md,
// call 12, with statistics: RMSNorm 131072 x 1024 135.5 -> 131.95 us, 65536 x
// 2048 135.4 -> 131.3, 32768 x 4096 134.25 -> 133.2; LayerNorm 65536 x 2048
// 135.35 -> 131.25, 32768 x 4096 133.1 -> 133.4); rows of 256 threads lose
// there (call 3: RMSNorm 16384 x 8192 134.25 -> 135.5 us, LayerNorm 136.35 ->
// 143.95).
inline constexpr int64_t kPlainSpreadElements = int64_t{1} << 25;
inline bool SpreadsOnce(const ForwardArgs& a, const RowLayout& layout, int max_chunks) {
  if (a.dtype == DType::kF32) return false;
  if (a.y == nullptr) {
    if (a.rows * a.hidden < kPlainSpreadElements) return false;
    if (HighDramBandwidthPerSm()) return layout.tpr >= 32 && layout.tpr <= 128;
    return a.dtype == DType::kBF16 && layout.tpr <= 256;
  }
  const int64_t sms = max_chunks / 2;
  return a.rows >= (layout.tpr > 32 ? 5 * sms + 1 : 8 * sms);
}

template <typename T>
cudaError_t LaunchForwardTyped(const ForwardArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return cudaSuccess;
  const bool aligned = VectorAligned({a.x, a.y, a.weight, a.bias, a.out, a.residual_out});
  RowLayout layout = ChooseRowLayout(Pass::kForward, a.dtype, a.hidden, aligned);
  // Latency-bound launches spread their rows over more threads where that
  // keeps their bits (SpreadLayout), as far as a 512-thread block's worth of
  // threads per SM. More measured slower on the H100 (round13.md, call 4):
  // fp32 add + RMSNorm 256 x 8192, 512-thread rows, 15.05 -> 15.4 us. Part of
  // the way where all the way is too far: kernel durations on the H100 (ncu,
  // gpu-2026-11-26-round22.md, call 12), 256 x 4096: bf16 RMSNorm 4576 ->
  // 4480 ns, add + RMSNorm 5760 -> 5664; fp32 RMSNorm 5600 -> 5376, LayerNorm
  // 5888 -> 5568. Not fp32 rows with y (add + RMSNorm 7648 -> 7904 ns).
  const int max_chunks = MaxChunksPerSegment();  // 2 per SM
  const int64_t spread_tpr = int64_t{max_chunks / 2} * kMaxThreads / a.rows;
  RowLayout spread = SpreadLayout(layout, a.hidden, a.norm.stat_len, spread_tpr);
  if (a.dtype == DType::kF32 && a.y != nullptr &&
      spread.spread != SpreadLayout(layout, a.hidden, a.norm.stat_len).spread) {
    spread = layout;  // fp32 rows with y: all the way or not at all
  }
  if (spread.spread > 0 && LatencyBound(spread, a.rows, max_chunks)) {
    layout = spread;
  } else if (SpreadsOnce(a, layout, max_chunks)) {
    layout = SpreadLayout(layout, a.hidden, a.norm.stat_len, layout.tpr << kSpreadOnce);
  }
  // LayerNorm and RMSNorm are separate instances: RMSNorm's kernels drop the
  // mean (0) at compile time, with the same bits.
  return a.norm.center ? LaunchForwardLayout<T, true>(a, layout, stream)
                       : LaunchForwardLayout<T, false>(a, layout, stream);
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_FORWARD_LAUNCH_CUH_
