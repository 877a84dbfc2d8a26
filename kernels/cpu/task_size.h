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

// Rows per task for rows of `hidden` elements (at least 1).
inline int64_t RowsPerTask(int64_t hidden) { return std::max<int64_t>(1, kTaskElements / hidden); }

}  // namespace normserve::kernels::cpu

#endif  // NORMSERVE_KERNELS_CPU_TASK_SIZE_H_
