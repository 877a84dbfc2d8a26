#include "reference.h"

#include <cmath>

namespace normserve::reference {
namespace {

double At(const std::vector<double>& v, size_t i, double absent) {
  return v.empty() ? absent : v[i];
}

// c / sqrt(d), with c = sqrt(d) when the config leaves it unset.
double OutputFactor(const NormConfig& config, int64_t hidden) {
  const double d = static_cast<double>(hidden);
  const double c = config.c.has_value() ? static_cast<double>(*config.c) : std::sqrt(d);
  return c / std::sqrt(d);
}

// One row's forward quantities of seed 004.
struct RowForward {
  std::vector<double> p, q, r;
  double mean = 0.0;
  double sigma = 0.0;
};

RowForward RowForwardOf(const NormConfig& config, int64_t hidden, const std::vector<double>& x,
                        const std::vector<double>& y, size_t offset) {
  RowForward row;
  const auto d = static_cast<size_t>(hidden);
  const auto k = static_cast<size_t>(ReferenceStatisticLength(config, hidden));
  row.p.resize(d);
  for (size_t i = 0; i < d; ++i) row.p[i] = x[offset + i] + At(y, offset + i, 0.0);
  if (config.center) {
    double sum = 0.0;
    for (size_t i = 0; i < d; ++i) sum += row.p[i];
    row.mean = sum / static_cast<double>(d);
  }
  row.q.resize(d);
  for (size_t i = 0; i < d; ++i) row.q[i] = row.p[i] - row.mean;
  double sum_sq = 0.0;
  for (size_t i = 0; i < k; ++i) sum_sq += row.q[i] * row.q[i];
  row.sigma = std::sqrt(sum_sq / static_cast<double>(k) + static_cast<double>(config.eps));
  row.r.resize(d);
  for (size_t i = 0; i < d; ++i) row.r[i] = row.q[i] / row.sigma;
  return row;
}

}  // namespace

int64_t ReferenceStatisticLength(const NormConfig& config, int64_t hidden) {
  auto k = static_cast<int64_t>(std::ceil(static_cast<double>(hidden) * config.partial));
  if (k < 1) k = 1;
  if (k > hidden) k = hidden;
  return k;
}

ForwardOutputs Forward(const NormConfig& config, const ForwardInputs& in) {
  const auto d = static_cast<size_t>(in.hidden);
  const auto rows = static_cast<size_t>(in.rows);
  const double factor = OutputFactor(config, in.hidden);
  ForwardOutputs out;
  out.out.resize(rows * d);
  out.residual.resize(rows * d);
  out.mean.resize(rows);
  out.rstd.resize(rows);
  for (size_t row = 0; row < rows; ++row) {
    const size_t offset = row * d;
    const RowForward f = RowForwardOf(config, in.hidden, in.x, in.y, offset);
    for (size_t i = 0; i < d; ++i) {
      // o = (c / sqrt(d)) * r (.) w + b
      out.out[offset + i] = factor * f.r[i] * At(in.weight, i, 1.0) + At(in.bias, i, 0.0);
      out.residual[offset + i] = f.p[i];
    }
    out.mean[row] = f.mean;
    out.rstd[row] = 1.0 / f.sigma;
  }
  return out;
}

BackwardOutputs Backward(const NormConfig& config, const BackwardInputs& in) {
  const auto d = static_cast<size_t>(in.hidden);
  const auto rows = static_cast<size_t>(in.rows);
  const auto k = static_cast<size_t>(ReferenceStatisticLength(config, in.hidden));
  const double factor = OutputFactor(config, in.hidden);
  BackwardOutputs out;
  out.grad_in.resize(rows * d);
  out.grad_weight.assign(d, 0.0);
  out.grad_bias.assign(d, 0.0);
  out.grad_in_terms.resize(rows * d);
  std::vector<double> dr(d), dq(d);
  for (size_t row = 0; row < rows; ++row) {
    const size_t offset = row * d;
    const RowForward f = RowForwardOf(config, in.hidden, in.x, in.y, offset);
    for (size_t i = 0; i < d; ++i) {
      const double g = in.grad_out[offset + i];
      out.grad_bias[i] += g;                       // db = do
      out.grad_weight[i] += g * factor * f.r[i];   // dw = do (.) (c / sqrt(d)) r
      dr[i] = g * factor * At(in.weight, i, 1.0);  // dr = do (.) (c / sqrt(d)) w
    }
    // Seed 004: dq = (1 / sigma) (dr - (r . dr) r / d). With the partial
    // statistic sigma depends on q_0 .. q_{k-1} only, d sigma / d q_j =
    // [j < k] q_j / (k sigma), hence
    // dq_j = (1 / sigma) (dr_j - [j < k] r_j (r . dr) / k).
    double r_dot_dr = 0.0;
    for (size_t i = 0; i < d; ++i) r_dot_dr += f.r[i] * dr[i];
    for (size_t j = 0; j < d; ++j) {
      const double projection = j < k ? f.r[j] * r_dot_dr / static_cast<double>(k) : 0.0;
      dq[j] = (dr[j] - projection) / f.sigma;
      out.grad_in_terms[offset + j] = std::fabs(dr[j]) / f.sigma;
    }
    // dp = dq - mean(dq) for LayerNorm, dq for RMSNorm.
    double dq_mean = 0.0;
    if (config.center) {
      for (size_t j = 0; j < d; ++j) dq_mean += dq[j];
      dq_mean /= static_cast<double>(d);
    }
    // dx = dy = dp (+ dr of the fused residual update).
    for (size_t j = 0; j < d; ++j) {
      out.grad_in[offset + j] = dq[j] - dq_mean + At(in.grad_residual_out, offset + j, 0.0);
    }
  }
  return out;
}

}  // namespace normserve::reference
