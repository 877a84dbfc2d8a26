// Batches that break the contract of batch.h are refused with
// INVALID_ARGUMENT by every backend, before any output is written.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "norm_case.h"
#include "suite_params.h"

namespace normserve::kernels_test {
namespace {

using kernels::BackwardBatch;
using kernels::DType;
using kernels::ForwardBatch;

class ValidationTest : public BackendTest<> {};

NormCase ForwardCase() {
  NormCase c;
  c.hidden = 16;
  c.segment_rows = {2};
  c.residual = c.residual_out = c.stats_out = true;
  return c;
}

TEST_P(ValidationTest, InvalidForwardBatchesAreInvalidArgument) {
  const std::vector<std::pair<const char*, std::function<void(ForwardBatch&)>>> breakages = {
      {"hidden 0", [](ForwardBatch& b) { b.hidden = 0; }},
      {"hidden -3", [](ForwardBatch& b) { b.hidden = -3; }},
      {"missing x", [](ForwardBatch& b) { b.segments[0].x = nullptr; }},
      {"missing out", [](ForwardBatch& b) { b.segments[0].out = nullptr; }},
      {"negative rows", [](ForwardBatch& b) { b.segments[0].rows = -1; }},
      {"partial 0", [](ForwardBatch& b) { b.config.partial = 0.0; }},
      {"partial 1.5", [](ForwardBatch& b) { b.config.partial = 1.5; }},
      {"negative eps", [](ForwardBatch& b) { b.config.eps = -1e-5f; }},
      {"NaN eps", [](ForwardBatch& b) { b.config.eps = NAN; }},
      {"infinite c", [](ForwardBatch& b) { b.config.c = INFINITY; }},
      {"fp16 residual in bf16 batch",
       [](ForwardBatch& b) {
         b.dtype = DType::kBF16;
         b.residual_dtype = DType::kF16;
       }},
  };
  for (const auto& [name, breakage] : breakages) {
    SCOPED_TRACE(name);
    const NormCase c = ForwardCase();
    std::mt19937_64 rng(41);
    ForwardData data = MakeForwardData(c, rng);
    ForwardBatch batch = data.Batch(c);
    breakage(batch);
    EXPECT_EQ(backend().Forward(batch).code(), absl::StatusCode::kInvalidArgument);
    for (double v : data.segments[0].out.Values()) ASSERT_TRUE(std::isnan(v)) << "out written";
  }
}

TEST_P(ValidationTest, InvalidBackwardBatchesAreInvalidArgument) {
  const std::vector<std::pair<const char*, std::function<void(BackwardBatch&)>>> breakages = {
      {"hidden 0", [](BackwardBatch& b) { b.hidden = 0; }},
      {"missing x", [](BackwardBatch& b) { b.segments[0].x = nullptr; }},
      {"missing grad_out", [](BackwardBatch& b) { b.segments[0].grad_out = nullptr; }},
      {"missing grad_in", [](BackwardBatch& b) { b.segments[0].grad_in = nullptr; }},
      {"mean without rstd", [](BackwardBatch& b) { b.segments[0].rstd = nullptr; }},
      {"rstd without mean", [](BackwardBatch& b) { b.segments[0].mean = nullptr; }},
      {"negative rows", [](BackwardBatch& b) { b.segments[0].rows = -2; }},
      {"partial -0.5", [](BackwardBatch& b) { b.config.partial = -0.5; }},
      {"fp16 residual in bf16 batch",
       [](BackwardBatch& b) {
         b.dtype = DType::kBF16;
         b.residual_dtype = DType::kF16;
       }},
  };
  for (const auto& [name, breakage] : breakages) {
    SCOPED_TRACE(name);
    NormCase c;
    c.hidden = 16;
    c.segment_rows = {2};
    c.saved_stats = c.grad_weight = true;
    std::mt19937_64 rng(42);
    BackwardData data = MakeBackwardData(c, rng);
    BackwardBatch batch = data.Batch(c);
    breakage(batch);
    EXPECT_EQ(backend().Backward(batch).code(), absl::StatusCode::kInvalidArgument);
    for (double v : data.segments[0].grad_in.Values()) {
      ASSERT_TRUE(std::isnan(v)) << "grad_in written";
    }
  }
}

TEST_P(ValidationTest, EmptyBatchesAndEmptySegmentsAreValid) {
  std::mt19937_64 rng(43);
  NormCase c;
  c.hidden = 16;
  c.segment_rows = {2};
  c.grad_weight = c.grad_bias = true;
  ForwardData forward = MakeForwardData(c, rng);
  ForwardBatch empty_forward = forward.Batch(c);
  empty_forward.segments.clear();
  EXPECT_TRUE(backend().Forward(empty_forward).ok());
  ForwardBatch zero_rows = forward.Batch(c);
  zero_rows.segments[0].rows = 0;
  EXPECT_TRUE(backend().Forward(zero_rows).ok());

  // A zero-row segment's grad_weight / grad_bias are sums over no rows: 0.
  BackwardData backward = MakeBackwardData(c, rng);
  BackwardBatch batch = backward.Batch(c);
  batch.segments[0].rows = 0;
  ASSERT_TRUE(backend().Backward(batch).ok());
  for (double v : backward.segments[0].grad_weight.Values()) EXPECT_EQ(v, 0.0);
  for (double v : backward.segments[0].grad_bias.Values()) EXPECT_EQ(v, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Kernels, ValidationTest,
                         ::testing::Combine(::testing::ValuesIn(BackendNames())),
                         [](const ::testing::TestParamInfo<std::tuple<std::string>>& info) {
                           return std::get<0>(info.param);
                         });

}  // namespace
}  // namespace normserve::kernels_test
