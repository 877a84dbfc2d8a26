// The identities of the seeds, checked on every backend:
//  - seed 000: LayerNorm(x) = RMSNorm(x - mean(x)) + beta;
//  - seed 003: RMSNorm (also partial, over the first k = ceil(d p) elements)
//    is invariant to scaling its input, when eps = 0;
//  - seed 004: the fused residual chain (p_k, r_k) computes what the naive
//    chain x_k = f_k(norm(x_{k-1})) + x_{k-1} computes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "norm_case.h"
#include "relative_error.h"
#include "suite_params.h"

namespace normserve::kernels_test {
namespace {

using kernels::DType;
using kernels::ForwardBatch;
using kernels::ForwardSegment;
using reference::RelativeError;

class PropertyTest : public BackendTest<DType> {
 protected:
  DType dtype() const { return std::get<1>(GetParam()); }

  // o of a forward batch of one segment over x (and y, residual_out).
  HostTensor RunForward(const NormConfig& config, int64_t rows, int64_t hidden, const HostTensor& x,
                        const HostTensor* y, const HostTensor* weight, const HostTensor* bias,
                        HostTensor* residual_out = nullptr) {
    HostTensor out = HostTensor::Poisoned(dtype(), rows * hidden);
    ForwardBatch batch;
    batch.config = config;
    batch.dtype = dtype();
    batch.residual_dtype = dtype();
    batch.hidden = hidden;
    batch.weight = weight != nullptr ? weight->data() : nullptr;
    batch.bias = bias != nullptr ? bias->data() : nullptr;
    ForwardSegment segment;
    segment.rows = rows;
    segment.x = x.data();
    segment.y = y != nullptr ? y->data() : nullptr;
    segment.out = out.data();
    segment.residual_out = residual_out != nullptr ? residual_out->data() : nullptr;
    batch.segments.push_back(segment);
    EXPECT_TRUE(backend().Forward(batch).ok());
    return out;
  }
};

TEST_P(PropertyTest, LayerNormEqualsRmsNormOfCenteredPlusBias) {
  std::mt19937_64 rng(21);
  for (int64_t hidden : {7, 1000, 4096}) {
    SCOPED_TRACE(hidden);
    const int64_t rows = 5;
    const HostTensor x = HostTensor::Random(dtype(), rows * hidden, rng, 1.5, 2.0);
    const HostTensor weight = HostTensor::Random(dtype(), hidden, rng, 1.0, 0.5);
    const HostTensor bias = HostTensor::Random(dtype(), hidden, rng);
    // x - mean(x), per row, in double, then stored in the dtype.
    std::vector<double> centered = x.Values();
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0.0;
      for (int64_t i = 0; i < hidden; ++i) mean += centered[r * hidden + i];
      mean /= static_cast<double>(hidden);
      for (int64_t i = 0; i < hidden; ++i) centered[r * hidden + i] -= mean;
    }
    NormConfig layer_norm;
    layer_norm.center = true;
    NormConfig rms_norm;
    const std::vector<double> ln =
        RunForward(layer_norm, rows, hidden, x, nullptr, &weight, &bias).Values();
    std::vector<double> rms_plus_bias =
        RunForward(rms_norm, rows, hidden, HostTensor::FromValues(dtype(), centered), nullptr,
                   &weight, nullptr)
            .Values();
    const std::vector<double> b = bias.Values();
    for (int64_t i = 0; i < rows * hidden; ++i) rms_plus_bias[i] += b[i % hidden];
    EXPECT_LE(RelativeError(ln, rms_plus_bias), 3 * Tolerance(dtype()));
  }
}

TEST_P(PropertyTest, RmsNormIsScaleInvariant) {
  std::mt19937_64 rng(22);
  for (double partial : {1.0, 0.0625}) {
    for (int64_t hidden : {7, 1000, 4096}) {
      SCOPED_TRACE(::testing::Message() << "hidden " << hidden << " partial " << partial);
      const int64_t rows = 4;
      NormConfig config;
      config.eps = 0.0f;
      config.partial = partial;
      const HostTensor x = HostTensor::Random(dtype(), rows * hidden, rng);
      const HostTensor weight = HostTensor::Random(dtype(), hidden, rng, 1.0, 0.5);
      const HostTensor o = RunForward(config, rows, hidden, x, nullptr, &weight, nullptr);
      const std::vector<double> values = x.Values();
      // Powers of two scale every intermediate exactly: bitwise the same.
      // (Scaling up only: scaling down could make fp16 inputs subnormal.)
      for (double alpha : {2.0, 8.0}) {
        std::vector<double> scaled = values;
        for (double& v : scaled) v *= alpha;
        const HostTensor o_scaled =
            RunForward(config, rows, hidden, HostTensor::FromValues(dtype(), scaled), nullptr,
                       &weight, nullptr);
        EXPECT_EQ(std::memcmp(o.data(), o_scaled.data(), o.bytes()), 0) << "alpha " << alpha;
      }
      // Any other factor: equal up to rounding of the scaled input.
      for (double alpha : {3.7, 0.013}) {
        std::vector<double> scaled = values;
        for (double& v : scaled) v *= alpha;
        const HostTensor o_scaled =
            RunForward(config, rows, hidden, HostTensor::FromValues(dtype(), scaled), nullptr,
                       &weight, nullptr);
        EXPECT_LE(RelativeError(o_scaled.Values(), o.Values()), 3 * Tolerance(dtype()))
            << "alpha " << alpha;
      }
    }
  }
}

TEST_P(PropertyTest, FusedResidualChainEqualsNaiveChain) {
  std::mt19937_64 rng(23);
  const double a[] = {0.7, -1.3, 2.1};  // f_k(v) = tanh(a_k v)
  auto f = [](double a_k, std::vector<double> v) {
    for (double& e : v) e = std::tanh(a_k * e);
    return v;
  };
  for (bool center : {false, true}) {
    for (int64_t hidden : {7, 1000, 4096}) {
      SCOPED_TRACE(::testing::Message() << "hidden " << hidden << " center " << center);
      const int64_t rows = 3;
      const int64_t n = rows * hidden;
      NormConfig config;
      config.center = center;
      const HostTensor weight = HostTensor::Random(dtype(), hidden, rng, 1.0, 0.5);
      const HostTensor bias = HostTensor::Random(dtype(), hidden, rng);
      const HostTensor x = HostTensor::Random(dtype(), n, rng);

      // Naive: y_k = norm(x_{k-1}); x_k = f_k(y_k) + x_{k-1}.
      HostTensor x_k = x;
      for (double a_k : a) {
        const std::vector<double> y_k =
            RunForward(config, rows, hidden, x_k, nullptr, &weight, &bias).Values();
        std::vector<double> next = f(a_k, y_k);
        const std::vector<double> previous = x_k.Values();
        for (int64_t i = 0; i < n; ++i) next[i] += previous[i];
        x_k = HostTensor::FromValues(dtype(), next);
      }
      const std::vector<double> naive = x_k.Values();

      // Fused: r_k = p_{k-1} + r_{k-1} (residual_out), q_k = norm(r_k),
      // p_k = f_k(q_k); o = p_n + r_n. r_0 = 0: the first call has no y.
      HostTensor p = x;
      HostTensor r;
      bool first = true;
      for (double a_k : a) {
        HostTensor r_next = HostTensor::Poisoned(dtype(), n);
        const std::vector<double> q =
            RunForward(config, rows, hidden, p, first ? nullptr : &r, &weight, &bias, &r_next)
                .Values();
        p = HostTensor::FromValues(dtype(), f(a_k, q));
        r = std::move(r_next);
        first = false;
      }
      std::vector<double> fused = p.Values();
      const std::vector<double> r_n = r.Values();
      for (int64_t i = 0; i < n; ++i) fused[i] += r_n[i];

      EXPECT_LE(RelativeError(fused, naive), 4 * Tolerance(dtype()));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, PropertyTest,
                         ::testing::Combine(::testing::ValuesIn(BackendNames()), AllDTypes()),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, DType>>& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::string(kernels::DTypeName(std::get<1>(info.param)));
                         });

}  // namespace
}  // namespace normserve::kernels_test
