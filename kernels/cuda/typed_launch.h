// Per-dtype launchers, one translation unit each (forward_f32.cu, ...), so the
// template instances compile in parallel. launch.cc picks one by DType.
#ifndef NORMSERVE_KERNELS_CUDA_TYPED_LAUNCH_H_
#define NORMSERVE_KERNELS_CUDA_TYPED_LAUNCH_H_

#include "launch.h"
#include "row_layout.h"

namespace normserve::kernels::cuda {

cudaError_t LaunchForwardF32(const ForwardArgs& args, cudaStream_t stream);
cudaError_t LaunchForwardF16(const ForwardArgs& args, cudaStream_t stream);
cudaError_t LaunchForwardBF16(const ForwardArgs& args, cudaStream_t stream);
cudaError_t LaunchBackwardF32(const BackwardArgs& args, cudaStream_t stream);
cudaError_t LaunchBackwardF16(const BackwardArgs& args, cudaStream_t stream);
cudaError_t LaunchBackwardBF16(const BackwardArgs& args, cudaStream_t stream);
int BackwardResidentBlocksF32(const RowLayout& layout, int64_t hidden, int sms);
int BackwardResidentBlocksF16(const RowLayout& layout, int64_t hidden, int sms);
int BackwardResidentBlocksBF16(const RowLayout& layout, int64_t hidden, int sms);
StageOneOccupancy BackwardStageOneOccupancyF32(int64_t hidden, const BackwardLaunchKind& kind);
StageOneOccupancy BackwardStageOneOccupancyF16(int64_t hidden, const BackwardLaunchKind& kind);
StageOneOccupancy BackwardStageOneOccupancyBF16(int64_t hidden, const BackwardLaunchKind& kind);

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_TYPED_LAUNCH_H_
