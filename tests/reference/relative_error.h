// How far a kernel's output is from the reference: ||out - ref||_2 / ||ref||_2.
//
// Any NaN or Inf in out (an unwritten, poisoned element, or an overflow) makes
// the error +Inf, so it fails every tolerance. When ref is all zeros the
// result is ||out||_2 (an absolute error).
#ifndef NORMSERVE_TESTS_REFERENCE_RELATIVE_ERROR_H_
#define NORMSERVE_TESTS_REFERENCE_RELATIVE_ERROR_H_

#include <vector>

namespace normserve::reference {

// out and ref must have the same size (otherwise +Inf).
double RelativeError(const std::vector<double>& out, const std::vector<double>& ref);

}  // namespace normserve::reference

#endif  // NORMSERVE_TESTS_REFERENCE_RELATIVE_ERROR_H_
