// Backward kernel instances for one storage type (see dispatch.cuh).
#include "backward_launch.cuh"
#include "typed_launch.h"

namespace normserve::kernels::cuda {

cudaError_t LaunchBackwardF16(const BackwardArgs& args, cudaStream_t stream) {
  return LaunchBackwardTyped<__half>(args, stream);
}

}  // namespace normserve::kernels::cuda
