// Backward kernel instances for one storage type (see dispatch.cuh).
#include "backward_launch.cuh"
#include "typed_launch.h"

namespace normserve::kernels::cuda {

cudaError_t LaunchBackwardF16(const BackwardArgs& args, cudaStream_t stream) {
  return LaunchBackwardTyped<__half>(args, stream);
}

int BackwardResidentBlocksF16(const RowLayout& layout, int64_t hidden, int sms) {
  return BackwardResidentBlocks<__half>(layout, hidden, sms);
}

StageOneOccupancy BackwardStageOneOccupancyF16(int64_t hidden, const BackwardLaunchKind& kind) {
  return StageOneOccupancyOf<__half>(DType::kF16, hidden, kind);
}

}  // namespace normserve::kernels::cuda
