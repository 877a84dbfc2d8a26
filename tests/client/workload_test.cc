#include "normserve/loadgen/workload.h"

#include "gtest/gtest.h"

namespace normserve::loadgen {
namespace {

TEST(WorkloadTest, OpMixWeightsAreNormalized) {
  absl::StatusOr<std::vector<OpWeight>> mix = ParseOpMix("rms_fwd:0.7, ln_bwd:0.3");
  ASSERT_TRUE(mix.ok()) << mix.status();
  ASSERT_EQ(mix->size(), 2u);
  EXPECT_EQ((*mix)[0].op, OpKind::kRmsFwd);
  EXPECT_DOUBLE_EQ((*mix)[0].weight, 0.7);
  EXPECT_EQ((*mix)[1].op, OpKind::kLnBwd);
  absl::StatusOr<std::vector<OpWeight>> even = ParseOpMix("echo,rms_fwd_res:3,ln_fwd:1");
  ASSERT_TRUE(even.ok());
  EXPECT_DOUBLE_EQ((*even)[0].weight, 0.2);
  EXPECT_DOUBLE_EQ((*even)[1].weight, 0.6);
}

TEST(WorkloadTest, BadOpMixesNameTheEntry) {
  for (const char* bad :
       {"", "softmax", "rms_fwd:0", "rms_fwd:-1", "rms_fwd:x", "rms_fwd:1:2", "rms_fwd,rms_fwd"}) {
    absl::StatusOr<std::vector<OpWeight>> mix = ParseOpMix(bad);
    EXPECT_EQ(mix.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(ParseOpMix("softmax").status().message().find("softmax"), absl::string_view::npos);
}

TEST(WorkloadTest, ShapesAndSweepsParse) {
  EXPECT_EQ(*ParseShape("16x4096"), (std::vector<int64_t>{16, 4096}));
  EXPECT_EQ(*ParseShape("2X8x1024"), (std::vector<int64_t>{2, 8, 1024}));
  EXPECT_FALSE(ParseShape("4096").ok());
  EXPECT_FALSE(ParseShape("16x0").ok());
  EXPECT_FALSE(ParseShape("16xx4").ok());

  EXPECT_EQ(ParseSweep("")->kind, Sweep::Kind::kNone);
  absl::StatusOr<Sweep> c = ParseSweep("concurrency:1,2,4");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, Sweep::Kind::kConcurrency);
  EXPECT_EQ(c->values, (std::vector<double>{1, 2, 4}));
  absl::StatusOr<Sweep> r = ParseSweep("rate:100,250.5");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, Sweep::Kind::kRate);
  for (const char* bad :
       {"threads:1", "concurrency", "concurrency:", "concurrency:1.5", "rate:0", "rate:a"}) {
    EXPECT_FALSE(ParseSweep(bad).ok()) << bad;
  }
}

TEST(WorkloadTest, PickerFollowsTheMixProbabilities) {
  OpPicker picker({{OpKind::kRmsFwd, 0.7}, {OpKind::kLnBwd, 0.3}}, 11);
  int counts[2] = {0, 0};
  for (int i = 0; i < 20000; ++i) ++counts[picker.Pick()];
  EXPECT_NEAR(counts[0] / 20000.0, 0.7, 0.02);
  OpPicker single({{OpKind::kEcho, 1.0}}, 1);
  EXPECT_EQ(single.Pick(), 0u);
}

TEST(WorkloadTest, PreparedRequestsCarryTheAdvertisedPayload) {
  const std::vector<int64_t> shape = {4, 64};
  absl::StatusOr<PreparedOp> fwd = PrepareOp(OpKind::kLnFwdRes, shape, v1::DTYPE_BF16, 1);
  ASSERT_TRUE(fwd.ok()) << fwd.status();
  ASSERT_TRUE(fwd->forward);
  EXPECT_EQ(fwd->rows, 4);
  EXPECT_EQ(fwd->forward->config().kind(), v1::LAYER_NORM);
  EXPECT_EQ(fwd->forward->x().data().size(), 4u * 64 * 2);
  EXPECT_EQ(fwd->request_payload_bytes, 2 * 4 * 64 * 2 + 2 * 64 * 2);  // x, y, w, b
  absl::StatusOr<PreparedOp> bwd = PrepareOp(OpKind::kRmsBwd, shape, v1::DTYPE_FP32, 1);
  ASSERT_TRUE(bwd.ok());
  ASSERT_TRUE(bwd->backward);
  EXPECT_TRUE(bwd->backward->want_grad_weight());
  EXPECT_FALSE(bwd->backward->want_grad_bias());
  absl::StatusOr<PreparedOp> echo = PrepareOp(OpKind::kEcho, shape, v1::DTYPE_FP16, 1);
  ASSERT_TRUE(echo.ok());
  EXPECT_EQ(echo->echo->payload().size(), 4u * 64 * 2);  // the size of a forward's x
}

}  // namespace
}  // namespace normserve::loadgen
