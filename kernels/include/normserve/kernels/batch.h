// What one kernel launch computes: a batch of row segments sharing one
// configuration, hidden size, dtype and weights.
//
// A segment is one caller's rows. The server batches requests from several
// callers into one launch; each segment keeps its own input and output
// pointers, so no caller's rows are copied next to another's on the host and
// backward reductions (grad_weight, grad_bias) stay per segment.
//
// All pointers are host pointers to row-major [rows, hidden] tensors of the
// batch's dtype unless a field says otherwise. Optional pointers are nullptr
// when absent. Row statistics are fp32 arrays of length rows.
#ifndef NORMSERVE_KERNELS_BATCH_H_
#define NORMSERVE_KERNELS_BATCH_H_

#include <cstdint>
#include <vector>

#include "normserve/kernels/dtype.h"
#include "normserve/kernels/norm_config.h"

namespace normserve::kernels {

struct ForwardSegment {
  int64_t rows = 0;
  const void* x = nullptr;       // input, required
  const void* y = nullptr;       // residual branch, optional
  void* out = nullptr;           // o, required
  void* residual_out = nullptr;  // p = x + y in residual_dtype; optional
  float* mean = nullptr;         // per-row mean of p (0 for RMSNorm); optional
  float* rstd = nullptr;         // per-row 1 / sigma; optional
};

struct ForwardBatch {
  NormConfig config;
  DType dtype = DType::kF32;           // x, y, out, weight, bias
  DType residual_dtype = DType::kF32;  // residual_out (dtype or kF32)
  int64_t hidden = 0;
  const void* weight = nullptr;  // [hidden], optional (= 1)
  const void* bias = nullptr;    // [hidden], optional (= 0)
  std::vector<ForwardSegment> segments;
};

struct BackwardSegment {
  int64_t rows = 0;
  const void* x = nullptr;         // forward input, required
  const void* y = nullptr;         // forward residual branch, optional
  const void* grad_out = nullptr;  // d o, required
  // Incoming gradient of the forward's residual_out p (fused residual
  // backward), in the batch's residual_dtype; optional (= 0).
  const void* grad_residual_out = nullptr;
  // Saved forward statistics; both or neither. When absent they are
  // recomputed from x (and y).
  const float* mean = nullptr;
  const float* rstd = nullptr;
  void* grad_in = nullptr;       // dx (= dy), required
  float* grad_weight = nullptr;  // fp32 [hidden], summed over this segment's rows; optional
  float* grad_bias = nullptr;    // fp32 [hidden], summed over this segment's rows; optional
};

struct BackwardBatch {
  NormConfig config;
  DType dtype = DType::kF32;           // x, y, grad_out, grad_in, weight
  DType residual_dtype = DType::kF32;  // grad_residual_out
  int64_t hidden = 0;
  const void* weight = nullptr;  // [hidden], optional (= 1)
  std::vector<BackwardSegment> segments;
};

// Total rows over all segments.
template <typename Batch>
int64_t TotalRows(const Batch& batch) {
  int64_t rows = 0;
  for (const auto& segment : batch.segments) rows += segment.rows;
  return rows;
}

}  // namespace normserve::kernels

#endif  // NORMSERVE_KERNELS_BATCH_H_
