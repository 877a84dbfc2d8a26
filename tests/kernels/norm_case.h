// The kernel suite's harness: a NormCase describes one batch (dtype, hidden,
// segments, config, which optional tensors are present); the harness makes
// random inputs and NaN-poisoned outputs for it, runs a backend, and checks
// every output of every segment against the float64 reference.
//
//   NormCase c{.dtype = DType::kBF16, .hidden = 4096, .segment_rows = {3, 2}};
//   c.config.center = true;
//   ExpectForwardMatchesReference(backend, c, /*seed=*/1);
#ifndef NORMSERVE_TESTS_KERNELS_NORM_CASE_H_
#define NORMSERVE_TESTS_KERNELS_NORM_CASE_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "host_tensor.h"
#include "normserve/kernels/backend.h"
#include "reference.h"

namespace normserve::kernels_test {

using kernels::Backend;
using kernels::DType;
using kernels::NormConfig;
using reference::HostTensor;

struct NormCase {
  DType dtype = DType::kF32;
  DType residual_dtype = DType::kF32;  // residual_out / grad_residual_out
  int64_t hidden = 1;
  std::vector<int64_t> segment_rows = {1};  // rows of each segment
  NormConfig config;
  bool weight = false;
  bool bias = false;               // forward
  bool residual = false;           // y given (forward and backward)
  bool residual_out = false;       // forward: write p = x + y
  bool stats_out = false;          // forward: write mean and rstd
  bool saved_stats = false;        // backward: pass mean and rstd
  bool grad_residual_out = false;  // backward: incoming gradient of p
  bool grad_weight = false;        // backward
  bool grad_bias = false;          // backward
  // x ~ N(x_mean, x_stddev^2). A mean far from 0 against the spread tests
  // LayerNorm's statistics for cancellation.
  double x_mean = 0.5;
  double x_stddev = 2.0;

  // e.g. "bf16 d=4096 rows={3,2} LN eps=1e-05 p=1 c=- w b y p_out(fp32) stats".
  std::string Describe() const;
};

// Relative error allowed for an output stored in dtype: its rounding (plus
// fp32 arithmetic for fp32).
double Tolerance(DType dtype);

struct ForwardSegmentData {
  HostTensor x, y;                           // inputs (y empty unless residual)
  HostTensor out, residual_out, mean, rstd;  // outputs, NaN-poisoned
};

struct ForwardData {
  HostTensor weight, bias;
  std::vector<ForwardSegmentData> segments;

  // A batch pointing at these tensors, with the case's optional ones.
  kernels::ForwardBatch Batch(const NormCase& c);
};

// x ~ N(c.x_mean, c.x_stddev^2) (by default N(0.5, 2^2): an offset, so
// LayerNorm's centering matters), y ~ N(0, 1), weight ~ N(1, 0.5^2), bias ~
// N(0, 1), all rounded to the case's dtype.
ForwardData MakeForwardData(const NormCase& c, std::mt19937_64& rng);

reference::ForwardOutputs ReferenceForward(const NormCase& c, const ForwardData& data,
                                           size_t segment);

struct BackwardSegmentData {
  HostTensor x, y, grad_out, grad_residual_out, mean, rstd;  // inputs
  HostTensor grad_in, grad_weight, grad_bias;                // outputs, NaN-poisoned
};

struct BackwardData {
  HostTensor weight;
  std::vector<BackwardSegmentData> segments;

  kernels::BackwardBatch Batch(const NormCase& c);
};

// Inputs as for forward, grad_out ~ N(0, 1), grad_residual_out ~ N(0, 1);
// saved statistics are the reference's, rounded to fp32.
BackwardData MakeBackwardData(const NormCase& c, std::mt19937_64& rng);

reference::BackwardOutputs ReferenceBackward(const NormCase& c, const BackwardData& data,
                                             size_t segment);

// Run the backend on fresh data and EXPECT every output within Tolerance of
// the reference.
void ExpectForwardMatchesReference(Backend& backend, const NormCase& c, uint64_t seed);
void ExpectBackwardMatchesReference(Backend& backend, const NormCase& c, uint64_t seed);

}  // namespace normserve::kernels_test

#endif  // NORMSERVE_TESTS_KERNELS_NORM_CASE_H_
