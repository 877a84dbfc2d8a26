// How a row is spread over threads: the one place that turns (pass, dtype,
// hidden, alignment) into a launch shape. Never looks at the row count, so a
// row's arithmetic (and hence its bits) does not depend on the batch it is in.
//
// A row of `hidden` elements is cut into vectors of `vec` elements; a group of
// `tpr` consecutive threads owns one row, thread t holding vectors
// t, t + tpr, t + 2 tpr, ... (`iters` of them) in registers, so the row is read
// from memory once. A block holds `rows_per_cta` such groups. A backward row too
// long for one block's registers is split over a cluster of `ctas_per_row`
// blocks (thread t of the row is thread t % (tpr / ctas_per_row) of block
// t / (tpr / ctas_per_row)), which reduce through distributed shared memory.
// Rows too long for that go to the streaming kernels (iters == 0): one block
// per row, making several passes over the row (the later ones served from L2).
#ifndef NORMSERVE_KERNELS_CUDA_ROW_LAYOUT_H_
#define NORMSERVE_KERNELS_CUDA_ROW_LAYOUT_H_

#include <cstdint>
#include <initializer_list>

#include "normserve/kernels/dtype.h"

// Host code that the kernels also call (this header is compiled by the host
// compiler too: the layout tests run without CUDA).
#ifdef __CUDACC__
#define NORMSERVE_HOST_DEVICE __host__ __device__
#else
#define NORMSERVE_HOST_DEVICE
#endif

namespace normserve::kernels::cuda {

enum class Pass { kForward, kBackward };

// The register kernels' largest block, and the streaming kernels' block.
inline constexpr int kMaxThreads = 512;
// Threads a block aims for when rows are short (several rows per block); the
// forward launcher narrows blocks that are not latency-bound (forward_launch.cuh).
inline constexpr int kTargetThreads = 256;
// Threads of a forward block in launches that are not latency-bound: rows of
// fewer threads share one (LaunchForwardRegisters), rows of more have their own.
inline constexpr int kForwardBlockThreads = 128;
// Blocks of a cluster that splits one backward row: kClusterCtas, or
// kWideClusterCtas for rows too long for that, or kWidestClusterCtas (fp32
// rows only; 8: the largest portable cluster).
inline constexpr int kClusterCtas = 2;
inline constexpr int kWideClusterCtas = 4;
inline constexpr int kWidestClusterCtas = 8;
// Register kernels exist for iters in {1, 2, 4, 8} with vec * iters at most
// this many elements per thread and row (backward: 64 bytes of each stored
// tensor, which a prefetched row doubles).
constexpr int MaxElemsPerThread(Pass pass, int elem_size) {
  return pass == Pass::kForward ? 64 : 64 / elem_size;
}

// fp32 backward rows of 1025-4096 full vectors (hidden 4100-16384): one block
// of kHeldRowThreads threads per row (rows of more than kHeldClusterVectors: a
// cluster of two), the fewest vectors each that cover it (5 to 8: HeldIters),
// a block per SM whose registers hold the row between the passes
// (BackwardStagedHeldKernel, backward_staged.cuh): fewer threads of more
// vectors than the general rule below (4 vectors in up to 512 threads, or a
// cluster of two such blocks), and a thread count the kernel knows at compile
// time. Taken in three steps. First rows of 1025-1536 vectors (hidden
// 4100-6144), measured on the H100 (bench/results/gpu-2026-11-25-round20.md,
// call 1): fp32 4096 x 5000 add + RMSNorm backward 127.1 -> 121.8 us, RMSNorm
// 98.6 -> 94.6, LayerNorm 100.7 -> 95.8; 4096 x 4200 113.1 -> 105.2; 32768 x
// 5000 893.3 -> 879.8. Then rows of 1793-2048 vectors (hidden 7172-8192) at 8
// vectors per thread, and rows of 3585-4096 (hidden 14340-16384) over a
// cluster of two such blocks (kHeldClusterVectors), as the peers' fastest
// fp32 backward runs them (Quack, 256 threads of 8 vectors, 223-244
// registers; ours 204-255, LayerNorm with a bias fused over a cluster spills
// 4-16 bytes). Measured
// (bench/results/gpu-2026-11-27-round33.md, calls 3-6), add + RMSNorm
// backward: H200 8192 x 16384 516.3 -> 511.7 us, 4096 x 8192 138.8 -> 135.8,
// 2048 x 15000 175.5 -> 135.2; H100 8192 x 16384 721.0 -> 718.1, 2048 x 15000
// 205.0 -> 184.0; LayerNorm 1024 x 8192 40.1 -> 36.3 (H200), 51.05 -> 46.0
// (H100). No shape slower by more than 0.5 %. Then every row between (7
// vectors; clusters of 5-7 for rows of 2049-3584 vectors, hidden 8196-14336),
// which had taken 4 vectors in up to 512 threads or a cluster of two such
// blocks (bench/results/gpu-2026-11-27-round34.md, calls 1 and 3), add +
// RMSNorm backward: 2048 x 10000 H200 131.2 -> 102.5 us, H100 152.8 -> 129.5;
// 4096 x 6500 131.2 -> 117.2, 164.1 -> 158.7; 2048 x 14336 124.4 -> 121.3,
// 170.7 -> 168.3. No shape slower.
inline constexpr int kHeldRowThreads = 256;
constexpr bool HeldIters(Pass pass, int elem_size, int vec, int iters) {
  return pass == Pass::kBackward && elem_size == 4 && vec == 4 && iters >= 5 && iters <= 8;
}
// Held rows of more than this many vectors are split over a cluster of two.
inline constexpr int64_t kHeldClusterVectors = 8 * kHeldRowThreads;

struct RowLayout {
  int vec = 1;             // elements per vector access: 16 or 8 bytes' worth, or 1
  int iters = 0;           // vectors per thread and row; 0 = streaming kernel
  int tpr = 1;             // threads per row: a power of two <= 32, or a multiple of 32
  int rows_per_cta = 1;    // row groups per block
  int ctas_per_row = 1;    // > 1: one row per cluster of this many blocks
  int spread = 0;          // forward rows spread over 2^spread times the threads: SpreadLayout
  bool realigned = false;  // vectors loaded from rows that start anywhere: RealignedRow
  int threads() const { return tpr * rows_per_cta / ctas_per_row; }
  bool streaming() const { return iters == 0; }
};

// Vectors per thread for a row of `vectors` vectors over `tpr` threads: the
// smallest power of two that covers it.
inline int ItersFor(int64_t vectors, int64_t tpr) {
  int iters = 1;
  while (tpr * iters < vectors) iters *= 2;
  return iters;
}

// Threads per row for `vectors` vectors at `preferred` vectors per thread: a
// power of two up to a warp, whole warps beyond.
inline int64_t ThreadsFor(int64_t vectors, int preferred) {
  const int64_t tpr = (vectors + preferred - 1) / preferred;
  if (tpr > 32) return (tpr + 31) / 32 * 32;
  int64_t pow2 = 1;
  while (pow2 < tpr) pow2 *= 2;
  return pow2;
}

// Backward rows of 16-byte vectors that 2 vectors per thread spread over at
// most kMaxThreads threads (16-bit hidden up to 8192) or, fp32, at most
// kTwoVectorF32Threads (hidden up to 3072; longer fp32 rows take 4 up to 4096,
// then are held, above) take 2 vectors per thread rather than 4, and their
// plain launches are staged (ChooseGeneralStageOne, backward_launch.cuh).
// 16-bit rows: see ChooseRowLayout. fp32 rows (Quack runs rows of 1024 at 128
// threads a row): at 2 vectors the register kernel lost (call 1, H200 RMSNorm
// 65536 x 1024 206.9 -> 249.9 us), the staged one, which keeps the next row in
// flight in shared memory, won. Measured against 4 vectors (register kernel;
// staged on the H200 at hidden 3588-4096) in
// bench/results/gpu-2026-11-27-round35.md, RMSNorm / LayerNorm / add + RMSNorm
// backward, H200 (call 4): 65536 x 1024 209.6 -> 197.6 / 216.9 -> 200.4 /
// 268.5 -> 259.3 us; 8192 x 3000 96.2 -> 83.8 / 105.5 -> 86.6 / 115.1 ->
// 107.8; 65536 x 64 23.7 -> 21.1; H100 (call 5): 65536 x 1024 286.9 -> 278.6
// / 288.0 -> 278.1 / 366.5 -> 364.1; 8192 x 3000 117.1 -> 114.3 / 123.0 ->
// 117.2 / 148.5 -> 145.9. Slower on the H200: add + RMSNorm backward of a
// saved p (no y) at hidden 500-2000 that 2 vectors do not fill (65536 x 1000
// 263 -> 289 us, 65536 x 2000 506 -> 569: gpu-2026-11-27-round36.md, call 3;
// H100 65536 x 1000 unchanged), not understood (80 registers, two blocks per
// SM; loading the residual gradient before the staged row's wait changed
// nothing: round36.md, call 10).
// Why fp32 stops at 384 threads: the fused instances at 2 vectors take 80-98
// registers, so a block of more than 384 threads (85 or more at 384: fused
// LayerNorm) holds one block per SM where the chunk plan, sized from the plain
// instances (at most 64), runs two: a second wave. Measured (round36.md),
// 384 against 512 at hidden 3073-4096, H200 (call 10): add + RMSNorm backward
// of a saved p 16384 x 4000 313.6 -> 262.1 us, with x and y 344.6 -> 324.5,
// fused LayerNorm 322.9 -> 271.5, RMSNorm 202.3 -> 203.7, LayerNorm 206.9 ->
// 208.1; H100 (call 11): 16384 x 3500 371.0 -> 334.1, fused LayerNorm 376.6 ->
// 342.5; 16384 x 4000 380.0 -> 363.3, 389.1 -> 371.9; plain and rows of 4096
// within 1 %. Fused LayerNorm rows of 2049-3072 still run one block per SM:
// 256 threads there (4 vectors) measured faster for it (32768 x 3000 647.8 ->
// 556.4 us on the H100, 572.9 -> 456.6 on the H200) but slower for add +
// RMSNorm (H200 8192 x 3000 108.2 -> 118.6, 32768 x 3000 387.6 -> 406.6; H100
// 0.1-1.6 %) and mostly for the plain launches (-1.4 to +2.5 %), so it was not
// taken.
inline constexpr int kTwoVectorF32Threads = 384;
inline bool TwoVectorBackwardRow(int vec, int elem_size, int64_t vectors) {
  return vec * elem_size == 16 &&
         ThreadsFor(vectors, 2) <= (elem_size == 4 ? kTwoVectorF32Threads : kMaxThreads);
}

// fp32 forward rows of 1024-8192 elements (16-byte vectors) that fewer vectors
// per thread than 8 fill exactly: 2 per thread up to 2048 elements (128-256
// threads), 4 beyond (192-512 threads). More threads with fewer loads each, as
// the peers' fastest fp32 kernels run these rows. Measured against 8 per thread
// (bench/results/gpu-2026-11-26-round24.md): on the H100 (call 5), RMSNorm
// 65536 x 1024 183.4 -> 182.5 us, LayerNorm 4096 x 1024 18.2 -> 16.8, add +
// RMSNorm 32768 x 4096 721.2 -> 716.4, LayerNorm 16384 x 8192 360.5 -> 358.5,
// 4096 x 5120 62.3 -> 61.5; RMSNorm 4096 x 4096 49.8 -> 50.1 the one loss of
// a large launch, and launches of 265-528 rows of 2048, no longer
// latency-bound at 256 threads a row (LatencyBound, forward_launch.cuh):
// 400 x 2048 RMSNorm 6.7 -> 6.8 us. On the H200 (call 13), RMSNorm 65536 x
// 1024 135.1 -> 130.0, LayerNorm 32768 x 4096 266.7 -> 263.9, RMSNorm 16384 x
// 8192 265.9 -> 261.2; there fused fp32 rows lost (add + RMSNorm 32768 x 4096
// 520.2 -> 524.0, 16384 x 2048 133.8 -> 135.7), which the H100 ran faster.
// Rows these do not fill keep 8 (H200 LayerNorm 4096 x 5000 at 320 threads of
// 4: 46.8 -> 48.3 us, call 1).
inline int FewerForwardVectors(int64_t hidden, int64_t vectors) {
  if (hidden < 1024 || hidden > 8192) return 0;
  const int fewer = hidden <= 2048 ? 2 : 4;
  return ThreadsFor(vectors, fewer) * fewer == vectors ? fewer : 0;
}

// Forward rows of no whole 16-byte vector (vec 1: hidden not a multiple of 16
// bytes' worth of elements, or unaligned buffers) longer than 8 values per
// thread of a block: 16-bit ones are held at 16 or 32 values per thread where
// they fill more than three quarters of them, rather than streamed (read
// twice). (Backward rows of no whole vector are realigned: RealignedRow.)
// Measured on the H200 against streaming (bench/results/gpu-2026-11-27-
// round41.md, call 4; the H100 alike, call 5), bf16 RMSNorm 8192 x 8191 204.1
// -> 153.6 us, 4096 x 14500 181.6 -> 164.5, 2048 x 16383 112.2 -> 92.3,
// LayerNorm 235.1 -> 179.6, 215.5 -> 198.8, 129.9 -> 111.8; but 4096 x 10001
// (61 % of the values) 129.7 -> 140.6 and fp32 rows (8192 x 8191 LayerNorm
// 199.6 -> 274.1) slower.
inline bool HeldScalarForwardRow(Pass pass, DType dtype, int vec, int64_t vectors, int iters) {
  return pass == Pass::kForward && vec == 1 && DTypeSize(dtype) == 2 && iters <= 32 &&
         4 * vectors > 3 * int64_t{iters} * kMaxThreads;
}

// Elements per vector access of rows of `hidden` elements in buffers that are
// all 16-byte aligned (`aligned`): a 16-byte vector where the width is a
// multiple of one, else an 8-byte vector (a half vector: 16-bit widths of
// 4 mod 8, fp32 widths of 2 mod 4) where it is a multiple of that, else 1.
// Rows of half vectors take none of the rules below for 16-byte vectors (held,
// two vectors per thread, fewer forward vectors); backward ones are staged
// (BackwardStagedKernel copies 8-byte vectors too), forward ones run the
// generic instances (the held and canonical paths move 16-byte vectors) but
// plain rows of 4 per thread (16-bit) or 16 (fp32), which LeanRowKernel's
// bounds-tested instances run (LeanHalfInstance, forward_instances.cuh); 16-bit
// ones packed where the launch has no y and at 4 per thread, fp32 ones up to
// 16 per thread (below).
// They had run as rows of single elements (vec 1); measured on the H100
// (bench/results/gpu-2026-11-28-round43.md, call 3), vec 1 -> half vectors:
// bf16 4096 x 14500 LayerNorm backward 590.8 -> 174.6 us, add + RMSNorm 699.5
// -> 229.9, RMSNorm forward 176.2 -> 146.8; 8192 x 2052 RMSNorm backward
// 166.1 -> 55.9; fp32 8192 x 8190 RMSNorm backward 468.6 -> 344.9, add +
// RMSNorm forward 555.8 -> 375.4; 2048 x 20002 LayerNorm backward 886.9 ->
// 276.2. Slower: fp32 8192 x 6002 RMSNorm backward 283.5 -> 309.2, LayerNorm
// 286.9 -> 348.3 (add + RMSNorm 372.3 -> 346.0).
inline int VectorElements(DType dtype, int64_t hidden, bool aligned) {
  const int elem = static_cast<int>(DTypeSize(dtype));
  const int full_vec = 16 / elem;
  if (!aligned) return 1;
  if (hidden % full_vec == 0) return full_vec;
  return hidden % (full_vec / 2) == 0 ? full_vec / 2 : 1;
}

inline RowLayout GeneralRowLayout(Pass pass, DType dtype, int64_t hidden, bool aligned);

// Backward rows realigned (RealignedRow): those of no whole vector (vec 1),
// and rows of half vectors that one block does not hold at 4 per thread
// (16-bit hidden of 4 mod 8 past 8192, fp32 of 2 mod 4 past 4096), which half
// vectors would split over a cluster. 16-bit ones had: measured on the H200
// against that (bench/results/gpu-2026-12-01-round68.md, table 1), bf16 add
// + RMSNorm backward 8192 x 8196 352.2 -> 237.3 us, 4096 x 16388 402.1 ->
// 259.6, 8192 x 10004 362.8 -> 268.6, 2048 x 20004 220.4 -> 149.4, 4096 x
// 14500 211.3 -> 189.0; RMSNorm 4096 x 16388 244.6 -> 205.1, LayerNorm 8192 x
// 8196 246.0 -> 216.9. Slower: LayerNorm 1024 x 32764 110.9 -> 118.2, 2048 x
// 20004 155.4 -> 156.5; add + RMSNorm of x and y 4096 x 14500 237.1 -> 261.2
// (realigned stores since: 237.9, realigned.cuh), 4096 x 12004 211.4 ->
// 214.0. In one block
// (at most 4 per thread, padded: ChooseGeneralStageOne) half vectors measured
// faster than realigned on the H200 (bench/results/gpu-2026-11-29-round50.md,
// table 3): 16384 x 1002 RMSNorm / LayerNorm 59.8 / 63.0 against 67.5 /
// 76.1 us, 4096 x 4090 add + RMSNorm with y 98.8 against 109.1.
inline bool RealignedWidth(DType dtype, int64_t hidden, bool aligned) {
  const int vec = VectorElements(dtype, hidden, aligned);
  if (vec == 1) return true;
  if (vec == 16 / static_cast<int>(DTypeSize(dtype))) return false;
  const RowLayout half = GeneralRowLayout(Pass::kBackward, dtype, hidden, aligned);
  return half.streaming() || half.ctas_per_row > 1;
}

// Backward rows of RealignedWidth (16-bit: odd widths, or buffers not
// 16-byte aligned): the layout of the row rounded up to whole vectors,
// realigned (realigned.cuh: each vector shifted into place from the two
// aligned words around it), rather than one 2-byte access per thread and step. A thread adds the
// same elements wherever the row starts, so its bits do not depend on its place in the batch. Stage
// one stages the rows' aligned 16-byte words in shared memory
// (BackwardStagedRows<..., kRealigned>) and falls back to the register kernel
// (BackwardKernel<..., kRealigned>, the row's first and last vectors read
// element by element) only for fused rows that do not fit. Measured on the
// H200 against 8fe32d7 (vec 1 for blocks of 257-447 threads, the register
// kernel realigned otherwise; bench/results/gpu-2026-11-28-round46.md, call
// 1), RMSNorm / LayerNorm / add + RMSNorm backward bf16: 16384 x 4097 463.1
// -> 212.3 / 478.2 -> 251.8 / 549.0 -> 301.4 us; 8192 x 6001 331.5 -> 178.9 /
// 340.4 -> 193.2 / 388.7 -> 289.3; 4096 x 10001 273.3 -> 142.0 / 282.8 ->
// 160.7 / 328.7 -> 244.5; realigned before: 8192 x 8191 379.8 -> 219.3,
// 16384 x 1001 96.5 -> 54.8, 2048 x 16383 209.1 -> 119.1.
// Rows past one block take the rounded row's cluster (2 or 4 blocks), staged
// as well: each block stages its runs of vectors as their words plus one
// (RealignedStagedRowLength). Measured on the H200 against e561953 (the
// register kernel over the cluster past 20000, single elements streamed at
// 16385-20000; bench/results/gpu-2026-11-28-round48.md, call 1), bf16
// RMSNorm / LayerNorm / add + RMSNorm: 2048 x 20001 281.2 -> 144.0 / 309.0
// -> 190.3 / 346.6 -> 234.8 us; 2048 x 32767 347.1 -> 211.5 / 388.6 ->
// 288.7 / 413.8 -> 313.7; 1024 x 65535 374.0 -> 232.2 / 421.8 -> 316.1 /
// 456.5 -> 324.2; 4096 x 16385 438.6 -> 243.4 / 927.8 -> 320.3 / 566.8 ->
// 398.8. Fused rows of x and y that do not fit (32767 and wider) keep the
// register kernel over the cluster.
// fp32 rows (RealignedWidth) take the rounded row's general layout, not a
// held one (HeldIters: its kernel moves aligned rows), up to a cluster of
// four (the realigned instances'); wider ones (past 32768) stream. Measured
// on the H200 against e9a9fcf (half vectors over a cluster, single elements
// over a cluster of eight or streamed; bench/results/gpu-2026-11-29-
// round50.md, table 3), RMSNorm / LayerNorm / add + RMSNorm / the same with
// y backward: 8192 x 8190 321.9 -> 228.0 / 367.5 -> 236.5 / 362.0 -> 286.1
// / 391.3 -> 386.4 us; 8192 x 8191 357.9 -> 247.8 / 366.8 -> 254.4 / 447.4
// -> 317.6 / 561.0 -> 426.0; 4096 x 14501 524.9 -> 203.2 / 582.5 -> 254.5 /
// 650.9 -> 284.9 / 684.2 -> 403.4; 16384 x 4097 add + RMSNorm 392.8 ->
// 351.5, with y 436.0 -> 433.5 (the closest).
inline RowLayout RealignedRow(DType dtype, int64_t hidden) {
  const int full_vec = 16 / static_cast<int>(DTypeSize(dtype));
  const int64_t rounded = (hidden + full_vec - 1) / full_vec * full_vec;
  RowLayout layout = GeneralRowLayout(Pass::kBackward, dtype, rounded, /*aligned=*/true);
  layout.realigned = layout.iters > 0 && layout.ctas_per_row <= kWideClusterCtas;
  return layout;
}

inline RowLayout ChooseRowLayout(Pass pass, DType dtype, int64_t hidden, bool aligned) {
  if (pass == Pass::kBackward && RealignedWidth(dtype, hidden, aligned)) {
    if (const RowLayout realigned = RealignedRow(dtype, hidden); realigned.realigned) {
      return realigned;
    }
  }
  const int elem = static_cast<int>(DTypeSize(dtype));
  const int vec = VectorElements(dtype, hidden, aligned);
  const int64_t vectors = (hidden + vec - 1) / vec;
  if (pass == Pass::kBackward && vec == 16 / elem && elem == 4) {  // fp32: held (HeldIters)
    if (vectors > 4 * kHeldRowThreads && vectors <= kClusterCtas * kHeldClusterVectors) {
      RowLayout layout;
      layout.vec = vec;
      layout.ctas_per_row = vectors > kHeldClusterVectors ? kClusterCtas : 1;
      layout.tpr = kHeldRowThreads * layout.ctas_per_row;
      layout.iters = static_cast<int>((vectors + layout.tpr - 1) / layout.tpr);
      return layout;
    }
  }
  return GeneralRowLayout(pass, dtype, hidden, aligned);
}

// A backward launch's layout: ChooseRowLayout's, but fp32 LayerNorm (center)
// rows of half vectors that 4 per thread spread over more than
// kTwoVectorF32Threads (hidden 3074-4094 of 2 mod 4) in launches without y
// take the rounded row realigned (RealignedRow): 16-byte vectors over 224-256
// threads instead of 8-byte ones over 385-512, in launches latency-bound per
// row. Measured on the H200 (bench/results/gpu-2026-12-02-round73.md, table
// 3), LayerNorm backward 16384 x 3074 189.75 -> 167.2 us, 16384 x 3586 205.3
// -> 195.35, 16384 x 4094 219.95 -> 218.1, 32768 x 3586 394.05 -> 375.15;
// add + LayerNorm of a saved p 263.5 -> 227.3, 275.35 -> 254.85, 287.2 ->
// 288.9 (the one loss), 527.2 -> 492.9. With y (x + y form) realigned rows
// were slower (table 2: 16384 x 3586 297.15 -> 331.8, 16384 x 4094 339.1 ->
// 369.0), so those keep half vectors, and the CUDA backend never launches
// segments with y and without together: a row's layout, and so its bits,
// depends on its own request, never on its neighbours. RMSNorm rows keep half
// vectors (BackwardStagedHalfRmsF32Kernel; realigned, add + RMSNorm was slower:
// gpu-2026-12-02-round70.md, table 1).
inline RowLayout ChooseBackwardRowLayout(DType dtype, int64_t hidden, bool aligned, bool center,
                                         bool y) {
  const RowLayout layout = ChooseRowLayout(Pass::kBackward, dtype, hidden, aligned);
  if (center && !y && DTypeSize(dtype) == 4 && layout.vec == 2 && !layout.realigned &&
      layout.ctas_per_row == 1 && layout.threads() > kTwoVectorF32Threads) {
    if (const RowLayout realigned = RealignedRow(dtype, hidden); realigned.realigned) {
      return realigned;
    }
  }
  return layout;
}

// ChooseRowLayout but for its realigned and held rows.
inline RowLayout GeneralRowLayout(Pass pass, DType dtype, int64_t hidden, bool aligned) {
  RowLayout layout;
  const int elem = static_cast<int>(DTypeSize(dtype));
  const int full_vec = 16 / elem;
  layout.vec = VectorElements(dtype, hidden, aligned);
  const bool wide = layout.vec == full_vec;
  const int64_t vectors = (hidden + layout.vec - 1) / layout.vec;
  // Preferred vectors per thread: enough independent 16-byte loads in flight,
  // few enough registers for several blocks per SM.
  // Backward keeps dw / db in shared memory but holds x, y, dy as stored plus a
  // prefetched next row, so its fp32 rows get fewer elements per thread.
  // Measured on the H100 (bench/results/gpu-*.md): 16-bit rows with 4 vectors
  // of 8 per thread in forward beat 8 vectors. fp32 forward rows take 8, but
  // for the rows of 1024-8192 elements that fewer fill (FewerForwardVectors).
  // Three exceptions, measured on the H100:
  //  - forward, 16-bit rows (vec 8): a row that 4 vectors per thread would
  //    spread over more than a kMaxThreads block (hidden > 16384) takes 8
  //    vectors per thread instead.
  //    Up to 16384, 4 vectors win since plain launches hold the row packed
  //    (8192 x 16384 RMSNorm 187 -> 186 us, add + RMSNorm 397 -> 391 us,
  //    bench/results/gpu-2026-11-23-round6.md; before packing, 8 vectors won
  //    at 16384: round2.md);
  //  - backward: a row of full vectors that 2 vectors per thread spread over at
  //    most kMaxThreads threads (TwoVectorBackwardRow; fp32 rows: up to
  //    kTwoVectorF32Threads) takes 2 vectors per thread rather than 4. 16-bit
  //    rows (hidden <= 8192): at 4 vectors the dw and db registers of LayerNorm
  //    with a bias left the staged kernel spilling (round7.md: LayerNorm 65536
  //    x 1024 194 -> 157 us, 16384 x 8192 372 -> 316 us; RMSNorm 160 -> 155,
  //    309 -> 299 us; round2.md: 32768 x 4096 RMSNorm 434 -> 413 us; bf16 4096
  //    x 5000 LayerNorm 84.8 -> 72.0 us, RMSNorm 66.5 -> 66.3,
  //    gpu-2026-11-24-round12.md, where round 7 had measured RMSNorm 68 -> 74
  //    before the staged kernel's later changes). Longer rows split over a
  //    cluster at 2 vectors per thread measured slower than one block at 4
  //    (8192 x 16384: RMSNorm 312 -> 445 us, LayerNorm 380 -> 474 us,
  //    round7.md).
  //  - forward, 16-bit rows of half vectors take 4 per thread as rows of
  //    16-byte vectors do (8 where 4 spread over more than kMaxThreads).
  //    Measured on the H100 against 8 (bench/results/gpu-2026-11-28-
  //    round44.md, call 1), packed: bf16 RMSNorm 8192 x 4100 59.8 -> 54.6 us,
  //    8192 x 2052 35.7 -> 31.2, 4096 x 6004 44.6 -> 40.5, LayerNorm 8192 x
  //    2052 38.8 -> 35.8; add + RMSNorm 8192 x 4100 111.8 -> 98.1. fp16
  //    LayerNorm slower (8192 x 4100 62.7 -> 65.5, call 2: 62.8 -> 65.6 with
  //    the fused changes, 4096 x 6004 46.3 -> 47.2), fp16 RMSNorm faster
  //    (8192 x 4100 60.1 -> 55.4, 8192 x 2052 35.6 -> 31.7), so both take it.
  const bool vectors16 = layout.vec > 1 && elem == 2;  // 16-bit rows of 16- or 8-byte vectors
  int preferred = pass == Pass::kForward && !vectors16 ? 8 : 4;
  if (pass == Pass::kForward && vectors16 && ThreadsFor(vectors, 4) > kMaxThreads) {
    preferred = 8;
  }
  if (pass == Pass::kForward && wide && elem == 4) {
    if (const int fewer = FewerForwardVectors(hidden, vectors)) preferred = fewer;
  }
  if (pass == Pass::kBackward && TwoVectorBackwardRow(layout.vec, elem, vectors)) preferred = 2;
  // fp32 forward rows of half vectors longer than 8 per thread of a block
  // (hidden 8194-16382) hold up to 16 (32 values, as rows of 16-byte vectors
  // hold 8) rather than stream. Measured on the H100 against streaming
  // (bench/results/gpu-2026-11-28-round44.md, call 1; call 5 the same within
  // 1 %): RMSNorm 4096 x 12002 166.4 -> 150.6 us, 2048 x 16382 141.2 ->
  // 104.8, 8192 x 10002 251.2 -> 226.1; add + RMSNorm 412.7 -> 291.1, 295.0 ->
  // 202.2, 659.8 -> 476.2; LayerNorm 2048 x 16382 150.2 -> 123.0, 8192 x 10002
  // 256.8 -> 237.4, but 4096 x 12002 173.0 -> 176.6 (94-96 registers: one
  // 384-thread block per SM). Bounded to 64 registers (two blocks) every cell
  // was slower by a third (call 5: RMSNorm 4096 x 12002 207.5 us); plain rows
  // now take LeanRowKernel's instance of their width, 64 registers without a
  // bound (LeanHalfInstance, forward_instances.cuh). 16-bit
  // rows of half vectors at 16 per thread (hidden 16388-32764; call 2):
  // fused rows faster (bf16 add + RMSNorm 2048 x 20004 174.7 -> 139.7), plain
  // ones slower (RMSNorm 74.2 -> 88.3, LayerNorm 80.0 -> 101.7), 1024 x 32764
  // all faster (80.5 -> 66.8, 88.8 -> 83.9); not taken: a row's layout may not
  // depend on whether its launch has y. They stream.
  const bool half_f32_forward = pass == Pass::kForward && elem == 4 && layout.vec > 1 && !wide;
  if (half_f32_forward && ThreadsFor(vectors, preferred) > kMaxThreads) preferred = 16;
  int64_t tpr = ThreadsFor(vectors, preferred);
  const int max_elems = MaxElemsPerThread(pass, elem);
  const int iters = ItersFor(vectors, tpr < kMaxThreads ? tpr : kMaxThreads);
  // Backward rows of half vectors hold at most 4 per thread; longer ones are
  // realigned (RealignedWidth). At 8 the kernel spilled (BackwardKernel<bf16,
  // 4, 8> 84 bytes, <float, 2, 8> 160); measured on the H100 (bench/results/
  // gpu-2026-11-28-round43.md, call 1), 8 -> 4 per thread: bf16 4096 x 14500
  // LayerNorm backward 295.2 -> 263.4 us, RMSNorm 245.5 -> 236.3; fp32 8192 x
  // 8190 LayerNorm 533.4 -> 438.2, RMSNorm 562.5 -> 413.4.
  const int max_iters = pass == Pass::kBackward && layout.vec > 1 && !wide ? 4
                        : half_f32_forward                                 ? 16
                                                                           : 8;
  const bool fits =
      (iters <= max_iters || HeldScalarForwardRow(pass, dtype, layout.vec, vectors, iters)) &&
      layout.vec * iters <= max_elems;
  // Backward rows one block cannot hold in registers (16-bit rows of
  // 16385-32768; fp32 rows up to 16384 are held, and took it before they were)
  // are split over a cluster of two blocks, 4 vectors per thread, rather than
  // streamed from L2 several times: fp32 8192 x 16384 RMSNorm 1380 -> 672 us,
  // LayerNorm 2180 -> 784 us (bench/results/gpu-2026-11-23-round5.md). (The
  // same split of 16-bit forward rows of 16384 measured slower than one block:
  // 204 -> 267 us.)
  // Rows too long for two blocks (fp32 up to 32768, 16-bit up to 65536) are
  // split over four rather than streamed: fp32 4096 x 20000 RMSNorm 934 ->
  // 410 us, LayerNorm 1382 -> 375 us; bf16 1024 x 65536 1166 -> 172 us,
  // 2198 -> 183 us (bench/results/gpu-2026-11-24-round11.md); fp32 rows up
  // to 65536 over eight.
  if (pass == Pass::kBackward && !fits && layout.vec > 1) {
    const int64_t per_row = (vectors + 3) / 4;
    for (const int ctas : {kClusterCtas, kWideClusterCtas, kWidestClusterCtas}) {
      const int64_t cluster_tpr = (per_row + 32 * ctas - 1) / (32 * ctas) * (32 * ctas);
      const int cluster_iters = ItersFor(vectors, cluster_tpr);
      if (cluster_tpr <= int64_t{ctas} * kMaxThreads && layout.vec * cluster_iters <= max_elems) {
        layout.iters = cluster_iters;
        layout.tpr = static_cast<int>(cluster_tpr);
        layout.ctas_per_row = ctas;
        return layout;
      }
    }
  }
  if (!fits) {
    layout.iters = 0;
    layout.tpr = kMaxThreads;
    return layout;
  }
  if (tpr > kMaxThreads) tpr = kMaxThreads;  // and more vectors per thread
  layout.iters = iters;
  layout.tpr = static_cast<int>(tpr);
  layout.rows_per_cta = tpr >= kTargetThreads ? 1 : static_cast<int>(kTargetThreads / tpr);
  return layout;
}

// Whether every vector of every thread of the layout lies inside the row
// (hidden = iters * tpr * vec) and inside the statistic (k = hidden): the
// launchers then pick kernel instances compiled without bounds tests (and,
// for forward rows of up to 32 values per thread, canonical reductions:
// ForwardCanonical). Decided by the layout, hidden size and statistic, never
// by the row count (a layout and its SpreadLayout agree), so a row's bits do
// not depend on its batch.
inline bool FullRow(const RowLayout& layout, int64_t hidden, int64_t stat_len) {
  return layout.iters > 0 && hidden == int64_t{layout.iters} * layout.tpr * layout.vec &&
         stat_len == hidden;
}

// Whether a row leaves more than an eighth of its layout's vector slots
// (iters x tpr vectors) past its end: hidden 768, 1536, 2560 and 3584 in
// 16-bit forward rows of 4 vectors per thread, not 1000, 3000 or 6000. Such
// RMSNorm rows run lean (forward_launch.cuh), the others do not.
inline bool SparseRow(const RowLayout& layout, int64_t hidden) {
  const int64_t vectors = (hidden + layout.vec - 1) / layout.vec;
  return 8 * vectors <= 7 * int64_t{layout.iters} * layout.tpr;
}

// Most values per thread of a row the forward kernels reduce canonically
// (ForwardCanonical, row_ops.cuh), which SpreadLayout may spread.
inline constexpr int kMaxCanonicalElemsPerThread = 32;

// Vectors per leaf of the forward kernels' canonical reduction tree
// (row_ops.cuh, CanonicalRowStats): 8 values, or the thread's iters vectors if
// fewer. A spread layout keeps at least this many vectors per thread.
NORMSERVE_HOST_DEVICE constexpr int CanonicalLeafVectors(int vec, int iters) {
  const int eight = vec >= 8 ? 1 : 8 / vec;
  return eight < iters ? eight : iters;
}

// Forward rows of launches too small to fill the GPU, spread over up to four
// times the threads (at most kMaxThreads) with as many times fewer vectors
// each: a shorter latency chain per thread. Only where the forward kernels
// reduce canonically (full rows of at most 32 values per thread, threads per
// row a power of two: ForwardCanonical, row_ops.cuh), whose bits do not
// depend on the spread; other layouts come back unchanged. Up to four times,
// so that a warp's 16-byte accesses still cover runs of at least 8 vectors
// (CanonicalPosition). Measured on the H100 against the unspread layout
// (bench/results/gpu-2026-11-25-round13.md, call 5): bf16 1 x 4096 RMSNorm
// 4.75 -> 4.45 us, LayerNorm 4.95 -> 4.6; fp32 LayerNorm 5.0 -> 4.75; 1 x 1024
// bf16 RMSNorm 4.6 -> 4.1, fp32 add + RMSNorm 5.05 -> 4.3; 264 x 1024 fp32
// add + RMSNorm 6.6 -> 5.9 us. Never past max_tpr threads per row. 16-bit
// launches of many rows are spread once too (SpreadsOnce, forward_launch.cuh).
inline RowLayout SpreadLayout(const RowLayout& layout, int64_t hidden, int64_t stat_len,
                              int64_t max_tpr = kMaxThreads) {
  const bool canonical = layout.vec > 1 &&
                         layout.vec * layout.iters <= kMaxCanonicalElemsPerThread &&
                         layout.ctas_per_row == 1 && FullRow(layout, hidden, stat_len) &&
                         (layout.tpr & (layout.tpr - 1)) == 0;
  if (!canonical) return layout;
  RowLayout spread = layout;
  const int leaf = CanonicalLeafVectors(layout.vec, layout.iters);
  const int64_t most = max_tpr < kMaxThreads ? max_tpr : kMaxThreads;
  while (spread.spread < 2 && spread.iters / 2 >= leaf && spread.tpr * 2 <= most) {
    spread.iters /= 2;
    spread.tpr *= 2;
    ++spread.spread;
  }
  spread.rows_per_cta = spread.tpr >= kTargetThreads ? 1 : kTargetThreads / spread.tpr;
  return spread;
}

// How far SpreadsOnce (forward_launch.cuh) spreads 16-bit rows of many-row
// launches: once, twice the threads of half the vectors.
inline constexpr int kSpreadOnce = 1;

// Backward chunking: a segment of `rows` rows is cut into this many chunks,
// one block (or cluster) each. At most `max_chunks` blocks (a multiple of the
// SM count: one wave of resident blocks), so the fp32 partials stay small next
// to the data and no block runs alone in a last partial wave.
inline int BackwardChunks(int64_t rows, const RowLayout& layout, int max_chunks) {
  if (rows <= 0) return 0;
  const int64_t chunks = (rows + layout.rows_per_cta - 1) / layout.rows_per_cta;
  const int cap = max_chunks / layout.ctas_per_row;
  return chunks < cap ? static_cast<int>(chunks) : cap;
}

// Whether a backward chunk takes every chunks-th tile (rows_per_cta adjacent
// rows) of its segment, so that at any time the blocks work on neighbouring
// rows, rather than a run of ceil(rows / chunks) adjacent rows. Interleaved for
// rows of up to kInterleavedRowMax elements and for longer rows that fill their
// layout exactly (FullRow of the whole row). Measured on the H100
// (bench/results/gpu-2026-11-25-round14.md): 2-5 % faster at hidden 1024-16384
// where the row fills its layout (call 8: bf16 RMSNorm 32768 x 4096 296.1 ->
// 282.9 us, 65536 x 1024 154.5 -> 146.9; fp32 8192 x 16384 576.1 -> 558.5) and
// at every shorter row of the sweep 4200-7000 (call 11: fp32 4096 x 5000
// 103.6 -> 99.7 us, bf16 4096 x 7000 80.6 -> 77.8); 2-17 % slower for longer
// rows that do not fill it (fp32 4096 x 9000-24000, bf16 LayerNorm 9000-24000,
// bf16 RMSNorm 20000-24000: 4096 x 20000 fp32 RMSNorm 362 -> 420 us).
inline constexpr int64_t kInterleavedRowMax = 8192;
inline bool InterleavedChunks(const RowLayout& layout, int64_t hidden) {
  return layout.iters > 0 &&
         (hidden <= kInterleavedRowMax || FullRow(layout, hidden, /*stat_len=*/hidden));
}

// Rows per chunk of a segment cut into adjacent runs.
inline int64_t BackwardChunkRows(int64_t rows, int chunks) {
  return chunks == 0 ? 0 : (rows + chunks - 1) / chunks;
}

// The rows of one chunk: tiles of rows_per_cta adjacent rows (one per row
// group) from row `first`, `stride` rows apart, up to `end`; and whether their
// statistics were saved. Every row group of a block takes the same steps (the
// tiles), its own row of each.
struct ChunkRows {
  int64_t first = 0;   // first row of the chunk's first tile
  int64_t end = 0;     // rows at or past end are not the chunk's
  int64_t stride = 0;  // rows from one tile to the next
  bool has_stats = false;
};

// Chunk `index` of the `chunks` chunks (BackwardChunks) of a segment of `rows`
// rows from row `begin`: every chunks-th tile when `interleaved`
// (InterleavedChunks), else a run of chunk_rows (BackwardChunkRows) rows.
NORMSERVE_HOST_DEVICE inline ChunkRows ChunkOfSegment(int64_t begin, int64_t rows,
                                                      int64_t chunk_rows, int chunks, int index,
                                                      int rows_per_cta, bool interleaved) {
  ChunkRows c;
  if (interleaved) {
    c.first = begin + int64_t{index} * rows_per_cta;
    c.end = begin + rows;
    c.stride = int64_t{chunks} * rows_per_cta;
  } else {
    c.first = begin + index * chunk_rows;
    c.end = begin + rows < c.first + chunk_rows ? begin + rows : c.first + chunk_rows;
    c.stride = rows_per_cta;
  }
  return c;
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_ROW_LAYOUT_H_
