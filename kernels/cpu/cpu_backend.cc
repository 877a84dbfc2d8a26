// The CPU backend: validation, then the batch runners of run_batch.h on a
// pool of options.threads threads.
#include <memory>
#include <string>
#include <thread>

#include "normserve/kernels/backend.h"
#include "row_pool.h"
#include "run_batch.h"

namespace normserve::kernels {
namespace {

int ResolveThreads(int threads) {
  if (threads > 0) return threads;
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware == 0 ? 1 : static_cast<int>(hardware);
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options) : pool_(ResolveThreads(options.threads)) {}

  std::string Describe() const override { return "cpu"; }

  absl::Status Forward(const ForwardBatch& batch) override {
    if (absl::Status status = ValidateForwardBatch(batch); !status.ok()) return status;
    cpu::RunForward(pool_, batch);
    return absl::OkStatus();
  }

  absl::Status Backward(const BackwardBatch& batch) override {
    if (absl::Status status = ValidateBackwardBatch(batch); !status.ok()) return status;
    cpu::RunBackward(pool_, batch);
    return absl::OkStatus();
  }

 private:
  // Shared by concurrent Forward / Backward calls; RowPool is thread-safe.
  cpu::RowPool pool_;
};

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace normserve::kernels
