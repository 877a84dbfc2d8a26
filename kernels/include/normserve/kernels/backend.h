// The compute library's one interface: a Backend runs forward and backward
// normalization batches (see batch.h for what a batch is).
//
// Two implementations: the CPU backend (multi-threaded over rows, always
// available) and the CUDA backend (one GPU; available when the library was
// built with CUDA and a device is present).
//
//   auto backend = normserve::kernels::MakeCpuBackend({.threads = 2});
//   ForwardBatch batch = ...;
//   absl::Status status = (*backend)->Forward(batch);
//
// Guarantees, for every backend:
//  - A row's outputs depend only on that row and the batch's configuration and
//    weights: bitwise the same whether the row is computed alone or in a batch
//    of any size or composition.
//  - grad_weight / grad_bias are deterministic (bitwise identical run to run)
//    and depend only on the segment's own rows.
//  - Forward / Backward are thread-safe: several threads may call them at once.
#ifndef NORMSERVE_KERNELS_BACKEND_H_
#define NORMSERVE_KERNELS_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "normserve/kernels/batch.h"

namespace normserve::kernels {

class Backend {
 public:
  virtual ~Backend() = default;

  // "cpu" or "cuda:<device index> (<device name>)", for logs.
  virtual std::string Describe() const = 0;

  // Computes every segment of the batch. INVALID_ARGUMENT for a batch that
  // breaks the contract of batch.h (missing required pointer, hidden < 1,
  // bad config); INTERNAL for a device failure.
  virtual absl::Status Forward(const ForwardBatch& batch) = 0;
  virtual absl::Status Backward(const BackwardBatch& batch) = 0;
};

struct CpuBackendOptions {
  // Worker threads over rows; 0 means std::thread::hardware_concurrency().
  int threads = 0;
};
std::unique_ptr<Backend> MakeCpuBackend(const CpuBackendOptions& options);

struct CudaBackendOptions {
  int device = 0;
};
// UNAVAILABLE when the library was built without CUDA, when no GPU is present
// (cudaGetDeviceCount failing counts as "no GPU") or the index is out of range.
absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(const CudaBackendOptions& options);

// Number of usable GPUs: 0 without CUDA support or without a device.
int CudaDeviceCount();

// Checks a batch against the contract of batch.h; shared by all backends.
absl::Status ValidateForwardBatch(const ForwardBatch& batch);
absl::Status ValidateBackwardBatch(const BackwardBatch& batch);

}  // namespace normserve::kernels

#endif  // NORMSERVE_KERNELS_BACKEND_H_
