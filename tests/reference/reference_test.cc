// The reference itself: hand-computed rows, and its backward against float64
// central finite differences of its own forward (with a loss that weights o
// by grad_out and p by grad_residual_out), across LayerNorm / RMSNorm,
// weight, residual, partial statistic, custom c and eps.
#include "reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace normserve::reference {
namespace {

std::vector<double> Normal(size_t n, std::mt19937_64& rng, double mean = 0.0, double sd = 1.0) {
  std::normal_distribution<double> normal(mean, sd);
  std::vector<double> v(n);
  for (double& e : v) e = normal(rng);
  return v;
}

TEST(ReferenceTest, ForwardMatchesHandComputedRows) {
  NormConfig config;
  config.eps = 0.0f;
  ForwardInputs in;
  in.rows = 1;
  in.hidden = 4;
  in.x = {1, 2, 3, 4};
  ForwardOutputs rms = Forward(config, in);
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(rms.out[i], (i + 1) / std::sqrt(7.5));
  EXPECT_DOUBLE_EQ(rms.rstd[0], 1 / std::sqrt(7.5));
  EXPECT_EQ(rms.mean[0], 0.0);

  config.center = true;
  in.bias = {1, 1, 1, 1};
  ForwardOutputs ln = Forward(config, in);
  const double q[] = {-1.5, -0.5, 0.5, 1.5};
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(ln.out[i], q[i] / std::sqrt(1.25) + 1);
  EXPECT_DOUBLE_EQ(ln.mean[0], 2.5);

  // Partial RMSNorm over the first k = ceil(4 * 0.5) = 2 elements, c = 1.
  config.center = false;
  config.partial = 0.5;
  config.c = 1.0f;
  in.bias.clear();
  ForwardOutputs partial = Forward(config, in);
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(partial.out[i], (i + 1) / std::sqrt(2.5) / 2);
}

struct FdCase {
  bool center;
  double partial;
  bool custom_c;
  bool residual;
  bool grad_residual_out;
};

TEST(ReferenceTest, ReferenceBackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(61);
  const FdCase cases[] = {
      {false, 1.0, false, false, false},  {true, 1.0, false, false, false},
      {false, 0.25, true, true, true},    {true, 0.25, true, true, false},
      {true, 0.0625, false, false, true}, {false, 0.5, false, true, false},
  };
  for (const FdCase& fd : cases) {
    for (int64_t hidden : {1, 5, 16}) {
      SCOPED_TRACE(::testing::Message()
                   << "center " << fd.center << " partial " << fd.partial << " hidden " << hidden);
      const int64_t rows = 3;
      const auto n = static_cast<size_t>(rows * hidden);
      NormConfig config;
      config.center = fd.center;
      config.partial = fd.partial;
      config.eps = 1e-2f;
      if (fd.custom_c) config.c = 1.7f;
      ForwardInputs f;
      f.rows = rows;
      f.hidden = hidden;
      f.x = Normal(n, rng, 0.3);
      if (fd.residual) f.y = Normal(n, rng);
      f.weight = Normal(hidden, rng, 1.0, 0.5);
      f.bias = Normal(hidden, rng);
      const std::vector<double> grad_out = Normal(n, rng);
      const std::vector<double> grad_p =
          fd.grad_residual_out ? Normal(n, rng) : std::vector<double>();

      // loss = sum(grad_out * o) + sum(grad_p * p)
      auto loss = [&](const ForwardInputs& in) {
        const ForwardOutputs o = Forward(config, in);
        double l = 0.0;
        for (size_t i = 0; i < n; ++i) l += grad_out[i] * o.out[i];
        for (size_t i = 0; i < grad_p.size(); ++i) l += grad_p[i] * o.residual[i];
        return l;
      };
      auto central = [&](std::vector<double>& v, size_t i) {
        const double h = 1e-6;
        const double saved = v[i];
        v[i] = saved + h;
        ForwardInputs plus = f;
        v[i] = saved - h;
        ForwardInputs minus = f;
        v[i] = saved;
        return (loss(plus) - loss(minus)) / (2 * h);
      };

      BackwardInputs b{.rows = rows,
                       .hidden = hidden,
                       .x = f.x,
                       .y = f.y,
                       .weight = f.weight,
                       .grad_out = grad_out,
                       .grad_residual_out = grad_p};
      const BackwardOutputs grads = Backward(config, b);
      const double tol = 1e-6;
      for (size_t i = 0; i < n; ++i) {
        EXPECT_NEAR(grads.grad_in[i], central(f.x, i), tol) << "dx " << i;
        if (fd.residual) {
          EXPECT_NEAR(grads.grad_in[i], central(f.y, i), tol) << "dy " << i;
        }
      }
      for (size_t i = 0; i < static_cast<size_t>(hidden); ++i) {
        EXPECT_NEAR(grads.grad_weight[i], central(f.weight, i), tol) << "dw " << i;
        EXPECT_NEAR(grads.grad_bias[i], central(f.bias, i), tol) << "db " << i;
      }
    }
  }
}

}  // namespace
}  // namespace normserve::reference
