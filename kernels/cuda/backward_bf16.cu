// Backward kernel instances for one storage type (see dispatch.cuh).
#include "backward_launch.cuh"
#include "typed_launch.h"

namespace normserve::kernels::cuda {

cudaError_t LaunchBackwardBF16(const BackwardArgs& args, cudaStream_t stream) {
  return LaunchBackwardTyped<__nv_bfloat16>(args, stream);
}

int BackwardResidentBlocksBF16(const RowLayout& layout, int64_t hidden, int sms) {
  return BackwardResidentBlocks<__nv_bfloat16>(layout, hidden, sms);
}

StageOneOccupancy BackwardStageOneOccupancyBF16(int64_t hidden, const BackwardLaunchKind& kind) {
  return StageOneOccupancyOf<__nv_bfloat16>(DType::kBF16, hidden, kind);
}

}  // namespace normserve::kernels::cuda
