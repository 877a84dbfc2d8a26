#include "reference_compare.h"

#include <cmath>
#include <random>

#include "normserve/client/tensor.h"

namespace normserve::client_test {

std::vector<float> RandomValues(size_t n, uint32_t seed, float mean, float stddev) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(mean, stddev);
  std::vector<float> out(n);
  for (float& v : out) v = dist(rng);
  return out;
}

std::vector<double> ToDoubles(const v1::Tensor& tensor) {
  if (tensor.data().empty()) return {};
  absl::StatusOr<std::vector<float>> values = client::ToFloats(tensor);
  EXPECT_TRUE(values.ok()) << values.status();
  return values.ok() ? ToDoubles(*values) : std::vector<double>();
}

std::vector<double> ToDoubles(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

reference::NormConfig ReferenceConfig(const v1::NormConfig& config) {
  reference::NormConfig out;
  out.center = config.kind() == v1::LAYER_NORM;
  if (config.has_eps()) out.eps = config.eps();
  if (config.has_c()) out.c = config.c();
  if (config.has_partial()) out.partial = config.partial();
  return out;
}

reference::ForwardOutputs ReferenceForward(const v1::ForwardRequest& request) {
  reference::ForwardInputs in;
  in.hidden = request.x().shape(request.x().shape_size() - 1);
  in.x = ToDoubles(request.x());
  in.rows = static_cast<int64_t>(in.x.size()) / in.hidden;
  in.y = ToDoubles(request.residual());
  in.weight = ToDoubles(request.params().weight());
  in.bias = ToDoubles(request.params().bias());
  return reference::Forward(ReferenceConfig(request.config()), in);
}

reference::BackwardOutputs ReferenceBackward(const v1::BackwardRequest& request) {
  reference::BackwardInputs in;
  in.hidden = request.x().shape(request.x().shape_size() - 1);
  in.x = ToDoubles(request.x());
  in.rows = static_cast<int64_t>(in.x.size()) / in.hidden;
  in.y = ToDoubles(request.residual());
  in.weight = ToDoubles(request.params().weight());
  in.grad_out = ToDoubles(request.grad_output());
  in.grad_residual_out = ToDoubles(request.grad_residual_out());
  return reference::Backward(ReferenceConfig(request.config()), in);
}

::testing::AssertionResult AllClose(const v1::Tensor& got, const std::vector<double>& want,
                                    double atol, double rtol) {
  const std::vector<double> values = ToDoubles(got);
  if (values.size() != want.size()) {
    return ::testing::AssertionFailure()
           << "size " << values.size() << " != expected " << want.size();
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const double tolerance = atol + rtol * std::abs(want[i]);
    if (!(std::abs(values[i] - want[i]) <= tolerance)) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << values[i] << ", want "
                                           << want[i] << " (tolerance " << tolerance << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace normserve::client_test
