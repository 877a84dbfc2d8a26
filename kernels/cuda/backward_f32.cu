// Backward kernel instances for one storage type (see dispatch.cuh).
#include "backward_launch.cuh"
#include "typed_launch.h"

namespace normserve::kernels::cuda {

cudaError_t LaunchBackwardF32(const BackwardArgs& args, cudaStream_t stream) {
  return LaunchBackwardTyped<float>(args, stream);
}

int BackwardBlocksPerSmF32(const RowLayout& layout, int64_t hidden) {
  return BackwardBlocksPerSm<float>(layout, hidden);
}

}  // namespace normserve::kernels::cuda
