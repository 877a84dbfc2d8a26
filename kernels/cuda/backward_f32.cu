// Backward kernel instances for one storage type (see dispatch.cuh).
#include "backward_launch.cuh"
#include "typed_launch.h"

namespace normserve::kernels::cuda {

cudaError_t LaunchBackwardF32(const BackwardArgs& args, cudaStream_t stream) {
  return LaunchBackwardTyped<float>(args, stream);
}

int BackwardResidentBlocksF32(const RowLayout& layout, int64_t hidden, int sms) {
  return BackwardResidentBlocks<float>(layout, hidden, sms);
}

StageOneOccupancy BackwardStageOneOccupancyF32(int64_t hidden, const BackwardLaunchKind& kind) {
  return StageOneOccupancyOf<float>(DType::kF32, hidden, kind);
}

}  // namespace normserve::kernels::cuda
