// The CUDA entry points of backend.h for a library built without CUDA.
#include "normserve/kernels/backend.h"

namespace normserve::kernels {

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(const CudaBackendOptions& options) {
  return absl::UnavailableError("built without CUDA");
}

int CudaDeviceCount() { return 0; }

}  // namespace normserve::kernels
