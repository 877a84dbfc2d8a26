// A C entry point to the kernels for Python's ctypes, so that
// bench/cuda/ours_do_bench.py times them with the peers' harness (triton's
// do_bench, torch tensors) beside them, as well as with norm_bench's. Plain
// ops only: weight always, bias for LayerNorm, fp32 dw / db, saved statistics
// in the backward (the forward's), p = x + y saved for the fused backward.
#include <algorithm>
#include <cstdint>

#include "cuda/launch.h"

using normserve::kernels::DType;
namespace cuda = normserve::kernels::cuda;

namespace {

// The fields ForwardArgs and BackwardArgs share.
template <typename Args>
Args ArgsOf(int dtype, int center, int64_t rows, int64_t hidden, float eps) {
  normserve::kernels::NormConfig config;
  config.center = center != 0;
  config.eps = eps;
  Args a;
  a.dtype = a.residual_dtype = static_cast<DType>(dtype);
  a.rows = rows;
  a.hidden = hidden;
  a.norm = cuda::MakeNormScalars(config, hidden);
  return a;
}

}  // namespace

extern "C" {

// Forward: out = norm(x [+ y]) * w [+ b]; residual_out (optional) = x + y;
// rstd / mean (optional) saved. dtype: DType's value. Returns a cudaError_t.
int normserve_forward(int dtype, int center, const void* x, const void* y, const void* w,
                      const void* b, void* out, void* residual_out, float* mean, float* rstd,
                      int64_t rows, int64_t hidden, float eps, void* stream) {
  auto a = ArgsOf<cuda::ForwardArgs>(dtype, center, rows, hidden, eps);
  a.x = x;
  a.y = y;
  a.weight = w;
  a.bias = b;
  a.out = out;
  a.residual_out = residual_out;
  a.mean = mean;
  a.rstd = rstd;
  return cuda::LaunchForward(a, static_cast<cudaStream_t>(stream));
}

// Bytes of workspace normserve_backward (no y) needs for one segment of
// `rows`, of either norm (their layouts may differ: ChooseBackwardRowLayout).
int64_t normserve_backward_workspace(int dtype, int64_t rows, int64_t hidden) {
  int chunks = 0;
  for (const bool center : {false, true}) {
    cuda::SegmentPlan plan;
    plan.rows = rows;
    chunks = std::max(chunks, cuda::PlanBackward(static_cast<DType>(dtype), hidden, true, center,
                                                 /*y=*/false, &plan, 1));
  }
  return static_cast<int64_t>(cuda::BackwardWorkspaceBytes(hidden, chunks));
}

// Backward of one segment with saved statistics: dx, dw (fp32), db (fp32,
// optional); grad_residual_out (optional) is added to dx.
int normserve_backward(int dtype, int center, const void* x, const void* dy,
                       const void* grad_residual_out, const float* mean, const float* rstd,
                       const void* w, void* dx, float* dw, float* db, void* workspace, int64_t rows,
                       int64_t hidden, float eps, void* stream) {
  auto a = ArgsOf<cuda::BackwardArgs>(dtype, center, rows, hidden, eps);
  a.x = x;
  a.grad_out = dy;
  a.grad_residual_out = grad_residual_out;
  a.mean = mean;
  a.rstd = rstd;
  a.weight = w;
  a.grad_in = dx;
  a.grad_weight = dw;
  a.grad_bias = db;
  a.workspace = workspace;
  return cuda::LaunchBackward(a, static_cast<cudaStream_t>(stream));
}

}  // extern "C"
