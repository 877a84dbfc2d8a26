// Forward kernel instances for one storage type (see dispatch.cuh).
#include "forward_launch.cuh"
#include "typed_launch.h"

namespace normserve::kernels::cuda {

cudaError_t LaunchForwardF16(const ForwardArgs& args, cudaStream_t stream) {
  return LaunchForwardTyped<__half>(args, stream);
}

}  // namespace normserve::kernels::cuda
