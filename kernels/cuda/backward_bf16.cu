// Backward kernel instances for one storage type (see dispatch.cuh).
#include "backward_launch.cuh"
#include "typed_launch.h"

namespace normserve::kernels::cuda {

cudaError_t LaunchBackwardBF16(const BackwardArgs& args, cudaStream_t stream) {
  return LaunchBackwardTyped<__nv_bfloat16>(args, stream);
}

int BackwardBlocksPerSmBF16(const RowLayout& layout, int64_t hidden) {
  return BackwardBlocksPerSm<__nv_bfloat16>(layout, hidden);
}

}  // namespace normserve::kernels::cuda
