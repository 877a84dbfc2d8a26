// Forward kernel instances for one storage type (see dispatch.cuh).
#include "forward_launch.cuh"
#include "typed_launch.h"

namespace normserve::kernels::cuda {

cudaError_t LaunchForwardF32(const ForwardArgs& args, cudaStream_t stream) {
  return LaunchForwardTyped<float>(args, stream);
}

}  // namespace normserve::kernels::cuda
