// An independent float64 reference for normserve's kernels: seed 004's forward
// and backward (with seed 003's partial statistic), written directly from the
// formulas with plain loops over doubles. It shares no code with any backend;
// tests compare backends against it.
//
//   reference::ForwardInputs in{.rows = 2, .hidden = 8, .x = ..., .weight = ...};
//   reference::ForwardOutputs out = reference::Forward(config, in);
//
// Vectors are row-major [rows, hidden] (weight, bias: [hidden]); an empty
// optional vector means "absent" with the seed's meaning (y = 0, w = 1, b = 0,
// incoming residual gradient = 0).
#ifndef NORMSERVE_TESTS_REFERENCE_REFERENCE_H_
#define NORMSERVE_TESTS_REFERENCE_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "normserve/kernels/norm_config.h"

namespace normserve::reference {

using kernels::NormConfig;

struct ForwardInputs {
  int64_t rows = 0;
  int64_t hidden = 0;
  std::vector<double> x;       // required
  std::vector<double> y;       // optional residual branch
  std::vector<double> weight;  // optional
  std::vector<double> bias;    // optional
};

struct ForwardOutputs {
  std::vector<double> out;       // o
  std::vector<double> residual;  // p = x + y
  std::vector<double> mean;      // [rows], mean of p (0 for RMSNorm)
  std::vector<double> rstd;      // [rows], 1 / sigma (sigma includes eps)
};

ForwardOutputs Forward(const NormConfig& config, const ForwardInputs& in);

struct BackwardInputs {
  int64_t rows = 0;
  int64_t hidden = 0;
  std::vector<double> x;                  // required
  std::vector<double> y;                  // optional
  std::vector<double> weight;             // optional
  std::vector<double> grad_out;           // required: d o
  std::vector<double> grad_residual_out;  // optional: incoming d p
};

struct BackwardOutputs {
  std::vector<double> grad_in;      // d x (= d y) = d p (+ grad_residual_out)
  std::vector<double> grad_weight;  // [hidden], summed over rows
  std::vector<double> grad_bias;    // [hidden], summed over rows
  // |dr_j| / sigma per element: the size of the terms whose difference makes
  // dq (and dx). Where dx is much smaller than these (cancellation, e.g. at
  // hidden 1), a kernel's rounding error is relative to these, not to dx.
  std::vector<double> grad_in_terms;
};

BackwardOutputs Backward(const NormConfig& config, const BackwardInputs& in);

// k = ceil(hidden * partial) clamped to [1, hidden], computed here
// independently of the kernels library.
int64_t ReferenceStatisticLength(const NormConfig& config, int64_t hidden);

}  // namespace normserve::reference

#endif  // NORMSERVE_TESTS_REFERENCE_REFERENCE_H_
