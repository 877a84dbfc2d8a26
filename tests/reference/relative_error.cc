#include "relative_error.h"

#include <cmath>
#include <limits>

namespace normserve::reference {

double RelativeError(const std::vector<double>& out, const std::vector<double>& ref) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (out.size() != ref.size()) return kInf;
  double diff_sq = 0.0;
  double ref_sq = 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) return kInf;
    const double diff = out[i] - ref[i];
    diff_sq += diff * diff;
    ref_sq += ref[i] * ref[i];
  }
  if (ref_sq == 0.0) return std::sqrt(diff_sq);
  return std::sqrt(diff_sq / ref_sq);
}

}  // namespace normserve::reference
