#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "normserve/cli/commands.h"
#include "normserve/cli/tensor_npy.h"
#include "normserve/client/half.h"
#include "normserve/client/tensor.h"
#include "normserve/npy/npy.h"

namespace normserve::cli {
namespace {

class CliCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("cli_commands_test_", getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, std::vector<int64_t> shape,
                    const std::vector<float>& values) {
    const std::string path = (dir_ / name).string();
    EXPECT_TRUE(npy::WriteNpy(path, npy::MakeF4(std::move(shape), values)).ok());
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(CliCommandsTest, ForwardRequestTakesDtypeFromTheFileUnlessAsked) {
  ForwardCommand cmd;
  cmd.in.norm = "layer";
  cmd.in.eps = 1e-3;
  cmd.in.x = Write("x.npy", {2, 3}, {1, 2, 3, 4, 5, 6});
  cmd.in.weight = Write("w.npy", {3}, {1, 1, 2});
  cmd.mean_out = "mean.npy";
  absl::StatusOr<v1::ForwardRequest> request = BuildForwardRequest(cmd);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->config().kind(), v1::LAYER_NORM);
  EXPECT_FLOAT_EQ(request->config().eps(), 1e-3f);
  EXPECT_FALSE(request->config().has_c());
  EXPECT_EQ(request->x().dtype(), v1::DTYPE_FP32);
  EXPECT_EQ(request->params().weight().shape(0), 3);
  EXPECT_TRUE(request->return_stats());  // --mean_out implies --stats

  cmd.in.dtype = "bf16";
  request = BuildForwardRequest(cmd);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->x().dtype(), v1::DTYPE_BF16);
  EXPECT_EQ(request->params().weight().dtype(), v1::DTYPE_BF16);
  EXPECT_EQ(*client::ToFloats(request->x()), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST_F(CliCommandsTest, ContradictoryFlagsAreUsageErrors) {
  ForwardCommand cmd;
  cmd.in.x = Write("x.npy", {1, 2}, {1, 2});
  cmd.in.weight = Write("w.npy", {2}, {1, 1});
  cmd.in.params = "handle-1";
  EXPECT_EQ(BuildForwardRequest(cmd).status().code(), absl::StatusCode::kInvalidArgument);
  cmd.in.params.clear();
  cmd.in.norm = "batch";
  EXPECT_NE(BuildForwardRequest(cmd).status().message().find("--norm=batch"),
            absl::string_view::npos);
  cmd.in.norm = "rms";
  cmd.residual_out = "p.npy";
  EXPECT_NE(BuildForwardRequest(cmd).status().message().find("--residual"),
            absl::string_view::npos);

  BackwardCommand bwd;
  bwd.in.x = cmd.in.x;
  bwd.grad_output = cmd.in.x;
  bwd.mean = Write("mean.npy", {1}, {0});
  EXPECT_NE(BuildBackwardRequest(bwd).status().message().find("--mean and --rstd"),
            absl::string_view::npos);
  bwd.mean.clear();
  bwd.grad_output.clear();
  EXPECT_NE(BuildBackwardRequest(bwd).status().message().find("--grad_output"),
            absl::string_view::npos);
  EXPECT_FALSE(BuildRegisterRequest(RegisterCommand()).ok());
}

TEST_F(CliCommandsTest, BackwardRequestKeepsStatisticsInFp32) {
  BackwardCommand cmd;
  cmd.in.norm = "rms";
  cmd.in.dtype = "fp16";
  cmd.in.x = Write("x.npy", {2, 2}, {1, 2, 3, 4});
  cmd.grad_output = Write("do.npy", {2, 2}, {1, 0, 0, 1});
  cmd.mean = Write("mean.npy", {2}, {0, 0});
  cmd.rstd = Write("rstd.npy", {2}, {0.5f, 0.25f});
  cmd.grad_weight_out = "dw.npy";
  absl::StatusOr<v1::BackwardRequest> request = BuildBackwardRequest(cmd);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->x().dtype(), v1::DTYPE_FP16);
  EXPECT_EQ(request->grad_output().dtype(), v1::DTYPE_FP16);
  EXPECT_EQ(request->rstd().dtype(), v1::DTYPE_FP32);
  EXPECT_TRUE(request->want_grad_weight());
  EXPECT_FALSE(request->want_grad_bias());
}

TEST_F(CliCommandsTest, Bf16ResultsAreWrittenAsFloat32AndFp16AsFloat16) {
  const std::vector<float> values = {0.1f, -2.5f, 3.0f};
  v1::Tensor bf16 = *client::MakeTensor(values, {3}, v1::DTYPE_BF16);
  absl::StatusOr<npy::NpyArray> a = NpyFromTensor(bf16);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->dtype, npy::NpyDType::kF4);
  v1::Tensor back = *TensorFromNpy(*a, v1::DTYPE_BF16);
  EXPECT_EQ(back.data(), bf16.data());  // bf16 -> f4 -> bf16 is exact

  v1::Tensor fp16 = *client::MakeTensor(values, {3}, v1::DTYPE_FP16);
  absl::StatusOr<npy::NpyArray> h = NpyFromTensor(fp16);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->dtype, npy::NpyDType::kF2);
  EXPECT_EQ(h->data, fp16.data());
  EXPECT_EQ(DefaultDType(*h), v1::DTYPE_FP16);

  EXPECT_FALSE(TensorFromNpy(npy::MakeF4({}, {1.0f}), v1::DTYPE_FP32).ok());  // scalar
  EXPECT_NE(Summarize("o", fp16).find("shape [3] fp16"), std::string::npos);
}

}  // namespace
}  // namespace normserve::cli
