// How much work one pool task gets: enough that claiming it (one atomic
// increment) and touching a new row range costs little next to the math, few
// enough tasks that two to a few dozen threads stay balanced.
#ifndef NORMSERVE_KERNELS_CPU_TASK_SIZE_H_
#define NORMSERVE_KERNELS_CPU_TASK_SIZE_H_

#include <algorithm>
#include <cstdint>

namespace normserve::kernels::cpu {

// Elements (rows * hidden) per task.
inline constexpr int64_t kTaskElements = 32 * 1024;

// Batches below this many elements run on the calling thread alone: waking
// workers would cost more than it saves.
inline constexpr int64_t kParallelMinElements = 64 * 1024;

// Backward's grad_weight / grad_bias reduction runs on the calling thread
// alone below this many partial elements (chunks * hidden).
inline constexpr int64_t kParallelMinReduceElements = 1024 * 1024;

// Backward writes grad_in with non-temporal stores (BackwardRowParams::
// stream_grad_in) from this many grad_in bytes on: with x and dy, three times
// that no longer fits the 32 MiB last-level cache of the machines measured
// (bench/results/cpu-*.md), and smaller batches run faster with grad_in left
// in the cache.
inline constexpr int64_t kStreamMinBytes = 8 * 1024 * 1024;

// A backward row prefetches the row this many bytes (of x) ahead, at least
// the next one: far enough that the prefetches complete before the row's
// first pass reads it, whatever the row length.
inline constexpr int64_t kPrefetchAheadBytes = 16 * 1024;
inline int64_t PrefetchRowsAhead(int64_t row_bytes) {
  return std::max<int64_t>(1, (kPrefetchAheadBytes + row_bytes - 1) / row_bytes);
}

// Rows per task for rows of `hidden` elements (at least 1).
inline int64_t RowsPerTask(int64_t hidden) { return std::max<int64_t>(1, kTaskElements / hidden); }

}  // namespace normserve::kernels::cpu

#endif  // NORMSERVE_KERNELS_CPU_TASK_SIZE_H_
