// Backward kernel instances for one storage type (see dispatch.cuh).
#include "backward_launch.cuh"
#include "typed_launch.h"

namespace normserve::kernels::cuda {

cudaError_t LaunchBackwardF16(const BackwardArgs& args, cudaStream_t stream) {
  return LaunchBackwardTyped<__half>(args, stream);
}

int BackwardBlocksPerSmF16(const RowLayout& layout, int64_t hidden) {
  return BackwardBlocksPerSm<__half>(layout, hidden);
}

}  // namespace normserve::kernels::cuda
