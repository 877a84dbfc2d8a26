// The contract of batch.h, checked once for every backend.
#include "absl/strings/str_cat.h"
#include "normserve/kernels/backend.h"

namespace normserve::kernels {
namespace {

absl::Status ValidateCommon(const NormConfig& config, int64_t hidden, DType residual_dtype,
                            DType dtype) {
  if (hidden < 1) {
    return absl::InvalidArgumentError(absl::StrCat("hidden must be >= 1, got ", hidden));
  }
  if (residual_dtype != dtype && residual_dtype != DType::kF32) {
    return absl::InvalidArgumentError(absl::StrCat("residual dtype must be ", DTypeName(dtype),
                                                   " or fp32, got ", DTypeName(residual_dtype)));
  }
  return ValidateNormConfig(config);
}

absl::Status Missing(size_t segment, const char* field) {
  return absl::InvalidArgumentError(absl::StrCat("segment ", segment, ": ", field, " is required"));
}

}  // namespace

absl::Status ValidateForwardBatch(const ForwardBatch& batch) {
  if (auto status = ValidateCommon(batch.config, batch.hidden, batch.residual_dtype, batch.dtype);
      !status.ok()) {
    return status;
  }
  for (size_t i = 0; i < batch.segments.size(); ++i) {
    const ForwardSegment& segment = batch.segments[i];
    if (segment.rows < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("segment ", i, ": rows must be >= 0, got ", segment.rows));
    }
    if (segment.x == nullptr) return Missing(i, "x");
    if (segment.out == nullptr) return Missing(i, "out");
  }
  return absl::OkStatus();
}

absl::Status ValidateBackwardBatch(const BackwardBatch& batch) {
  if (auto status = ValidateCommon(batch.config, batch.hidden, batch.residual_dtype, batch.dtype);
      !status.ok()) {
    return status;
  }
  for (size_t i = 0; i < batch.segments.size(); ++i) {
    const BackwardSegment& segment = batch.segments[i];
    if (segment.rows < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("segment ", i, ": rows must be >= 0, got ", segment.rows));
    }
    if (segment.x == nullptr) return Missing(i, "x");
    if (segment.grad_out == nullptr) return Missing(i, "grad_out");
    if (segment.grad_in == nullptr) return Missing(i, "grad_in");
    if ((segment.mean == nullptr) != (segment.rstd == nullptr)) {
      return absl::InvalidArgumentError(
          absl::StrCat("segment ", i, ": saved mean and rstd go together"));
    }
  }
  return absl::OkStatus();
}

}  // namespace normserve::kernels
