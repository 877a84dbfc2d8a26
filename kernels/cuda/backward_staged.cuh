// The backward (see backward_kernels.cuh for the math) for rows of 16-byte
// vectors, with the rows staged through shared memory instead of registers:
//  - each thread copies its own vectors of the next row's x and dy (and y, in
//    a fused launch that has it) into shared memory with cp.async while it
//    works on the current row, and reads back only those bytes, so the
//    pipeline needs no block barrier;
//  - a fused launch's grad_residual_out, used once, is loaded into registers
//    as each row starts, its latency hidden behind the row's reductions;
//  - registers then hold dw and db of the thread's columns across the whole
//    chunk, so the per-row read-modify-write of shared accumulators is gone;
//  - scale * w is formed once per block, as fp32 in shared memory, instead of
//    loaded, converted and scaled in both passes over every row (the same
//    products, so the same bits).
// kCtas > 1: one row group per cluster of kCtas blocks, each staging and
// accumulating only its share of the row's columns (row_layout.h).
// The arithmetic and its order are those of BackwardKernel: a plain launch
// (no y, no grad_residual_out) forms PlainR / PlainDxOf (BackwardKernel's bits
// with y and the residual gradient 0), a fused one (kFused) BackwardKernel's
// p = x + y, r = (p - mean) * rstd and DxOf; the same sums and group
// reductions, dw / db summed over the same rows in the same order.
#ifndef NORMSERVE_KERNELS_CUDA_BACKWARD_STAGED_CUH_
#define NORMSERVE_KERNELS_CUDA_BACKWARD_STAGED_CUH_

#include <type_traits>

#include "async_copy.cuh"
#include "backward_kernels.cuh"
#include "cluster_sum.cuh"
#include "realigned.cuh"

namespace normserve::kernels::cuda {

// Rows staged per row group: the one being reduced and the next, in flight
// while it is. (Three, i.e. two rows ahead, measured slower on the H100: 2-25%
// at hidden 1024-16384, bench/results/gpu-2026-11-23-round4.md; for rows split
// over a cluster, where a third stage costs no occupancy, no faster, and up to
// 3 % slower: round11.md.)
inline constexpr int kStagedRows = 2;

// Dynamic shared memory of a staged launch, with row_len the block's row
// storage (LocalRowLength: the hidden size, or the block's share of it) and
// `tensors` the tensors staged per row (StagedTensors):
// [kStagedRows][rows_per_cta][x, dy, (y)][row_len], reused at the end for
// one [rows_per_cta][row_len] fp32 partial (never larger: stages x 2 or more
// tensors x sizeof(T) >= 4 bytes per element), then the weight row of
// weight_elem_size bytes an element: fp32 scale * w (kWeightRow), w as stored
// (sizeof(T): BackwardStagedRows without kWeightRow), or none (0: kKeep).
__host__ __device__ inline size_t StagedRowsBytes(int rows_per_cta, int64_t row_len,
                                                  size_t elem_size, int tensors) {
  return kStagedRows * tensors * elem_size * static_cast<size_t>(rows_per_cta) *
         static_cast<size_t>(row_len);
}
inline size_t StagedSharedBytes(int rows_per_cta, int64_t row_len, size_t elem_size, int tensors,
                                size_t weight_elem_size = sizeof(float)) {
  return StagedRowsBytes(rows_per_cta, row_len, elem_size, tensors) +
         weight_elem_size * static_cast<size_t>(row_len);
}
// Length of one tensor's staged row: LocalRowLength, or for a padded launch
// (kPadded below) the layout's whole width, ITERS * tpr * VEC.
template <int VEC, int ITERS, int kCtas>
__host__ __device__ inline int64_t StagedRowLength(int64_t hidden, int tpr, bool padded) {
  return padded ? int64_t{ITERS} * tpr * VEC : LocalRowLength<VEC, ITERS, kCtas>(hidden, tpr);
}
// A realigned launch's (kRealigned) staged row: the 16-byte words that hold
// the row wherever it starts, one vector more than the layout's width; a
// cluster's block (ctas > 1) holds a run of tpr / ctas vectors out of every
// tpr, each run staged as its words, one more than its vectors.
__host__ __device__ inline int64_t RealignedStagedRowLength(int iters, int tpr, int vec, int ctas) {
  return ctas == 1 ? (int64_t{iters} * tpr + 1) * vec : int64_t{iters} * (tpr / ctas + 1) * vec;
}
// Tensors a launch stages per row: x and dy, and y where it has one.
__host__ __device__ inline int StagedTensors(const BackwardArgs& a) {
  return 2 + (a.y != nullptr ? 1 : 0);
}

// kDb: the launch wants grad_bias (LayerNorm with a bias); without it the db
// registers are not spent. kCenter: LayerNorm. kFull: every vector lies
// inside the row and the statistic (FullRow), so no bounds test is compiled:
// the same arithmetic, and registers to spare (the LayerNorm-with-bias
// instance at 4 vectors spilled 96 bytes with the tests). kFused: the launch
// has y or grad_residual_out (stored as T). kWeightRow: scale * w is kept in
// shared memory as fp32; without it, w as stored (half the bytes for 16-bit
// rows), scaled at each use: the same products. kHeld: see
// BackwardStagedHeldKernel.
// kPadded (rows of one block with bounds tests, kFull false): each tensor's
// staged row has the layout's whole width (StagedRowLength), so a thread's
// vectors past the row's end have slots of their own, which the copy
// zero-fills, and the reads from shared memory need no bounds test: the same
// values, so the same bits. The tested reads had left the fused launches
// latency-bound (ncu, round 37). Measured against unpadded
// (bench/results/gpu-2026-11-27-round38.md), fused backward with a residual
// gradient: fp32 32768 x 1500 H200 262.9 -> 207.0 us, H100 312.8 -> 280.1;
// 65536 x 1000 289.4 -> 257.1 / 367.2 -> 364.7; bf16 32768 x 3000 282.9 ->
// 217.9 / 326.6 -> 282.9. Which launches take it: ChooseGeneralStageOne.
// The body of the kernels below.
//
// kKeep (held layouts, and plain fp32 rows split over a cluster where the
// registers allow it): scale * w of the thread's columns stays in registers
// for the whole chunk, and a row's r, dy and dr between its two passes,
// instead of being read back from shared memory: fewer shared-memory reads
// where the cluster instances spent their stalls on them (round11.md). They
// take the registers (up to 128, no spills) but for LayerNorm with a bias,
// which spills 4-12 bytes with them unless its row fills a cluster of two.
// The chunk plan's occupancy comes from that instance with bounds tests
// (BackwardResidentBlocks), which does not keep, so the plan is unchanged.
// Measured (gpu-2026-11-26-round27.md), fp32 backward, H100 (call 2):
// RMSNorm 8192 x 16384 557.1 -> 555.4 us, 2048 x 16384 150.6 -> 148.75,
// 256 x 16384 30.6 -> 29.1, 4096 x 10240 183.25 -> 181.7; LayerNorm 8192 x
// 16384 562.35 -> 560.65, 256 x 16384 34.8 -> 33.2. H200 (call 1): RMSNorm
// 8192 x 16384 413.7 -> 410.25, 4096 x 20000 289.2 -> 280.05; LayerNorm 8192
// x 16384 421.0 -> 415.35.
// fp32 realigned rows of one block (kRealignedF32) keep too: plain ones but
// LayerNorm with a bias on half shifts (128 registers, 8 bytes spilled), and
// fused RMSNorm ones without db (128 registers, none spilled); the rest but
// fused rows with db (which spilled 20-28 bytes) keep scale * w alone
// (kKeepWeight). Measured on the H200 (gpu-2026-12-03-round79.md, table 1),
// fp32 backward, kept rows / scale * w alone against neither: RMSNorm 16384 x
// 4097 295.6 -> 246.9 / 276.9 us, 8192 x 8191 248.3 -> 226.7 / 231.85, 16384 x
// 1001 70.5 -> 66.0 / 68.75; LayerNorm 16384 x 4097 312.35 -> 276.8 / 295.65,
// 8192 x 8191 254.4 -> 228.15 / 238.2; on half shifts LayerNorm 16384 x 3586
// 195.65 -> 194.4 / 191.55, 8192 x 6002 160.35 -> 167.3 / 157.9, 8192 x 8190
// 235.95 -> 216.65 / 228.1; add + RMSNorm 16384 x 4097 351.9 -> 338.1 (scale *
// w alone), 8192 x 8191 317.5 -> 310.65; then fused RMSNorm rows kept against
// scale * w alone (table 4): add + RMSNorm 16384 x 4097 338.4 -> 314.05, of x
// and y 419.15 -> 364.15, 8192 x 8190 376.2 -> 347.9.
template <typename T, int VEC, int ITERS, bool kDb, bool kCenter, int kCtas, bool kFull,
          bool kFused, bool kWeightRow, bool kHeld = false, bool kPadded = false,
          bool kRealigned = false, bool kTwoBlocksPerSm = false, bool kHalfShift = false>
__device__ __forceinline__ void BackwardStagedRows(const BackwardArgs& a, const int tpr,
                                                   const int rows_per_cta,
                                                   const int64_t chunk_rows) {
  static_assert(sizeof(T) * VEC == 16 || sizeof(T) * VEC == 8,
                "staged rows move 16- or 8-byte vectors");
  constexpr int kVecBytes = sizeof(T) * VEC;
  static_assert(!kPadded || (kCtas == 1 && !kFull && !kHeld), "padding is for tested rows");
  // kRealigned (RowLayout::realigned): each thread copies the aligned 16-byte
  // words of its vectors' slots of the row's span (RealignedStagedRowLength,
  // zeros past the row's end) and reads the two around each of its vectors
  // shifted into place (ShiftedSharedWord): other threads' copies, so a block
  // barrier follows the copies' wait and precedes the next row's copies.
  static_assert(!kRealigned || (!kFull && !kHeld && !kPadded && sizeof(T) * VEC == 16),
                "realigned rows are 16-byte vectors");
  // kHalfShift (realigned rows of one block that all start on an 8-byte
  // boundary: RowsStartOn8Bytes): each thread copies its own vectors, each as
  // two 8-byte halves into its aligned slot, and reads them back as they are:
  // no shift and no block barrier, the pipeline of aligned rows. The same
  // values in the same slots (zeros past the row's end), so the same bits.
  // ChooseStageOne takes it where it measured faster.
  static_assert(!kHalfShift || (kRealigned && kCtas == 1), "half shifts: realigned, one block");
  constexpr bool kRealignedF32 = kRealigned && kCtas == 1 && sizeof(T) == 4;
  constexpr bool kKeep =
      kHeld || (kCtas > 1 && sizeof(T) == 4 && !kFused && (!kDb || (kFull && kCtas == 2))) ||
      (kRealignedF32 && (kFused ? !kDb && !kCenter : !(kDb && kHalfShift)));
  constexpr bool kKeepWeight = kKeep || (kRealignedF32 && !(kFused && kDb));
  AllowDependentLaunch();  // ReducePartialsKernel waits for this grid's end itself
  extern __shared__ __align__(16) unsigned char staged[];
  __shared__ ClusterScratchStorage<kCtas> scratch_storage;
  // One block: the single-buffered scratch (see GroupScratchOf).
  auto scratch = MakeClusterScratch<kCtas, /*kDoubleBuffered=*/false>(scratch_storage, tpr);
  const RowThread me = RowThreadOf<kCtas>(tpr);  // named, not bound: lambdas capture them
  const int group = me.group, t = me.t, rank = me.rank;
  const int d = static_cast<int>(a.hidden);
  const int k = static_cast<int>(a.norm.stat_len);
  const int len =
      static_cast<int>(kRealigned && kCtas == 1 ? RealignedRowLength(a.hidden, VEC)
                                                : LocalRowLength<VEC, ITERS, kCtas>(a.hidden, tpr));
  const int chunk = blockIdx.x / kCtas;
  const int total_chunks = gridDim.x / kCtas;
  const ChunkRows c = FindChunk(a, chunk, total_chunks, chunk_rows, rows_per_cta);
  const T* x = static_cast<const T*>(a.x);
  const T* dy = static_cast<const T*>(a.grad_out);
  const T* y = static_cast<const T*>(a.y);
  const T* residual_grad = static_cast<const T*>(a.grad_residual_out);
  const int tensors = kFused ? StagedTensors(a) : 2;
  const int slot_len = kRealigned
                           ? static_cast<int>(RealignedStagedRowLength(ITERS, tpr, VEC, kCtas))
                       : kPadded ? ITERS * tpr * VEC
                                 : len;  // StagedRowLength
  // Whether vector `it` at column col lies inside the row. A held layout
  // (kHeldRowThreads threads a block, ITERS the fewest vectors each that cover
  // the row) has only its last vectors past the row's end.
  auto in_row = [&](int it, int col) { return kFull || (kHeld && it < ITERS - 1) || col < d; };
  constexpr int kX = 0, kDy = 1, kY = 2;  // kY: fused launches with y
  // This group's row of tensor `which` in stage s; a thread's vector `it` sits
  // at LocalColumn(it) of it.
  auto slot = [&](int s, int which) {
    return reinterpret_cast<T*>(staged) +
           (static_cast<int64_t>(s * rows_per_cta + group) * tensors + which) * slot_len;
  };
  // Bytes from the 16-byte boundary at or before `row`'s first element of
  // `tensor` to it.
  auto shift_of = [&](const T* tensor, int64_t row) {
    return static_cast<int>(reinterpret_cast<uintptr_t>(tensor + row * a.hidden) & 15);
  };
  // kRealigned: the slot of the span's word that vector `it` of this thread
  // starts in (the next word follows it).
  const int cta_tpr = tpr / kCtas;
  auto word_slot = [&](int it) {
    return kCtas == 1 ? it * tpr + t : it * (cta_tpr + 1) + t % cta_tpr;
  };
  // A realigned launch's copy of `row` of `tensor` into its slot: the span's
  // words of this block's vectors and the one after each run of them, at
  // word_slot (zeros past the row's end or for a dead row).
  auto stage_realigned = [&](const T* tensor, int which, int64_t row, bool live, int s) {
    const int64_t first = (live ? row : 0) * a.hidden;
    const int shift = shift_of(tensor, live ? row : 0);
    const char* words = reinterpret_cast<const char*>(tensor + first) - shift;
    const int span = live ? shift + d * static_cast<int>(sizeof(T)) : 0;
    auto copy = [&](int j, int at) {  // word j of the span to word slot `at`
      const int rest = span - 16 * j;
      const int bytes = rest < 0 ? 0 : rest > 16 ? 16 : rest;
      CpAsync16Prefix(slot(s, which) + at * VEC, bytes > 0 ? words + 16 * j : words, bytes);
    };
#pragma unroll
    for (int it = 0; it < ITERS; ++it) copy(it * tpr + t, word_slot(it));
    if constexpr (kCtas == 1) {
      if (t == 0) copy(ITERS * tpr, ITERS * tpr);
    } else if (t % cta_tpr == cta_tpr - 1) {  // the word after the block's run
#pragma unroll
      for (int it = 0; it < ITERS; ++it) copy(it * tpr + t + 1, word_slot(it) + 1);
    }
  };
  // kHalfShift: this thread's vector `it` of `row` of `tensor` into its slot,
  // as two 8-byte halves (zeros past the row's end, whose width is a multiple
  // of a half, or for a dead row).
  auto stage_halves = [&](const T* tensor, int which, int64_t row, bool live, int it, int s) {
    constexpr int kHalf = VEC / 2;
    const int col = (it * tpr + t) * VEC;
    const T* src = tensor + (live ? row : 0) * a.hidden + col;
    T* dst = slot(s, which) + word_slot(it) * VEC;
    const bool low = live && col < d, high = live && col + kHalf < d;
    CpAsync<8>(dst, low ? src : tensor, low);
    CpAsync<8>(dst + kHalf, high ? src + kHalf : tensor, high);
  };
  // Starts copying `row` into stage s (zeros for a row past the chunk).
  auto stage_row = [&](int64_t row, int s) {
    const bool live = row < c.end;
    const int64_t base = live ? row * a.hidden : 0;
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int col = (it * tpr + t) * VEC;
      const int local = LocalColumn<VEC, kCtas>(it, tpr, t);
      if constexpr (kHalfShift) {
        stage_halves(x, kX, row, live, it, s);
        stage_halves(dy, kDy, row, live, it, s);
        if constexpr (kFused) {
          if (y != nullptr) stage_halves(y, kY, row, live, it, s);
        }
      } else if constexpr (kRealigned) {
        if (it == 0) {
          stage_realigned(x, kX, row, live, s);
          stage_realigned(dy, kDy, row, live, s);
          if constexpr (kFused) {
            if (y != nullptr) stage_realigned(y, kY, row, live, s);
          }
        }
      } else if constexpr (kPadded) {  // every slot copied: zeros past the row's end
        const bool copy = live && in_row(it, col);
        const int64_t at = copy ? base + col : 0;
        CpAsync<kVecBytes>(slot(s, kX) + local, x + at, copy);
        CpAsync<kVecBytes>(slot(s, kDy) + local, dy + at, copy);
        if constexpr (kFused) {
          if (y != nullptr) CpAsync<kVecBytes>(slot(s, kY) + local, y + at, copy);
        }
      } else if (in_row(it, col)) {
        CpAsync<kVecBytes>(slot(s, kX) + local, x + base + col, live);
        CpAsync<kVecBytes>(slot(s, kDy) + local, dy + base + col, live);
        if constexpr (kFused) {
          if (y != nullptr) CpAsync<kVecBytes>(slot(s, kY) + local, y + base + col, live);
        }
      }
    }
    CpAsyncCommit();
  };
  // The saved statistics of `row` (0 for a row past the chunk, as in BackwardRow).
  auto saved_stats = [&](int64_t row, float& mean, float& rstd) {
    mean = rstd = 0.0f;
    if (c.has_stats && row < c.end) {
      if constexpr (kCenter) mean = a.mean[row];
      rstd = a.rstd[row];
    }
  };
  // Vector `it` of stage s's tensor as fp32 (zeros past the row's end). In a
  // plain launch x is held as stored: p = x + 0 is formed in PlainR, and the
  // statistics' sums do not depend on it (see BackwardRow).
  int shifts[3] = {};  // kRealigned: shift_of the current row's x, dy and y
  auto load = [&](int s, int which, int it, float(&v)[VEC]) {
    const int col = (it * tpr + t) * VEC;
    if constexpr (kHalfShift) {
      LoadFloats(slot(s, which) + word_slot(it) * VEC, v);
      return;
    } else if constexpr (kRealigned) {
      const T* at = slot(s, which) + word_slot(it) * VEC;
      UnpackRaw<T, VEC>(ShiftedSharedWord<sizeof(T)>(at, shifts[which]), v);
      return;
    }
    if (kPadded || in_row(it, col)) {
      LoadFloats(slot(s, which) + LocalColumn<VEC, kCtas>(it, tpr, t), v);
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) v[i] = 0.0f;
    }
  };

  float dw[ITERS][VEC] = {}, db[kDb ? ITERS : 1][VEC] = {};
  static_assert(kStagedRows == 2, "each step stages the next row");
  int64_t row = c.first + group;
  stage_row(row, 0);
  // Saved statistics are loaded one row ahead, into registers.
  float next_mean, next_rstd;
  saved_stats(row, next_mean, next_rstd);
  // p = x + y of a fused launch (x + 0 without y, as BackwardRow forms it).
  auto load_p = [&](int s, int it, float(&v)[VEC]) {
    load(s, kX, it, v);
    if constexpr (kFused) {
      float yv[VEC] = {};
      if (y != nullptr) load(s, kY, it, yv);
#pragma unroll
      for (int i = 0; i < VEC; ++i) v[i] += yv[i];
    }
  };
  unsigned char* const weight_row =
      staged + StagedRowsBytes(rows_per_cta, slot_len, sizeof(T), tensors);
  const SharedFloatRow<VEC> scaled_w{reinterpret_cast<float*>(weight_row), len};  // kWeightRow
  T* const stored_w = reinterpret_cast<T*>(weight_row);                           // or w as stored
  // kKeepWeight: scale * w of the thread's columns in registers for the whole
  // chunk (the padding's: the first column's, as below).
  float held_sw[kKeepWeight ? ITERS : 1][VEC];
  if constexpr (kKeepWeight) {
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int col = (it * tpr + t) * VEC;
      LoadScaledWeight<T, kRealigned>(a, in_row(it, col) ? col : 0, held_sw[it]);
    }
  }
  if constexpr (!kKeepWeight) {  // kKeepWeight keeps no row
    if (group == 0) {
#pragma unroll
      for (int it = 0; it < ITERS; ++it) {
        const int col = (it * tpr + t) * VEC;
        if (col < d) {
          float w[VEC];
          if constexpr (kWeightRow) {
            LoadScaledWeight<T, kRealigned>(a, col, w);
            scaled_w.Store(LocalColumn<VEC, kCtas>(it, tpr, t), w);
          } else {  // w as stored (exact: its floats are T's), 1 without a weight
            if (a.weight != nullptr) {
              LoadWeight<T, kRealigned>(a, col, w);
            } else {
#pragma unroll
              for (int i = 0; i < VEC; ++i) w[i] = 1.0f;
            }
            StoreFloats(stored_w + LocalColumn<VEC, kCtas>(it, tpr, t), w);
          }
        }
      }
    }
    __syncthreads();  // other row groups read group 0's columns (rows already in flight)
  }

  int s = 0;  // the stage holding this step's row
  for (int64_t tile = c.first; tile < c.end; tile += c.stride, s ^= 1) {
    const int64_t next = row + c.stride;
    const bool live = row < c.end;
    float mean = next_mean, rstd = next_rstd;
    // A realigned row's threads read each other's copies, so a block barrier
    // follows the wait for them. In one block the next row's copies are issued
    // after that barrier, into the stage every thread is then done with: one
    // barrier a row (against two: 8192 x 8191 bf16 RMSNorm 196.3 -> 182.9 us,
    // gpu-2026-11-28-round49.md, table 1). Over a cluster they are issued
    // before the wait, as in the other layouts, and a second barrier at the
    // row's end guards the stage: the one-barrier form was 2-3 % slower on
    // LayerNorm rows there (4096 x 16385, 2048 x 32767).
    constexpr bool kCopiesAfterBarrier = kRealigned && kCtas == 1 && !kHalfShift;
    if constexpr (!kCopiesAfterBarrier) {
      // The stage read by this thread in the previous step takes the next row.
      stage_row(next, s ^ 1);
      saved_stats(next, next_mean, next_rstd);
    }
    CpAsyncWait<kCopiesAfterBarrier ? 0 : kStagedRows - 1>();  // this row's copies have landed
    if constexpr (kRealigned && !kHalfShift) {
      __syncthreads();  // and every other thread's, which this one reads
      if constexpr (kCopiesAfterBarrier) {
        stage_row(next, s ^ 1);
        saved_stats(next, next_mean, next_rstd);
      }
      shifts[kX] = shift_of(x, live ? row : 0);
      shifts[kDy] = shift_of(dy, live ? row : 0);
      if (y != nullptr) shifts[kY] = shift_of(y, live ? row : 0);
    }
    // The row's grad_residual_out, read from global memory into registers
    // now, in flight during the reductions: staged like y, its third tensor
    // took 16-bit rows of 8192 off two blocks per SM (gpu-2026-11-25-round15.md).
    // A realigned row's: its pieces only, put in place at the use
    // (PendingRealigned16), in the fewer registers where a thread has four
    // vectors in flight or two blocks share an SM (kTwoBlocksPerSm: the
    // paired kernel's 96 registers; bench/results/gpu-2026-11-29-round51.md,
    // table 1: 16384 x 4097 221.5 us against 224.8 with the pair of words).
    RawVec<T, VEC> residual_grad_raw[kFused && !kRealigned ? ITERS : 1];
    // With db (a bias) at 4 vectors a thread on 16-bit realigned rows, where
    // dw and db take 64 registers, the pieces are loaded where dx uses them
    // instead: prefetched, they took the instances' spills to 172-264 bytes
    // (bf16; at the use 64-160). On the H200
    // (gpu-2026-11-29-round53.md, table 5), bf16 add + LayerNorm backward of a
    // saved p: 4096 x 14501 327.3 -> 277.9 us, 2048 x 16383 192.3 -> 162.0,
    // 2048 x 32767 402.5 -> 369.3, 1024 x 65535 424.9 -> 398.3; fp16 4096 x
    // 14501 331.0 -> 278.1.
    constexpr bool kResidualGradAtUse = kRealigned && kDb && sizeof(T) == 2 && ITERS == 4;
    PendingRealigned16<T, (ITERS > 2 || kTwoBlocksPerSm)>
        residual_grad_pending[kFused && kRealigned ? ITERS : 1];
    if constexpr (kFused) {
      const bool has_residual_grad = live && residual_grad != nullptr;
#pragma unroll
      for (int it = 0; it < ITERS; ++it) {
        const int col = (it * tpr + t) * VEC;
        if constexpr (kRealigned) {
          residual_grad_pending[it].Zero();
          if (!kResidualGradAtUse && has_residual_grad && in_row(it, col)) {
            residual_grad_pending[it].Issue(residual_grad + row * a.hidden, col, d);
          }
        } else {
          residual_grad_raw[it] = LoadRawOrZero<T, VEC>(residual_grad + row * a.hidden + col,
                                                        has_residual_grad && in_row(it, col));
        }
      }
    }

    if (!c.has_stats) {
      RowStatsOf<kCenter, VEC, ITERS, kFull>([&](int it, float(&v)[VEC]) { load_p(s, it, v); }, tpr,
                                             t, d, a.norm, scratch, mean, rstd);
    }
    const float neg_mean = NegatedOrPlusZero(mean);
    // Vector `it`'s r and dr (and dy in g).
    auto r_dr = [&](int it, float(&r)[VEC], float(&g)[VEC], float(&dr)[VEC]) {
      const int col = (it * tpr + t) * VEC;
      float sw[VEC];
      load_p(s, it, r);
      load(s, kDy, it, g);
      // padding: the block's first column's (dy is 0 there)
      if constexpr (kKeepWeight) {
#pragma unroll
        for (int i = 0; i < VEC; ++i) sw[i] = held_sw[it][i];
      } else if constexpr (kWeightRow) {
        scaled_w.Load(kFull || col < d ? LocalColumn<VEC, kCtas>(it, tpr, t) : 0, sw);
      } else {
        LoadFloats(stored_w + (kFull || col < d ? LocalColumn<VEC, kCtas>(it, tpr, t) : 0), sw);
#pragma unroll
        for (int i = 0; i < VEC; ++i) sw[i] *= a.norm.scale;  // LoadScaledWeight's bits
      }
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        r[i] = kFused ? (r[i] - mean) * rstd : PlainR<kCenter>(r[i], neg_mean, rstd);
        dr[i] = __fmul_rn(g[i], sw[i]);
      }
    };
    float sums[3] = {0.0f, 0.0f, 0.0f};
    // kKeep: the first pass's r, dy and dr stay in registers for the second.
    constexpr int kKeptIters = kKeep ? ITERS : 1;
    float held_r[kKeptIters][VEC], held_g[kKeptIters][VEC], held_dr[kKeptIters][VEC];
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      float r[VEC], g[VEC], dr[VEC];
      r_dr(it, r, g, dr);
      AddDqSums<kCenter>(r, dr, kFull ? 0 : (it * tpr + t) * VEC, kFull ? VEC : k, sums);
      if constexpr (kKeep) {
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          held_r[it][i] = r[i];
          held_g[it][i] = g[i];
          held_dr[it][i] = dr[i];
        }
      }
    }
    const DqScalars dq = ReduceDqScalars<kCenter>(a, sums, rstd, tpr, scratch);
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int col = (it * tpr + t) * VEC;
      if (live && in_row(it, col)) {
        float r[VEC], g[VEC], dr[VEC], dx[VEC];
        if constexpr (kKeep) {
#pragma unroll
          for (int i = 0; i < VEC; ++i) {
            r[i] = held_r[it][i];
            g[i] = held_g[it][i];
            dr[i] = held_dr[it][i];
          }
        } else {
          r_dr(it, r, g, dr);
        }
        if constexpr (kFused) {
          float residual_g[VEC];  // the residual branch's gradient (0 without one)
          if constexpr (kRealigned) {
            if (kResidualGradAtUse && residual_grad != nullptr) {
              residual_grad_pending[it].Issue(residual_grad + row * a.hidden, col, d);
            }
            UnpackRaw<T, VEC>(residual_grad_pending[it].Word(), residual_g);
          } else {
            UnpackRaw<T, VEC>(residual_grad_raw[it], residual_g);
          }
          DxOf(r, dr, residual_g, kFull ? 0 : col, kFull ? VEC : k, rstd, dq, dx);
        } else {
          PlainDxOf<kCenter>(r, dr, kFull ? 0 : col, kFull ? VEC : k, rstd, dq, dx);
        }
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          dw[it][i] += g[i] * r[i];
          if constexpr (kDb) db[it][i] += g[i];
        }
        if constexpr (kRealigned) {
          StoreRealignedFloats(static_cast<T*>(a.grad_in) + row * a.hidden, col, d, dx);
        } else {
          StoreFloats(static_cast<T*>(a.grad_in) + row * a.hidden + col, dx);
        }
      }
    }
    if constexpr (kRealigned && !kHalfShift && !kCopiesAfterBarrier) {
      __syncthreads();  // before the next row's copies overwrite its stage
    }
    row = next;
  }
  CpAsyncWait<0>();  // the last (empty) stages, before shared memory is reused
  DrainClusterSums(scratch);
  if (a.workspace == nullptr) return;

  // The groups' register partials go through shared memory, one tensor at a
  // time, and WritePartial adds them in group order.
  float* acc = reinterpret_cast<float*>(staged);
  for (int which = 0; which < (kDb ? 2 : 1); ++which) {
    if ((which == 0 ? a.grad_weight : a.grad_bias) == nullptr) continue;
    __syncthreads();  // every thread is done with the stages / previous tensor
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int col = (it * tpr + t) * VEC;
      if (col < d) {
        StoreFloats(acc + group * len + LocalColumn<VEC, kCtas>(it, tpr, t),
                    which == 0 ? dw[it] : db[kDb ? it : 0]);
      }
    }
    __syncthreads();
    if constexpr (kCtas == 1) {
      WritePartial(a, chunk, total_chunks, rows_per_cta, acc, len, which);
    } else {
      WriteBlockColumnsPartial<VEC, kCtas>(a, chunk, total_chunks, tpr, rank, len, acc, which);
    }
  }
}

template <typename T, int VEC, int ITERS, bool kDb, bool kCenter, int kCtas = 1, bool kFull = false,
          bool kFused = false, bool kWeightRow = true, bool kPadded = false,
          bool kRealigned = false, bool kHalfShift = false>
__global__ void __launch_bounds__(kMaxThreads)
    BackwardStagedKernel(const BackwardArgs a, const int tpr, const int rows_per_cta,
                         const int64_t chunk_rows) {
  BackwardStagedRows<T, VEC, ITERS, kDb, kCenter, kCtas, kFull, kFused, kWeightRow,
                     /*kHeld=*/false, kPadded, kRealigned, /*kTwoBlocksPerSm=*/false,
                     kHalfShift>(a, tpr, rows_per_cta, chunk_rows);
}

// fp32 fused LayerNorm rows of 257-384 threads at 2 vectors each (hidden
// 2049-3072): BackwardStagedKernel's instances take 85-98 registers, one such
// block per SM where the chunk plan runs two (a second wave); bounded to two
// (79-80 registers, no spills). Fused LayerNorm backward 32768 x 3000 569.5 ->
// 392.8 us on an H200, 647.5 -> 541.3 on an H100 (round 37). Bounded by the
// layouts' own limit (row_layout.h), so the two cannot drift apart.
// The same bound for rows of half vectors at 4 each over 352-384 threads
// (hidden 2562-3070 of 2 mod 4, padded: kPadded), whose instances took 83-98
// registers, one block per SM: fused LayerNorm backward of a saved p on the
// H200 (gpu-2026-12-02-round70.md, table 2) 16384 x 2562 232.0 -> 189.6 us,
// 16384 x 2818 238.8 -> 196.6, 16384 x 3070 246.8 -> 210.9, 32768 x 2562
// 446.0 -> 362.6; the other kinds unchanged.
template <int VEC, int ITERS, bool kDb, bool kFull, bool kPadded = false>
__global__ void __launch_bounds__(kTwoVectorF32Threads, 2)
    BackwardStagedFusedLayerNormKernel(const BackwardArgs a, const int tpr, const int rows_per_cta,
                                       const int64_t chunk_rows) {
  BackwardStagedRows<float, VEC, ITERS, kDb, /*kCenter=*/true, 1, kFull, /*kFused=*/true, true,
                     /*kHeld=*/false, kPadded>(a, tpr, rows_per_cta, chunk_rows);
}

// fp32 RMSNorm rows of half vectors at 4 each over 385-512 threads (hidden
// 3074-4094 of 2 mod 4, padded): BackwardStagedKernel's plain instance takes
// 78 registers, one block per SM where the chunk plan (from the LayerNorm one,
// 64) runs two; bounded to two. Measured on the H200
// (gpu-2026-12-02-round70.md, table 3), RMSNorm backward 16384 x 3074 188.5
// -> 163.9 us, 16384 x 3586 203.5 -> 192.4, 16384 x 4094 216.7 -> 213.4,
// 32768 x 3586 386.1 -> 369.9; add + RMSNorm of a saved p (no y) over at most
// 480 threads 243.6 -> 212.4, 259.2 -> 248.5, 499.3 -> 486.5 (over 512, 16384
// x 4094: 276.6 -> 284.0, not taken). Slower bounded, so not taken: fused rows
// with y (16384 x 3586 299.2 -> 373.6) and LayerNorm (fused 275.5 -> 304.3;
// plain rows already hold two at 64 registers).
template <bool kDb, bool kFused>
__global__ void __launch_bounds__(kMaxThreads, 2)
    BackwardStagedHalfRmsF32Kernel(const BackwardArgs a, const int tpr, const int rows_per_cta,
                                   const int64_t chunk_rows) {
  BackwardStagedRows<float, 2, 4, kDb, /*kCenter=*/false, 1, /*kFull=*/false, kFused, true,
                     /*kHeld=*/false, /*kPadded=*/true>(a, tpr, rows_per_cta, chunk_rows);
}

// Blocks of more than kTargetThreads and at most kPairedThreads threads (16-bit
// rows of 4097-5120 elements at 2 vectors per thread) hold two per SM only at
// 96 registers or fewer; BackwardStagedKernel's bound lets ptxas take up to 128
// (one block per SM, and the chunk plan with it). Measured on the H100
// (gpu-2026-11-25-round16.md, call 2): bf16 4096 x 5000 add + RMSNorm backward
// of a saved p 97.5 -> 76.9 us, RMSNorm 63.5 -> 62.3; 4096 x 4608 RMSNorm 59.1
// -> 53.2, LayerNorm 62.3 -> 56.6; 4096 x 5000 LayerNorm (with bias, 16 bytes
// spilled) 69.9 -> 71.5, the one shape slower. The same cap on every layout's
// instance (call 1) was 1-2 % slower at 256 or 512 threads, and on fp32 rows
// (4 vectors of 4) slower but for the fused backward (bf16 LayerNorm 4096 x
// 6000 73.6 -> 80.7 us, fp32 4096 x 5000 103.2 -> 118.3).
inline constexpr int kPairedThreads = 320;
template <typename T, bool kDb, bool kCenter, bool kFull, bool kFused, bool kRealigned = false>
__global__ void __launch_bounds__(kPairedThreads, 2)
    BackwardStagedPairedKernel(const BackwardArgs a, const int tpr, const int rows_per_cta,
                               const int64_t chunk_rows) {
  BackwardStagedRows<T, 16 / sizeof(T), 2, kDb, kCenter, 1, kFull, kFused, true, /*kHeld=*/false,
                     /*kPadded=*/false, kRealigned, /*kTwoBlocksPerSm=*/true>(a, tpr, rows_per_cta,
                                                                              chunk_rows);
}

// fp32 rows of row_layout.h's held layouts (hidden 4100-8192: kHeldRowThreads
// threads of ITERS = 5 to 8 vectors; 8196-16384: kCtas = 2 such blocks): one
// block per SM, whose registers hold a row's r, dy and dr between the passes
// instead of reading x, dy and scale * w back from shared memory, and scale *
// w for the whole chunk (kHeld; 138-255 registers; at 8 vectors over a
// cluster, LayerNorm with a bias fused spills 4-16 bytes). The threads per
// row and the one row per block are compile-time constants here, so the
// vectors' addresses fold into immediates, and only a thread's last vector
// has a bounds test: 1144 SASS instructions for the
// fused RMSNorm instance at hidden 5000 where the 320-thread layout's took
// 1648 (round20.md, call 1).
template <typename T, int ITERS, bool kDb, bool kCenter, bool kFull, bool kFused, int kCtas = 1>
__global__ void __launch_bounds__(kHeldRowThreads, 1)
    BackwardStagedHeldKernel(const BackwardArgs a, const int /*tpr*/, const int /*rows_per_cta*/,
                             const int64_t chunk_rows) {
  BackwardStagedRows<T, 16 / sizeof(T), ITERS, kDb, kCenter, kCtas, kFull, kFused,
                     /*kWeightRow=*/false, /*kHeld=*/true>(a, kCtas * kHeldRowThreads, 1,
                                                           chunk_rows);
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_BACKWARD_STAGED_CUH_
