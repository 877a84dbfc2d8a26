// Forward kernel instances for one storage type (see dispatch.cuh).
#include "forward_launch.cuh"
#include "typed_launch.h"

namespace normserve::kernels::cuda {

cudaError_t LaunchForwardBF16(const ForwardArgs& args, cudaStream_t stream) {
  return LaunchForwardTyped<__nv_bfloat16>(args, stream);
}

}  // namespace normserve::kernels::cuda
