// The general normalization of seed 004, with the partial statistic of seed 003.
//
// For each row of length d (the hidden size), with optional residual y:
//   p = x + y                                   (y = 0 when absent)
//   q = p            (RMSNorm, center = false)
//   q = p - mean(p)  (LayerNorm, center = true)
//   sigma = sqrt(sum_{i<k} q_i^2 / k + eps),    k = ceil(d * partial)
//   r = q / sigma
//   o = (c / sqrt(d)) * r (.) w + b             (w = 1, b = 0 when absent)
//
// c defaults to sqrt(d), which makes o the plain LayerNorm / RMSNorm. With
// partial < 1 the statistic is taken over the first k elements only (partial
// RMSNorm) and applied to the whole row; the mean of LayerNorm is always over
// all d elements.
#ifndef NORMSERVE_KERNELS_NORM_CONFIG_H_
#define NORMSERVE_KERNELS_NORM_CONFIG_H_

#include <cmath>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"

namespace normserve::kernels {

struct NormConfig {
  // true: LayerNorm (subtract the row mean); false: RMSNorm.
  bool center = false;
  // Added to the mean square under the root; must be finite and >= 0.
  float eps = 1e-5f;
  // The c of seed 004; unset means sqrt(hidden), i.e. plain LN / RMSNorm.
  // Must be finite when set.
  std::optional<float> c;
  // Fraction p of the row over which sigma is taken, 0 < p <= 1 (seed 003).
  double partial = 1.0;
};

// k = ceil(hidden * partial), computed in double and clamped to [1, hidden]:
// the number of leading elements the statistic sigma is taken over.
inline int64_t StatisticLength(const NormConfig& config, int64_t hidden) {
  auto k = static_cast<int64_t>(std::ceil(static_cast<double>(hidden) * config.partial));
  if (k < 1) k = 1;
  if (k > hidden) k = hidden;
  return k;
}

// c / sqrt(d): the factor applied to r before the weight.
inline float OutputScale(const NormConfig& config, int64_t hidden) {
  if (!config.c.has_value()) return 1.0f;
  return static_cast<float>(*config.c / std::sqrt(static_cast<double>(hidden)));
}

// OK, or INVALID_ARGUMENT naming the offending field and value.
absl::Status ValidateNormConfig(const NormConfig& config);

}  // namespace normserve::kernels

#endif  // NORMSERVE_KERNELS_NORM_CONFIG_H_
