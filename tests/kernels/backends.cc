#include "backends.h"

namespace normserve::kernels_test {

std::vector<std::string> BackendNames() { return {"cpu", "cuda"}; }

absl::StatusOr<std::unique_ptr<Backend>> MakeBackendByName(const std::string& name) {
  if (name == "cpu") return kernels::MakeCpuBackend({.threads = 2});
  if (name == "cuda") {
    if (kernels::CudaDeviceCount() == 0) return absl::UnavailableError("no CUDA device");
    return kernels::MakeCudaBackend({.device = 0});
  }
  return absl::InvalidArgumentError("unknown backend " + name);
}

}  // namespace normserve::kernels_test
