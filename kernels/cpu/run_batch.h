// Running a whole batch on the CPU: cut it into tasks of rows, run the row
// kernels of row_kernels.h on a RowPool, and (backward) reduce grad_weight and
// grad_bias deterministically.
//
// Forward tasks are ranges of rows of one segment; a row's result does not
// depend on which task or thread computes it.
//
// Backward reduction: each segment's rows are cut into fixed chunks of
// kGradChunkRows rows counted from the segment's first row, whatever the
// thread count or the other segments of the batch. Each chunk sums its rows
// into fp32 partials (rows in order); the partials are then summed in chunk
// order in double and rounded to fp32 once. grad_weight and grad_bias are
// therefore bitwise the same run to run and whether the segment is alone or
// batched.
#ifndef NORMSERVE_KERNELS_CPU_RUN_BATCH_H_
#define NORMSERVE_KERNELS_CPU_RUN_BATCH_H_

#include <cstdint>

#include "normserve/kernels/batch.h"
#include "row_pool.h"

namespace normserve::kernels::cpu {

inline constexpr int64_t kGradChunkRows = 32;

// Both take a batch that passed ValidateForwardBatch / ValidateBackwardBatch.
void RunForward(RowPool& pool, const ForwardBatch& batch);
void RunBackward(RowPool& pool, const BackwardBatch& batch);

}  // namespace normserve::kernels::cpu

#endif  // NORMSERVE_KERNELS_CPU_RUN_BATCH_H_
