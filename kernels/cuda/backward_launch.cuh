// The backward launcher: chunk plan, stage one (rows -> dx and per-chunk
// dw / db partials), stage two (partials -> per-segment dw / db).
#ifndef NORMSERVE_KERNELS_CUDA_BACKWARD_LAUNCH_CUH_
#define NORMSERVE_KERNELS_CUDA_BACKWARD_LAUNCH_CUH_

#include "backward_kernels.cuh"
#include "backward_staged.cuh"
#include "dispatch.cuh"
#include "launch.h"
#include "row_layout.h"

namespace normserve::kernels::cuda {

// Stage one's kernel instance for a layout (register kernels: iters > 0),
// its dynamic shared memory, and the blocks of a cluster it is launched in.
// The one place that maps a layout and a launch's kind to an instance: the
// launch and the occupancy query behind the chunk plan both use it.
struct StageOne {
  void (*kernel)(BackwardArgs, int, int, int64_t) = nullptr;  // nullptr: no instance
  size_t shared_bytes = 0;
  int cluster_ctas = 1;
};

// Blocks of a staged kernel of clusters of `ctas` blocks with `bytes` of
// dynamic shared memory (and its static scratch) that one SM's shared memory
// holds (0: not even one); the driver reserves 1 KB per block, and an SM holds
// one such reserve more than a block may opt in to.
inline int StagedBlocksPerSm(size_t bytes, int ctas) {
  constexpr size_t kReserved = 1024;
  const size_t scratch = ctas == 1 ? kScratchBytes : ClusterScratchBytes(ctas);
  return static_cast<int>((MaxSharedBytesPerBlock() + kReserved) / (bytes + scratch + kReserved));
}

// A staged instance for a launch's db and full: kernel_of(kDb, kFull), both as
// std::bool_constant.
template <typename KernelOf>
auto ForDbFull(bool db, bool full, KernelOf kernel_of) {
  using True = std::true_type;
  using False = std::false_type;
  if (full) return db ? kernel_of(True{}, True{}) : kernel_of(False{}, True{});
  return db ? kernel_of(True{}, False{}) : kernel_of(False{}, False{});
}

// The register kernel over a cluster of kCtas blocks a row (BackwardKernel):
// dw / db accumulators [2][block's columns] fp32 where partials are wanted.
template <typename T, int VEC, int ITERS, bool kCenter, int kCtas, bool kRealigned>
StageOne RegisterClusterStageOne(const RowLayout& layout, int64_t hidden, bool partials) {
  StageOne s;
  s.cluster_ctas = kCtas;
  s.kernel = &BackwardKernel<T, VEC, ITERS, kCenter, kCtas, kRealigned>;
  s.shared_bytes =
      partials ? 2 * sizeof(float) * LocalRowLength<VEC, ITERS, kCtas>(hidden, layout.tpr) : 0;
  return s;
}

// plain: no y and no grad_residual_out. db: grad_bias is wanted. full: see
// FullRow. partials: dw or db is wanted. tensors: StagedTensors of the launch.
// residual_as_stored: no grad_residual_out, or one stored as T. plan_blocks:
// the blocks per SM the chunk plan runs (PlanBlocksPerSm).
// Measured on the H100: plain 16-bit rows faster staged, fp32 rows of one block
// on the register kernel at 4 vectors per thread (round4.md), staged at 2
// (gpu-2026-11-27-round35.md, TwoVectorBackwardRow in row_layout.h); fp32 rows
// of 3073-4096, back at 4 vectors, staged too (round36.md: plain launches
// within 1 % of 2 vectors staged); rows split over a cluster faster staged in
// both (round7.md: fp32 8192 x 16384 RMSNorm 686 -> 629 us, LayerNorm 716 ->
// 657 us; bf16 4096 x 20000 361 -> 280 us, 430 -> 330 us); staged full rows
// without bounds tests (round9.md: the LayerNorm-with-bias instance at 4
// vectors no longer spills, bf16 8192 x 16384 347.5 -> 309.9 us).
template <typename T, int VEC, int ITERS, bool kCenter>
StageOne ChooseGeneralStageOne(const RowLayout& layout, int64_t hidden, bool plain, bool db,
                               bool full, bool partials, int tensors, bool residual_as_stored,
                               int plan_blocks) {
  StageOne s;
  // BackwardStagedKernel's kPadded (the same bits either way), for blocks of at
  // most kTargetThreads threads of at most 2 vectors each; launches with y
  // only for 16-bit rows on a GPU of high bandwidth per SM. Larger blocks, 4
  // vectors, and launches with y otherwise, measured slower padded
  // (bench/results/gpu-2026-11-27-round38.md).
  // And every row of half vectors in one block (at most 4 per thread), plain
  // or fused: measured on the H100 against unpadded (gpu-2026-11-28-
  // round44.md, call 6), add + RMSNorm backward bf16 8192 x 4100 191.9 ->
  // 131.8 us, 8192 x 2052 98.0 -> 70.5, 4096 x 6004 109.4 -> 84.8, fp16 8192 x
  // 4100 197.6 -> 133.7, fp32 4096 x 4090 118.7 -> 109.8; plain fp32
  // LayerNorm 16384 x 1002 93.0 -> 79.5, 8192 x 2050 97.8 -> 83.6, bf16 and
  // fp16 RMSNorm 8192 x 4100 99.7 -> 97.8, 100.7 -> 98.2. Slower: fp32
  // RMSNorm 4096 x 4090 (512 threads) 83.6 -> 86.3 (fp32 8192 x 2050 81.0 ->
  // 81.3; LayerNorm 4096 x 4090 88.7 -> 87.1). Padding fused launches alone
  // left the plain ones' gains.
  constexpr bool kHalfVectors = VEC * sizeof(T) == 8 && ITERS <= 4;
  constexpr bool kMayPad = ITERS <= 2 || kHalfVectors;
  const bool with_y = tensors > 2;
  const bool padded = kMayPad && !full && layout.ctas_per_row == 1 &&
                      (kHalfVectors || (layout.threads() <= kTargetThreads &&
                                        (!with_y || (sizeof(T) == 2 && HighDramBandwidthPerSm()))));
  auto staged_bytes = [&](auto ctas, int staged_tensors, bool weight_row = true) {
    constexpr int kCtas = decltype(ctas)::value;
    return StagedSharedBytes(
        layout.rows_per_cta,
        StagedRowLength<VEC, ITERS, kCtas>(hidden, layout.tpr, kCtas == 1 && padded), sizeof(T),
        staged_tensors, weight_row ? sizeof(float) : sizeof(T));
  };
  // weight_row: see BackwardStagedKernel's kWeightRow.
  auto staged = [&](auto ctas, auto fused, auto weight_row) {
    constexpr int kCtas = decltype(ctas)::value;
    constexpr bool kFused = decltype(fused)::value;
    constexpr bool kWeightRow = decltype(weight_row)::value;
    s.cluster_ctas = kCtas;
    s.shared_bytes = staged_bytes(ctas, kFused ? tensors : 2, kWeightRow);
    if constexpr (kCtas == 1 && sizeof(T) == 4 &&
                  ((VEC == 4 && ITERS == 2) || (VEC == 2 && ITERS == 4)) && kCenter && kFused &&
                  kWeightRow) {
      // Rows of half vectors only over 352-384 threads (hidden 2562-3070),
      // whose unbounded instances hold one block per SM (StageOneFit over
      // half-vector widths); over 288-320 they hold two (not measured bounded).
      const int fewest = VEC == 2 ? 320 : kTargetThreads;
      if (layout.threads() > fewest && layout.threads() <= kTwoVectorF32Threads) {
        s.kernel = ForDbFull(db, full, [](auto kdb, auto kfull) {
          constexpr bool kFull = decltype(kfull)::value;
          return &BackwardStagedFusedLayerNormKernel<VEC, ITERS, decltype(kdb)::value, kFull,
                                                     /*kPadded=*/(VEC == 2 && !kFull)>;
        });
        return s;
      }
    }
    if constexpr (kCtas == 1 && sizeof(T) == 4 && VEC == 2 && ITERS == 4 && !kCenter &&
                  kWeightRow) {
      const int threads = layout.threads();
      if (!full && threads > kTwoVectorF32Threads &&
          (!kFused || (tensors < 3 && threads < kMaxThreads))) {
        s.kernel = db ? &BackwardStagedHalfRmsF32Kernel<true, kFused>
                      : &BackwardStagedHalfRmsF32Kernel<false, kFused>;
        return s;
      }
    }
    if constexpr (kCtas == 1 && sizeof(T) == 2 && VEC == 8 && ITERS == 2 && kWeightRow) {
      if (layout.threads() > kTargetThreads && layout.threads() <= kPairedThreads) {
        s.kernel = ForDbFull(db, full, [](auto kdb, auto kfull) {
          return &BackwardStagedPairedKernel<T, decltype(kdb)::value, kCenter,
                                             decltype(kfull)::value, kFused>;
        });
        return s;
      }
    }
    s.kernel = ForDbFull(db, full, [&](auto kdb, auto kfull) {
      constexpr bool kDb = decltype(kdb)::value, kFull = decltype(kfull)::value;
      if constexpr (kMayPad && kCtas == 1 && !kFull) {
        if (padded) {
          return &BackwardStagedKernel<T, VEC, ITERS, kDb, kCenter, 1, false, kFused, kWeightRow,
                                       /*kPadded=*/true>;
        }
      }
      return &BackwardStagedKernel<T, VEC, ITERS, kDb, kCenter, kCtas, kFull, kFused, kWeightRow>;
    });
    return s;
  };
  constexpr std::true_type kWithWeightRow{};
  // Whether a fused launch's stages (one tensor more where it has y) leave an
  // SM the blocks the chunk plan runs; its residual gradient goes to registers
  // (BackwardStagedKernel). Comparing with the plain launch's shared memory
  // alone had kept 16-bit rows of 8192 and fp32 rows of 4097-5120 with y on
  // the generic kernel, though registers hold their plan to one block per SM;
  // staged (gpu-2026-11-25-round16.md, x + y form): bf16 16384 x 8192 551.5 ->
  // 457.3 us, 4096 x 8192 155.9 -> 128.1; fp32 4096 x 5000 200.4 -> 159.4.
  auto fused_stages_fit = [&](auto ctas) {
    constexpr int kCtas = decltype(ctas)::value;
    return residual_as_stored &&
           StagedBlocksPerSm(staged_bytes(ctas, tensors), kCtas) >= plan_blocks;
  };
  if (layout.ctas_per_row > 1) {
    // ChooseRowLayout splits only rows of four 16-byte vectors per thread
    // (rows of no whole vector are realigned or stream, RealignedWidth) into
    // clusters of kClusterCtas, kWideClusterCtas or kWidestClusterCtas blocks
    // holding one row each.
    if constexpr (ITERS == 4 && VEC * sizeof(T) == 16) {
      if (layout.rows_per_cta != 1) return s;
      auto cluster = [&](auto ctas) {
        constexpr int kCtas = decltype(ctas)::value;
        if (plain) return staged(ctas, std::false_type{}, kWithWeightRow);
        // Fused rows staged where they fit (fused_stages_fit); otherwise the
        // generic instance, dw / db accumulators [2][block's columns] fp32.
        // Measured on the H100 (gpu-2026-11-25-round15.md), add + RMSNorm
        // backward of a saved p: bf16 4096 x 20000 512 -> 314 us, 1024 x 65536
        // 361 -> 211; fp32 8192 x 16384 857 -> 724, 1024 x 65536 492 -> 379.
        if (fused_stages_fit(ctas)) return staged(ctas, std::true_type{}, kWithWeightRow);
        // 16-bit rows with y whose stages leave no room for scale * w (a
        // block's share past about 14300 elements) keep w as stored instead.
        // Measured on the H200 (gpu-2026-11-29-round52.md), x + y form,
        // against the register kernel with w loaded from global memory at
        // each use (table 1):
        // bf16 2048 x 32768 383.5 -> 232.3 us, 1024 x 65536 406.7 -> 265.1;
        // fp16 2048 x 32768 284.8 -> 249.7; then w as stored against that
        // (table 2): 232.4 -> 179.5, 265.7 -> 186.3; 249.9 -> 179.8.
        if constexpr (sizeof(T) == 2 && VEC == 8) {
          if (residual_as_stored &&
              StagedBlocksPerSm(staged_bytes(ctas, tensors, false), kCtas) >= plan_blocks) {
            return staged(ctas, std::true_type{}, std::false_type{});
          }
        }
        return RegisterClusterStageOne<T, VEC, ITERS, kCenter, kCtas, false>(layout, hidden,
                                                                             partials);
      };
      if (layout.ctas_per_row == kClusterCtas) return cluster(IntConst<kClusterCtas>{});
      if (layout.ctas_per_row == kWideClusterCtas) return cluster(IntConst<kWideClusterCtas>{});
      if constexpr (sizeof(T) == 4) {  // 16-bit rows fit a cluster of 4
        if (layout.ctas_per_row == kWidestClusterCtas) {
          return cluster(IntConst<kWidestClusterCtas>{});
        }
      }
    }
    return s;
  }
  // Rows of one block of full or half vectors (the latter at most 4 per
  // thread: ChooseRowLayout): plain ones are staged (fp32 rows of one block
  // that are not held take 2 vectors per thread up to 384 threads, 4 beyond:
  // TwoVectorBackwardRow, row_layout.h), fused ones where their stages fit
  // (fused_stages_fit).
  // Fused, measured on the H100 against the generic register kernel
  // (gpu-2026-11-25-round15.md), add + RMSNorm backward of a saved p (no y):
  // bf16 32768 x 4096 486 -> 368 us, 8192 x 16384 636 -> 373, 65536 x 1024
  // 250 -> 192, 4096 x 5000 125 -> 98; fp32 32768 x 4096 811 -> 726, 65536 x
  // 1024 414 -> 369, 4096 x 5000 174 -> 133. With x and y, bf16 32768 x 4096
  // 543 -> 458 us.
  if constexpr (VEC * sizeof(T) == 16 || (VEC * sizeof(T) == 8 && ITERS <= 4)) {
    if (plain) return staged(IntConst<1>{}, std::false_type{}, kWithWeightRow);
    if (fused_stages_fit(IntConst<1>{})) {
      return staged(IntConst<1>{}, std::true_type{}, kWithWeightRow);
    }
  }
  // 16-bit rows of 4 vectors with y whose stages do not fit next to scale * w
  // (hidden 14337-16384: 256 KB at 16384) keep w as stored. Measured, x + y
  // form: on the H100 (gpu-2026-11-25-round16.md) against the generic kernel,
  // with w loaded from global memory at each use: bf16 8192 x 16384 756.0 ->
  // 481.2 us, 4096 x 16384 386.3 -> 257.1, 4096 x 15000 390.4 -> 330.3; on
  // the H200, w as stored against that (gpu-2026-11-29-round52.md, table 2):
  // 8192 x 16384 423.6 -> 332.2, 4096 x 15000 279.1 -> 199.5.
  if constexpr (sizeof(T) == 2 && VEC == 8 && ITERS == 4) {
    const size_t bytes = staged_bytes(IntConst<1>{}, tensors, /*weight_row=*/false);
    if (!plain && residual_as_stored && StagedBlocksPerSm(bytes, 1) >= plan_blocks) {
      return staged(IntConst<1>{}, std::true_type{}, std::false_type{});
    }
  }
  // The generic register kernel: rows of single elements, and fused rows whose
  // stages do not fit. dw / db accumulators: [2][rows_per_cta][hidden] fp32.
  s.kernel = &BackwardKernel<T, VEC, ITERS, kCenter>;
  s.shared_bytes =
      partials ? 2 * sizeof(float) * static_cast<size_t>(layout.rows_per_cta) * hidden : 0;
  return s;
}

// The held layout's instance (HeldIters, row_layout.h): BackwardStagedHeldKernel,
// staged fused or not, in one block or (rows of more than
// kHeldClusterVectors) a cluster of two. Stages of x, y and dy take at
// most 192 KB: one block per SM. An fp32 launch's residual gradient is stored
// as fp32, so as T.
template <typename T, int ITERS, bool kCenter>
StageOne ChooseHeldStageOne(const RowLayout& layout, int64_t hidden, bool plain, bool db, bool full,
                            int tensors) {
  StageOne s;
  auto instance = [&](auto fused, auto ctas) {
    constexpr bool kFused = decltype(fused)::value;
    constexpr int kCtas = decltype(ctas)::value;
    s.cluster_ctas = kCtas;
    s.shared_bytes = StagedSharedBytes(
        1, LocalRowLength<16 / sizeof(T), ITERS, kCtas>(hidden, kCtas * kHeldRowThreads), sizeof(T),
        kFused ? tensors : 2, /*weight_elem_size=*/0);  // kKeep
    return ForDbFull(db, full, [](auto kdb, auto kfull) {
      return &BackwardStagedHeldKernel<T, ITERS, decltype(kdb)::value, kCenter,
                                       decltype(kfull)::value, kFused, kCtas>;
    });
  };
  auto with_ctas = [&](auto ctas) {
    s.kernel = plain ? instance(std::false_type{}, ctas) : instance(std::true_type{}, ctas);
    return s;
  };
  if (layout.ctas_per_row == kClusterCtas) return with_ctas(IntConst<kClusterCtas>{});
  return with_ctas(IntConst<1>{});
}

// Stage one's instance for a layout of register kernels (iters > 0).
// half_shift: the launch's staged rows all start on an 8-byte boundary
// (RowsStartOn8Bytes); the chunk plan's queries leave it false, so the plan
// (and with it dw / db's bits) never depends on it.
template <typename T, int VEC, int ITERS, bool kCenter>
StageOne ChooseStageOne(const RowLayout& layout, int64_t hidden, bool plain, bool db, bool full,
                        bool partials, int tensors, bool residual_as_stored, int plan_blocks,
                        bool half_shift = false) {
  if (layout.realigned) {  // staged where its rows fit, else the register kernel
    StageOne s;
    if constexpr (VEC * sizeof(T) == 16 &&
                  VEC * ITERS <= MaxElemsPerThread(Pass::kBackward, sizeof(T))) {
      // 16-bit rows at 4 vectors a thread keep w as stored (BackwardStagedKernel
      // with kWeightRow false) even where fp32 scale * w fits: a
      // vector's w is one 16-byte shared-memory read instead of two. Measured
      // on the H200 (gpu-2026-11-29-round52.md, table 3) against scale * w:
      // bf16 LayerNorm backward 2048 x 20001 185.8 -> 162.1 us, 1024 x 65535
      // 316.3 -> 254.4, add + RMSNorm 4096 x 10001 182.5 -> 153.8, 2048 x
      // 32767 247.7 -> 229.2; RMSNorm 0.98-1.01. Not at 2 vectors (add +
      // RMSNorm 8192 x 8191 203.7 -> 221.9), nor on aligned rows of 4 (table
      // 4: LayerNorm 4096 x 20000 216.6 -> 262.2). With y, their three stages
      // past about 14300 a block leave no room for scale * w anyway: staged
      // with w as stored, against the register kernel with w loaded from
      // global memory at each use (tables 1-2), bf16 4096 x 14501 453.1 ->
      // 284.4 us, 2048 x 32767 453.1 -> 280.5, 1024 x 65535 494.2 -> 315.9;
      // fp16 4096 x 14501 454.6 -> 242.1.
      constexpr bool kScaledRow = !(sizeof(T) == 2 && ITERS == 4);
      // Rows past one block (RealignedRow): the rounded row's cluster, each
      // block staging its runs of vectors (RealignedStagedRowLength).
      auto staged_bytes = [&](int ctas, int staged_tensors) {
        return StagedSharedBytes(layout.rows_per_cta,
                                 RealignedStagedRowLength(ITERS, layout.tpr, VEC, ctas), sizeof(T),
                                 staged_tensors, kScaledRow ? sizeof(float) : sizeof(T));
      };
      auto staged = [&](auto ctas, auto fused) {
        constexpr int kCtas = decltype(ctas)::value;
        constexpr bool kFused = decltype(fused)::value;
        s.cluster_ctas = kCtas;
        s.shared_bytes = staged_bytes(kCtas, kFused ? tensors : 2);
        // Two blocks per SM: the paired kernel.
        if constexpr (sizeof(T) == 2 && ITERS == 2 && kCtas == 1) {
          if (layout.threads() > kTargetThreads && layout.threads() <= kPairedThreads) {
            s.kernel = db ? &BackwardStagedPairedKernel<T, true, kCenter, false, kFused, true>
                          : &BackwardStagedPairedKernel<T, false, kCenter, false, kFused, true>;
            return s;
          }
        }
        auto realigned = [&](auto half, auto with_db) {
          return &BackwardStagedKernel<T, VEC, ITERS, decltype(with_db)::value, kCenter, kCtas,
                                       false, kFused, kScaledRow, false, /*kRealigned=*/true,
                                       decltype(half)::value>;
        };
        // Rows that start on 8 bytes copied as 8-byte halves (kHalfShift)
        // where that measured faster than the shifted copies, on the H200
        // (gpu-2026-12-01-round69.md, table 4): fp32 rows but fused ones with
        // y, 16-bit RMSNorm rows without bias or residual. bf16 RMSNorm 4096 x
        // 14500 137.7 -> 119.3 us, 8192 x 10004 202.0 -> 162.4, 4096 x 12004
        // 120.3 -> 93.7, 2048 x 16380 81.85 -> 76.85; fp32 RMSNorm / LayerNorm
        // / add + RMSNorm 8192 x 6002 182.9 -> 155.65 / 191.2 -> 159.6 / 218.15
        // -> 212.15, 8192 x 8190 228.55 -> 217.85 / 236.1 -> 234.85 / 286.25 ->
        // 280.25. Slower (table 2) on 16-bit LayerNorm and fused rows, whose
        // half instances spill or take more registers, with or without the
        // barriers (table 3): 4096 x 14500 LayerNorm 157.0 -> 228.2, add +
        // RMSNorm 182.7 -> 214.9; on fp32 fused rows with y 8192 x 8190 386.5
        // -> 411.1.
        if constexpr (kCtas == 1 && (sizeof(T) == 4 || (!kCenter && !kFused))) {
          if (half_shift && (sizeof(T) == 4 ? !kFused || tensors < 3 : !db)) {
            if constexpr (sizeof(T) == 4) {
              s.kernel = db ? realigned(std::true_type{}, std::true_type{})
                            : realigned(std::true_type{}, std::false_type{});
            } else {
              s.kernel = realigned(std::true_type{}, std::false_type{});
            }
            return s;
          }
        }
        s.kernel = db ? realigned(std::false_type{}, std::true_type{})
                      : realigned(std::false_type{}, std::false_type{});
        return s;
      };
      auto choose = [&](auto ctas) {
        constexpr int kCtas = decltype(ctas)::value;
        if (plain) return staged(ctas, std::false_type{});
        if (residual_as_stored &&
            StagedBlocksPerSm(staged_bytes(kCtas, tensors), kCtas) >= plan_blocks) {
          return staged(ctas, std::true_type{});
        }
        if constexpr (kCtas > 1) {
          return RegisterClusterStageOne<T, VEC, ITERS, kCenter, kCtas, /*kRealigned=*/true>(
              layout, hidden, partials);
        } else {
          s.kernel = &BackwardKernel<T, VEC, ITERS, kCenter, 1, /*kRealigned=*/true>;
          s.shared_bytes = partials ? 2 * sizeof(float) * static_cast<size_t>(layout.rows_per_cta) *
                                          static_cast<size_t>(RealignedRowLength(hidden, VEC))
                                    : 0;
          return s;
        }
      };
      if constexpr (ITERS == 4) {  // RealignedRow's clusters hold 4 vectors a thread
        if (layout.ctas_per_row == kClusterCtas) return choose(IntConst<kClusterCtas>{});
        if (layout.ctas_per_row == kWideClusterCtas) return choose(IntConst<kWideClusterCtas>{});
      }
      if (layout.ctas_per_row == 1) return choose(IntConst<1>{});
    }
    return s;
  }
  if constexpr (HeldIters(Pass::kBackward, static_cast<int>(sizeof(T)), VEC, ITERS)) {
    return ChooseHeldStageOne<T, ITERS, kCenter>(layout, hidden, plain, db, full, tensors);
  } else {
    return ChooseGeneralStageOne<T, VEC, ITERS, kCenter>(layout, hidden, plain, db, full, partials,
                                                         tensors, residual_as_stored, plan_blocks);
  }
}

// Blocks per SM that a chunk plan of at most max_chunks blocks per segment
// (MaxBackwardChunks) runs: 1 or 2.
inline int PlanBlocksPerSm(int max_chunks) {
  const int blocks = max_chunks / MultiprocessorCount();
  return blocks > 1 ? blocks : 1;
}

// Whether every row of the tensors a staged launch copies (x, dy, y) starts on
// an 8-byte boundary: the width a multiple of 8 bytes (16-bit hidden of 4 mod
// 8, fp32 of 2 mod 4, in buffers so aligned), so a realigned row's 16-byte
// vectors are each two aligned 8-byte halves (BackwardStagedRows' kHalfShift).
inline bool RowsStartOn8Bytes(const BackwardArgs& a, size_t elem_size) {
  auto on8 = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 8 == 0; };
  return a.hidden * static_cast<int64_t>(elem_size) % 8 == 0 && on8(a.x) && on8(a.grad_out) &&
         on8(a.y);
}

// Stage one for the layout's instance; kCenter: LayerNorm. plan_blocks:
// PlanBlocksPerSm of the layout's chunk plan.
template <typename T, bool kCenter>
cudaError_t LaunchBackwardRows(const BackwardArgs& a, const RowLayout& layout, int64_t chunk_rows,
                               bool partials, int plan_blocks, cudaStream_t stream) {
  return DispatchRowLayout<Pass::kBackward, T>(layout, [&](auto vec, auto iters) {
    constexpr int kVec = decltype(vec)::value;
    constexpr int kIters = decltype(iters)::value;
    if constexpr (kIters == 0) {
      BackwardStreamKernel<T, kVec><<<a.total_chunks, kMaxThreads, 0, stream>>>(a, chunk_rows);
      return cudaGetLastError();
    } else {
      const bool plain = a.y == nullptr && a.grad_residual_out == nullptr;
      const bool residual_as_stored = a.grad_residual_out == nullptr || a.residual_dtype == a.dtype;
      const StageOne s = ChooseStageOne<T, kVec, kIters, kCenter>(
          layout, a.hidden, plain, a.grad_bias != nullptr,
          FullRow(layout, a.hidden, a.norm.stat_len), partials, StagedTensors(a),
          residual_as_stored, plan_blocks, layout.realigned && RowsStartOn8Bytes(a, sizeof(T)));
      if (s.kernel == nullptr) return cudaErrorInvalidConfiguration;
      if (const cudaError_t err = AllowDynamicShared(s.kernel, s.shared_bytes);
          err != cudaSuccess) {
        return err;
      }
      if (s.cluster_ctas > 1) {
        return LaunchClusters(s.kernel, static_cast<unsigned>(a.total_chunks), s.cluster_ctas,
                              static_cast<unsigned>(layout.threads()), s.shared_bytes, stream, a,
                              layout.tpr, layout.rows_per_cta, chunk_rows);
      }
      s.kernel<<<a.total_chunks, layout.threads(), s.shared_bytes, stream>>>(
          a, layout.tpr, layout.rows_per_cta, chunk_rows);
      return cudaGetLastError();
    }
  });
}

// Blocks per SM that a one-block kernel of `threads` threads and `bytes` of
// dynamic shared memory holds.
template <typename Kernel>
cudaError_t OneBlockOccupancy(Kernel* kernel, int threads, size_t bytes, int* blocks) {
  if (const cudaError_t e = AllowDynamicShared(kernel, bytes); e != cudaSuccess) return e;
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, kernel, threads, bytes);
}

// Blocks of the layout's stage-one kernel the device holds at once, counted
// up to 2 per SM (see MaxBackwardChunks); for a cluster launch, in whole
// clusters (the SMs of a GPC need not divide into clusters of four: a plan of
// more clusters than fit would run a second wave). Taken from the plain
// LayerNorm-with-bias instance with bounds tests (the most registers) whatever
// the launch will run, so that a segment's chunk plan, and with it its dw / db
// bits, never depends on its neighbours or on the statistic's length.
template <typename T>
int BackwardResidentBlocks(const RowLayout& layout, int64_t hidden, int sms) {
  int blocks_per_sm = 0, clusters = 0;
  const cudaError_t err =
      DispatchRowLayout<Pass::kBackward, T>(layout, [&](auto vec, auto iters) -> cudaError_t {
        constexpr int kVec = decltype(vec)::value;
        constexpr int kIters = decltype(iters)::value;
        auto occupancy = [&](auto* kernel, size_t bytes, int ctas) {
          if (ctas == 1) return OneBlockOccupancy(kernel, layout.threads(), bytes, &blocks_per_sm);
          if (const cudaError_t e = AllowDynamicShared(kernel, bytes); e != cudaSuccess) return e;
          const ClusterLaunch launch(static_cast<unsigned>(sms), ctas,
                                     static_cast<unsigned>(layout.threads()), bytes, nullptr);
          return cudaOccupancyMaxActiveClusters(&clusters, kernel, &launch.config);
        };
        if constexpr (kIters == 0) {
          return occupancy(&BackwardStreamKernel<T, kVec>, 0, 1);
        } else {
          const StageOne s = ChooseStageOne<T, kVec, kIters, true>(
              layout, hidden, /*plain=*/true, /*db=*/true, /*full=*/false, /*partials=*/true,
              /*tensors=*/2, /*residual_as_stored=*/true, /*plan_blocks=*/1);
          if (s.kernel == nullptr) return cudaErrorInvalidConfiguration;
          return occupancy(s.kernel, s.shared_bytes, s.cluster_ctas);
        }
      });
  if (layout.ctas_per_row > 1) {
    const int most = 2 * sms / layout.ctas_per_row;  // clusters
    if (err != cudaSuccess || clusters < 1) return sms;
    return (clusters < most ? clusters : most) * layout.ctas_per_row;
  }
  if (err != cudaSuccess || blocks_per_sm < 1) return 2 * sms;
  return (blocks_per_sm < 2 ? 1 : 2) * sms;
}

// BackwardStageOneOccupancy (launch.h) for storage type T (dtype): of the
// instance a launch of buffers aligned to 16 bytes takes (for realigned rows
// a multiple of 8 bytes wide, the half-shift one).
template <typename T>
StageOneOccupancy StageOneOccupancyOf(DType dtype, int64_t hidden, const BackwardLaunchKind& kind) {
  const RowLayout layout =
      ChooseBackwardRowLayout(dtype, hidden, /*aligned=*/true, kind.center, kind.y);
  if (layout.iters == 0 || layout.ctas_per_row != 1) return {};
  const int plan_blocks = PlanBlocksPerSm(MaxBackwardChunks(dtype, hidden, layout));
  int blocks = 0;
  const cudaError_t err =
      DispatchRowLayout<Pass::kBackward, T>(layout, [&](auto vec, auto iters) -> cudaError_t {
        constexpr int kVec = decltype(vec)::value;
        constexpr int kIters = decltype(iters)::value;
        if constexpr (kIters == 0) {
          return cudaErrorInvalidConfiguration;
        } else {
          const bool plain = !kind.y && !kind.residual_grad;
          auto choose = [&](auto center) {
            return ChooseStageOne<T, kVec, kIters, decltype(center)::value>(
                layout, hidden, plain, kind.bias, kind.full, /*partials=*/true,
                /*tensors=*/kind.y ? 3 : 2, /*residual_as_stored=*/true, plan_blocks,
                /*half_shift=*/hidden * static_cast<int64_t>(sizeof(T)) % 8 == 0);
          };
          const StageOne s = kind.center ? choose(std::true_type{}) : choose(std::false_type{});
          if (s.kernel == nullptr || s.cluster_ctas != 1) return cudaErrorInvalidConfiguration;
          return OneBlockOccupancy(s.kernel, layout.threads(), s.shared_bytes, &blocks);
        }
      });
  if (err != cudaSuccess) return {-1, plan_blocks};
  return {blocks, plan_blocks};
}

template <typename T>
cudaError_t LaunchBackwardTyped(const BackwardArgs& in, cudaStream_t stream) {
  BackwardArgs a = in;
  const bool aligned =
      VectorAligned({a.x, a.y, a.grad_out, a.grad_residual_out, a.weight, a.grad_in});
  const RowLayout layout =
      ChooseBackwardRowLayout(a.dtype, a.hidden, aligned, a.norm.center, a.y != nullptr);
  const int max_chunks = MaxBackwardChunks(a.dtype, a.hidden, layout);
  int64_t chunk_rows = 0;  // of a batch without segment descriptors
  if (a.segments == nullptr) {
    a.num_segments = 1;
    a.total_chunks = BackwardChunks(a.rows, layout, max_chunks);
    chunk_rows = BackwardChunkRows(a.rows, a.total_chunks);
  }
  a.interleaved_chunks = InterleavedChunks(layout, a.hidden);
  const bool partials = a.grad_weight != nullptr || a.grad_bias != nullptr;
  if (partials && a.workspace == nullptr) return cudaErrorInvalidValue;
  if (!partials) a.workspace = nullptr;
  if (a.num_segments < 1 || a.num_segments > 65535) return cudaErrorInvalidValue;

  if (a.total_chunks > 0) {
    const int plan_blocks = PlanBlocksPerSm(max_chunks);
    const cudaError_t err =
        a.norm.center
            ? LaunchBackwardRows<T, true>(a, layout, chunk_rows, partials, plan_blocks, stream)
            : LaunchBackwardRows<T, false>(a, layout, chunk_rows, partials, plan_blocks, stream);
    if (err != cudaSuccess) return err;
  }
  if (partials) {
    // A programmatic dependent of stage one, so its launch overlaps stage
    // one's tail. Measured on the H100 (gpu-2026-11-25-round17.md, call 3)
    // against a plain launch: 1 x 4096 backward 10.5 -> 8.6 us (bf16 RMSNorm),
    // 256 x 4096 14.3 -> 12.2, 4096 x 1024 20.7 -> 18.4, 4096 x 5000 fp32 add +
    // RMSNorm 133.5 -> 131.3; 0.1-1.4 % at the largest shapes.
    const dim3 grid(static_cast<unsigned>((a.hidden + 31) / 32), a.num_segments, 2);
    return LaunchDependent(&ReducePartialsKernel<T>, grid, dim3(32, kReduceLanes), stream, a,
                           a.total_chunks);
  }
  return cudaSuccess;
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_BACKWARD_LAUNCH_CUH_
