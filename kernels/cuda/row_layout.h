// How a row is spread over threads: the one place that turns (pass, dtype,
// hidden, alignment) into a launch shape. Never looks at the row count, so a
// row's arithmetic (and hence its bits) does not depend on the batch it is in.
//
// A row of `hidden` elements is cut into vectors of `vec` elements; a group of
// `tpr` consecutive threads owns one row, thread t holding vectors
// t, t + tpr, t + 2 tpr, ... (`iters` of them) in registers, so the row is read
// from memory once. A block holds `rows_per_cta` such groups. Rows too long for
// registers go to the streaming kernels (iters == 0): one block per row, making
// several passes over the row (the later ones served from L2).
#ifndef NORMSERVE_KERNELS_CUDA_ROW_LAYOUT_H_
#define NORMSERVE_KERNELS_CUDA_ROW_LAYOUT_H_

#include <cstdint>

#include "normserve/kernels/dtype.h"

namespace normserve::kernels::cuda {

enum class Pass { kForward, kBackward };

// The register kernels' largest block, and the streaming kernels' block.
inline constexpr int kMaxThreads = 512;
// Threads a block aims for when rows are short (several rows per block).
inline constexpr int kTargetThreads = 256;
// Register kernels exist for iters in {1, 2, 4, 8} with vec * iters at most
// this many elements per thread and row (backward: 64 bytes of each stored
// tensor, which a prefetched row doubles).
constexpr int MaxElemsPerThread(Pass pass, int elem_size) {
  return pass == Pass::kForward ? 64 : 64 / elem_size;
}

struct RowLayout {
  int vec = 1;           // elements per vector access: 16 / sizeof(T), or 1
  int iters = 0;         // vectors per thread and row; 0 = streaming kernel
  int tpr = 1;           // threads per row: a power of two <= 32, or a multiple of 32
  int rows_per_cta = 1;  // row groups per block
  int threads() const { return tpr * rows_per_cta; }
  bool streaming() const { return iters == 0; }
};

inline RowLayout ChooseRowLayout(Pass pass, DType dtype, int64_t hidden, bool aligned) {
  RowLayout layout;
  const int full_vec = static_cast<int>(16 / DTypeSize(dtype));
  layout.vec = aligned && hidden % full_vec == 0 ? full_vec : 1;
  const int64_t vectors = (hidden + layout.vec - 1) / layout.vec;
  // Preferred vectors per thread: enough independent 16-byte loads in flight,
  // few enough registers for several blocks per SM.
  // Backward keeps dw / db in shared memory but holds x, y, dy as stored plus a
  // prefetched next row, so its fp32 rows get fewer elements per thread.
  // Measured on the H100 (bench/results/gpu-*.md): 16-bit rows with 4 vectors
  // of 8 per thread in forward beat 8 vectors.
  // Two exceptions for 16-bit rows (vec 8), measured on the H100
  // (bench/results/gpu-2026-11-23-round2.md):
  //  - forward: a row that 4 vectors per thread would spread over more than
  //    kTargetThreads threads (hidden 16384: 512) takes 8 vectors per thread
  //    instead (16384: 249 -> 205 us at 8192 rows);
  //  - backward: a row that 2 vectors per thread fill as exactly one
  //    kTargetThreads block (hidden 4096) takes 2 vectors per thread rather
  //    than 4 with two rows per block (32768 x 4096 RMSNorm: 434 -> 413 us).
  int preferred = pass == Pass::kForward && layout.vec != 8 ? 8 : 4;
  if (layout.vec == 8) {
    if (pass == Pass::kForward && (vectors + 3) / 4 > kTargetThreads) preferred = 8;
    if (pass == Pass::kBackward && (vectors + 1) / 2 == kTargetThreads) preferred = 2;
  }
  int64_t tpr = (vectors + preferred - 1) / preferred;
  if (tpr <= 32) {
    int pow2 = 1;
    while (pow2 < tpr) pow2 *= 2;
    tpr = pow2;
  } else {
    tpr = (tpr + 31) / 32 * 32;
    if (tpr > kMaxThreads) tpr = kMaxThreads;
  }
  int iters = 1;
  while (tpr * iters < vectors) iters *= 2;
  if (iters > 8 ||
      layout.vec * iters > MaxElemsPerThread(pass, static_cast<int>(DTypeSize(dtype)))) {
    layout.iters = 0;
    layout.tpr = kMaxThreads;
    layout.rows_per_cta = 1;
    return layout;
  }
  layout.iters = iters;
  layout.tpr = static_cast<int>(tpr);
  layout.rows_per_cta = tpr >= kTargetThreads ? 1 : static_cast<int>(kTargetThreads / tpr);
  return layout;
}

// Backward chunking: a segment of `rows` rows is cut into this many chunks of
// ceil(rows / chunks) rows, one block each. At most `max_chunks` (a multiple of
// the SM count: one wave of resident blocks), so the fp32 partials stay small
// next to the data and no block runs alone in a last partial wave.
inline int BackwardChunks(int64_t rows, const RowLayout& layout, int max_chunks) {
  if (rows <= 0) return 0;
  const int64_t chunks = (rows + layout.rows_per_cta - 1) / layout.rows_per_cta;
  return chunks < max_chunks ? static_cast<int>(chunks) : max_chunks;
}
inline int64_t BackwardChunkRows(int64_t rows, int chunks) {
  return chunks == 0 ? 0 : (rows + chunks - 1) / chunks;
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_ROW_LAYOUT_H_
