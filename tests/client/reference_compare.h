// Helpers of the client integration tests: random inputs, and comparison of
// returned tensors with the float64 reference (tests/reference).
#ifndef NORMSERVE_TESTS_CLIENT_REFERENCE_COMPARE_H_
#define NORMSERVE_TESTS_CLIENT_REFERENCE_COMPARE_H_

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "normserve/v1/normserve.pb.h"
#include "reference.h"

namespace normserve::client_test {

// n normal(mean, stddev) values from `seed`.
std::vector<float> RandomValues(size_t n, uint32_t seed, float mean = 0, float stddev = 1);

// The tensor's elements widened to double (exactly).
std::vector<double> ToDoubles(const v1::Tensor& tensor);
std::vector<double> ToDoubles(const std::vector<float>& values);

// The reference's config for a wire config.
reference::NormConfig ReferenceConfig(const v1::NormConfig& config);

// Forward of a wire request by the reference (inputs read back from the
// request's own tensors, so half-precision rounding of inputs is included).
reference::ForwardOutputs ReferenceForward(const v1::ForwardRequest& request);
reference::BackwardOutputs ReferenceBackward(const v1::BackwardRequest& request);

// |got - want| <= atol + rtol * |want| element-wise, sizes equal.
::testing::AssertionResult AllClose(const v1::Tensor& got, const std::vector<double>& want,
                                    double atol, double rtol);

}  // namespace normserve::client_test

#endif  // NORMSERVE_TESTS_CLIENT_REFERENCE_COMPARE_H_
