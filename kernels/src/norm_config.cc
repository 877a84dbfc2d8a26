#include "normserve/kernels/norm_config.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace normserve::kernels {

absl::Status ValidateNormConfig(const NormConfig& config) {
  if (!std::isfinite(config.eps) || config.eps < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("eps must be finite and >= 0, got ", config.eps));
  }
  if (config.c.has_value() && !std::isfinite(*config.c)) {
    return absl::InvalidArgumentError(absl::StrCat("c must be finite, got ", *config.c));
  }
  if (!(config.partial > 0.0 && config.partial <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("partial must be in (0, 1], got ", config.partial));
  }
  return absl::OkStatus();
}

}  // namespace normserve::kernels
