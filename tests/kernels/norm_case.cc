#include "norm_case.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "relative_error.h"

namespace normserve::kernels_test {
namespace {

using reference::RelativeError;

void* Ptr(HostTensor& t, bool present) { return present ? t.data() : nullptr; }
const float* FloatPtr(HostTensor& t, bool present) {
  return present ? static_cast<const float*>(t.data()) : nullptr;
}

std::vector<double> ValuesIf(const HostTensor& t, bool present) {
  return present ? t.Values() : std::vector<double>();
}

// max(1, ||grad_in_terms|| / ||grad_in||): how much smaller dx is than the
// terms it is the difference of. 1 almost everywhere; large at hidden 1, where
// RMSNorm's dx = dy (1 - r^2) / sigma and r^2 is within eps of 1.
double CancellationFactor(const reference::BackwardOutputs& ref) {
  double terms = 0.0;
  double result = 0.0;
  for (size_t i = 0; i < ref.grad_in.size(); ++i) {
    terms += ref.grad_in_terms[i] * ref.grad_in_terms[i];
    result += ref.grad_in[i] * ref.grad_in[i];
  }
  if (result == 0.0) return 1.0;
  return std::max(1.0, std::sqrt(terms / result));
}

}  // namespace

std::string NormCase::Describe() const {
  std::string s = absl::StrCat(kernels::DTypeName(dtype), " d=", hidden, " rows={",
                               absl::StrJoin(segment_rows, ","), "} ", config.center ? "LN" : "RMS",
                               " eps=", config.eps, " p=", config.partial, " c=");
  absl::StrAppend(&s, config.c.has_value() ? absl::StrCat(*config.c) : "-");
  if (weight) absl::StrAppend(&s, " w");
  if (bias) absl::StrAppend(&s, " b");
  if (residual) absl::StrAppend(&s, " y");
  if (residual_out) absl::StrAppend(&s, " p_out(", kernels::DTypeName(residual_dtype), ")");
  if (stats_out) absl::StrAppend(&s, " stats_out");
  if (saved_stats) absl::StrAppend(&s, " saved_stats");
  if (grad_residual_out) absl::StrAppend(&s, " dp_in(", kernels::DTypeName(residual_dtype), ")");
  if (grad_weight) absl::StrAppend(&s, " dw");
  if (grad_bias) absl::StrAppend(&s, " db");
  if (x_mean != 0.5 || x_stddev != 2.0) absl::StrAppend(&s, " x~N(", x_mean, ",", x_stddev, "^2)");
  return s;
}

double Tolerance(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 1e-5;
    case DType::kF16:
      return 6e-4;
    case DType::kBF16:
      return 4e-3;
  }
  return 0.0;
}

kernels::ForwardBatch ForwardData::Batch(const NormCase& c) {
  kernels::ForwardBatch batch;
  batch.config = c.config;
  batch.dtype = c.dtype;
  batch.residual_dtype = c.residual_dtype;
  batch.hidden = c.hidden;
  batch.weight = Ptr(weight, c.weight);
  batch.bias = Ptr(bias, c.bias);
  for (size_t s = 0; s < segments.size(); ++s) {
    ForwardSegmentData& data = segments[s];
    kernels::ForwardSegment segment;
    segment.rows = c.segment_rows[s];
    segment.x = data.x.data();
    segment.y = Ptr(data.y, c.residual);
    segment.out = data.out.data();
    segment.residual_out = Ptr(data.residual_out, c.residual_out);
    segment.mean = static_cast<float*>(Ptr(data.mean, c.stats_out));
    segment.rstd = static_cast<float*>(Ptr(data.rstd, c.stats_out));
    batch.segments.push_back(segment);
  }
  return batch;
}

ForwardData MakeForwardData(const NormCase& c, std::mt19937_64& rng) {
  ForwardData data;
  data.weight = HostTensor::Random(c.dtype, c.hidden, rng, 1.0, 0.5);
  data.bias = HostTensor::Random(c.dtype, c.hidden, rng, 0.0, 1.0);
  for (int64_t rows : c.segment_rows) {
    const int64_t n = rows * c.hidden;
    ForwardSegmentData s;
    s.x = HostTensor::Random(c.dtype, n, rng, c.x_mean, c.x_stddev);
    if (c.residual) s.y = HostTensor::Random(c.dtype, n, rng);
    s.out = HostTensor::Poisoned(c.dtype, n);
    s.residual_out = HostTensor::Poisoned(c.residual_dtype, n);
    s.mean = HostTensor::Poisoned(DType::kF32, rows);
    s.rstd = HostTensor::Poisoned(DType::kF32, rows);
    data.segments.push_back(std::move(s));
  }
  return data;
}

reference::ForwardOutputs ReferenceForward(const NormCase& c, const ForwardData& data,
                                           size_t segment) {
  const ForwardSegmentData& s = data.segments[segment];
  reference::ForwardInputs in;
  in.rows = c.segment_rows[segment];
  in.hidden = c.hidden;
  in.x = s.x.Values();
  in.y = ValuesIf(s.y, c.residual);
  in.weight = ValuesIf(data.weight, c.weight);
  in.bias = ValuesIf(data.bias, c.bias);
  return reference::Forward(c.config, in);
}

kernels::BackwardBatch BackwardData::Batch(const NormCase& c) {
  kernels::BackwardBatch batch;
  batch.config = c.config;
  batch.dtype = c.dtype;
  batch.residual_dtype = c.residual_dtype;
  batch.hidden = c.hidden;
  batch.weight = Ptr(weight, c.weight);
  for (size_t s = 0; s < segments.size(); ++s) {
    BackwardSegmentData& data = segments[s];
    kernels::BackwardSegment segment;
    segment.rows = c.segment_rows[s];
    segment.x = data.x.data();
    segment.y = Ptr(data.y, c.residual);
    segment.grad_out = data.grad_out.data();
    segment.grad_residual_out = Ptr(data.grad_residual_out, c.grad_residual_out);
    segment.mean = FloatPtr(data.mean, c.saved_stats);
    segment.rstd = FloatPtr(data.rstd, c.saved_stats);
    segment.grad_in = data.grad_in.data();
    segment.grad_weight = static_cast<float*>(Ptr(data.grad_weight, c.grad_weight));
    segment.grad_bias = static_cast<float*>(Ptr(data.grad_bias, c.grad_bias));
    batch.segments.push_back(segment);
  }
  return batch;
}

BackwardData MakeBackwardData(const NormCase& c, std::mt19937_64& rng) {
  BackwardData data;
  data.weight = HostTensor::Random(c.dtype, c.hidden, rng, 1.0, 0.5);
  for (int64_t rows : c.segment_rows) {
    const int64_t n = rows * c.hidden;
    BackwardSegmentData s;
    s.x = HostTensor::Random(c.dtype, n, rng, c.x_mean, c.x_stddev);
    if (c.residual) s.y = HostTensor::Random(c.dtype, n, rng);
    s.grad_out = HostTensor::Random(c.dtype, n, rng);
    if (c.grad_residual_out) s.grad_residual_out = HostTensor::Random(c.residual_dtype, n, rng);
    if (c.saved_stats) {
      reference::ForwardInputs in;
      in.rows = rows;
      in.hidden = c.hidden;
      in.x = s.x.Values();
      in.y = ValuesIf(s.y, c.residual);
      const reference::ForwardOutputs f = reference::Forward(c.config, in);
      s.mean = HostTensor::FromValues(DType::kF32, f.mean);
      s.rstd = HostTensor::FromValues(DType::kF32, f.rstd);
    }
    s.grad_in = HostTensor::Poisoned(c.dtype, n);
    s.grad_weight = HostTensor::Poisoned(DType::kF32, c.hidden);
    s.grad_bias = HostTensor::Poisoned(DType::kF32, c.hidden);
    data.segments.push_back(std::move(s));
  }
  return data;
}

reference::BackwardOutputs ReferenceBackward(const NormCase& c, const BackwardData& data,
                                             size_t segment) {
  const BackwardSegmentData& s = data.segments[segment];
  reference::BackwardInputs in;
  in.rows = c.segment_rows[segment];
  in.hidden = c.hidden;
  in.x = s.x.Values();
  in.y = ValuesIf(s.y, c.residual);
  in.weight = ValuesIf(data.weight, c.weight);
  in.grad_out = s.grad_out.Values();
  in.grad_residual_out = ValuesIf(s.grad_residual_out, c.grad_residual_out);
  return reference::Backward(c.config, in);
}

void ExpectForwardMatchesReference(Backend& backend, const NormCase& c, uint64_t seed) {
  SCOPED_TRACE(c.Describe());
  std::mt19937_64 rng(seed);
  ForwardData data = MakeForwardData(c, rng);
  ASSERT_TRUE(backend.Forward(data.Batch(c)).ok());
  for (size_t s = 0; s < data.segments.size(); ++s) {
    SCOPED_TRACE(absl::StrCat("segment ", s));
    const reference::ForwardOutputs ref = ReferenceForward(c, data, s);
    const ForwardSegmentData& out = data.segments[s];
    EXPECT_LE(RelativeError(out.out.Values(), ref.out), Tolerance(c.dtype)) << "out";
    if (c.residual_out) {
      EXPECT_LE(RelativeError(out.residual_out.Values(), ref.residual), Tolerance(c.residual_dtype))
          << "residual_out";
    }
    if (c.stats_out) {
      EXPECT_LE(RelativeError(out.mean.Values(), ref.mean), Tolerance(DType::kF32)) << "mean";
      EXPECT_LE(RelativeError(out.rstd.Values(), ref.rstd), Tolerance(DType::kF32)) << "rstd";
    }
  }
}

void ExpectBackwardMatchesReference(Backend& backend, const NormCase& c, uint64_t seed) {
  SCOPED_TRACE(c.Describe());
  std::mt19937_64 rng(seed);
  BackwardData data = MakeBackwardData(c, rng);
  ASSERT_TRUE(backend.Backward(data.Batch(c)).ok());
  for (size_t s = 0; s < data.segments.size(); ++s) {
    SCOPED_TRACE(absl::StrCat("segment ", s));
    const reference::BackwardOutputs ref = ReferenceBackward(c, data, s);
    const BackwardSegmentData& out = data.segments[s];
    EXPECT_LE(RelativeError(out.grad_in.Values(), ref.grad_in),
              Tolerance(c.dtype) * CancellationFactor(ref))
        << "grad_in";
    if (c.grad_weight) {
      EXPECT_LE(RelativeError(out.grad_weight.Values(), ref.grad_weight), Tolerance(DType::kF32))
          << "grad_weight";
    }
    if (c.grad_bias) {
      EXPECT_LE(RelativeError(out.grad_bias.Values(), ref.grad_bias), Tolerance(DType::kF32))
          << "grad_bias";
    }
  }
}

}  // namespace normserve::kernels_test
