// normserve-cli as a program, against a real server on 127.0.0.1.
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "normserve/client/tensor.h"
#include "normserve/npy/npy.h"
#include "process_runner.h"
#include "reference_compare.h"
#include "tests/support/server_process.h"

namespace normserve::client_test {
namespace {

using testing::ServerProcess;

class CliProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("cli_process_test_", getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  ProcessResult Cli(std::vector<std::string> args) {
    args.push_back(absl::StrCat("--target=", server_->target()));
    args.push_back("--timeout_ms=20000");
    return RunProgram(NORMSERVE_CLI_BINARY, args);
  }

  std::unique_ptr<ServerProcess> server_;
  std::filesystem::path dir_;
};

TEST_F(CliProcessTest, HealthExitsZeroOnlyWhenServing) {
  ProcessResult ok = Cli({"health"});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("SERVING"), std::string::npos) << ok.output;

  ProcessResult unknown = Cli({"health", "--service=no.such.Service"});
  EXPECT_NE(unknown.exit_code, 0) << unknown.output;

  ProcessResult down = RunProgram(
      NORMSERVE_CLI_BINARY, {"health", absl::StrCat("--target=127.0.0.1:", testing::PickFreePort()),
                             "--timeout_ms=3000"});
  EXPECT_EQ(down.exit_code, 1) << down.output;
  EXPECT_NE(down.output.find("UNAVAILABLE"), std::string::npos) << down.output;
}

TEST_F(CliProcessTest, ForwardAndBackwardWriteTheReferenceResults) {
  const int64_t rows = 3, hidden = 48;
  const std::vector<float> x = RandomValues(rows * hidden, 1, 0.3f, 1.5f);
  const std::vector<float> w = RandomValues(hidden, 2, 1.0f, 0.2f);
  const std::vector<float> b = RandomValues(hidden, 3, 0.0f, 0.2f);
  const std::vector<float> dout = RandomValues(rows * hidden, 4);
  ASSERT_TRUE(npy::WriteNpy(Path("x.npy"), npy::MakeF4({rows, hidden}, x)).ok());
  ASSERT_TRUE(npy::WriteNpy(Path("w.npy"), npy::MakeF4({hidden}, w)).ok());
  ASSERT_TRUE(npy::WriteNpy(Path("b.npy"), npy::MakeF4({hidden}, b)).ok());
  ASSERT_TRUE(npy::WriteNpy(Path("do.npy"), npy::MakeF4({rows, hidden}, dout)).ok());

  ProcessResult fwd =
      Cli({"forward", "--norm=layer", "--x=" + Path("x.npy"), "--weight=" + Path("w.npy"),
           "--bias=" + Path("b.npy"), "--out=" + Path("o.npy"), "--mean_out=" + Path("mean.npy"),
           "--rstd_out=" + Path("rstd.npy")});
  ASSERT_EQ(fwd.exit_code, 0) << fwd.output;
  EXPECT_NE(fwd.output.find("shape [3, 48] fp32"), std::string::npos) << fwd.output;

  reference::NormConfig config;
  config.center = true;
  reference::ForwardInputs in{rows, hidden, ToDoubles(x), {}, ToDoubles(w), ToDoubles(b)};
  const reference::ForwardOutputs want = reference::Forward(config, in);
  absl::StatusOr<npy::NpyArray> o = npy::ReadNpy(Path("o.npy"));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->shape, (std::vector<int64_t>{rows, hidden}));
  v1::Tensor o_tensor;
  o_tensor.set_dtype(v1::DTYPE_FP32);
  o_tensor.add_shape(rows);
  o_tensor.add_shape(hidden);
  o_tensor.set_data(o->data);
  EXPECT_TRUE(AllClose(o_tensor, want.out, 1e-5, 1e-4));

  ProcessResult bwd =
      Cli({"backward", "--norm=layer", "--x=" + Path("x.npy"), "--weight=" + Path("w.npy"),
           "--grad_output=" + Path("do.npy"), "--mean=" + Path("mean.npy"),
           "--rstd=" + Path("rstd.npy"), "--grad_input_out=" + Path("dx.npy"),
           "--grad_weight_out=" + Path("dw.npy"), "--grad_bias_out=" + Path("db.npy")});
  ASSERT_EQ(bwd.exit_code, 0) << bwd.output;
  reference::BackwardInputs bin{rows, hidden, ToDoubles(x), {}, ToDoubles(w), ToDoubles(dout), {}};
  const reference::BackwardOutputs bwant = reference::Backward(config, bin);
  absl::StatusOr<npy::NpyArray> dw = npy::ReadNpy(Path("dw.npy"));
  ASSERT_TRUE(dw.ok()) << dw.status();
  v1::Tensor dw_tensor;
  dw_tensor.set_dtype(v1::DTYPE_FP32);
  dw_tensor.add_shape(hidden);
  dw_tensor.set_data(dw->data);
  EXPECT_TRUE(AllClose(dw_tensor, bwant.grad_weight, 1e-4, 1e-3));
  EXPECT_TRUE(std::filesystem::exists(Path("dx.npy")));
  EXPECT_TRUE(std::filesystem::exists(Path("db.npy")));
}

TEST_F(CliProcessTest, Bf16ForwardReadsAndWritesFloat32Files) {
  ASSERT_TRUE(npy::WriteNpy(Path("x.npy"), npy::MakeF4({2, 64}, RandomValues(128, 5))).ok());
  ProcessResult fwd = Cli(
      {"forward", "--norm=rms", "--dtype=bf16", "--x=" + Path("x.npy"), "--out=" + Path("o.npy")});
  ASSERT_EQ(fwd.exit_code, 0) << fwd.output;
  EXPECT_NE(fwd.output.find("bf16"), std::string::npos) << fwd.output;
  absl::StatusOr<npy::NpyArray> o = npy::ReadNpy(Path("o.npy"));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->dtype, npy::NpyDType::kF4);
}

TEST_F(CliProcessTest, BadInputsFailWithAClearMessage) {
  {
    std::FILE* f = std::fopen(Path("bad.npy").c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("definitely not numpy", f);
    std::fclose(f);
  }
  ProcessResult bad = Cli({"forward", "--x=" + Path("bad.npy"), "--out=" + Path("o.npy")});
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("bad.npy"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("magic"), std::string::npos) << bad.output;

  ProcessResult usage = Cli({"forward", "--out=" + Path("o.npy")});
  EXPECT_EQ(usage.exit_code, 2) << usage.output;
  EXPECT_NE(usage.output.find("--x is required"), std::string::npos) << usage.output;

  ProcessResult unknown = Cli({"transmogrify"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
}

TEST_F(CliProcessTest, RegisterListDeleteAndEchoWork) {
  ASSERT_TRUE(npy::WriteNpy(Path("w.npy"), npy::MakeF4({16}, RandomValues(16, 6, 1.0f))).ok());
  ProcessResult reg = Cli({"register", "--weight=" + Path("w.npy"), "--name=cli-test"});
  ASSERT_EQ(reg.exit_code, 0) << reg.output;
  std::string handle = reg.output.substr(0, reg.output.find('\n'));
  ASSERT_FALSE(handle.empty());

  ProcessResult list = Cli({"list"});
  ASSERT_EQ(list.exit_code, 0) << list.output;
  EXPECT_NE(list.output.find(handle), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("cli-test"), std::string::npos) << list.output;

  ProcessResult del = Cli({"delete", handle});
  EXPECT_EQ(del.exit_code, 0) << del.output;
  ProcessResult again = Cli({"delete", handle});
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_NE(again.output.find("NOT_FOUND"), std::string::npos) << again.output;

  ProcessResult echo = Cli({"echo", "--bytes=100000"});
  EXPECT_EQ(echo.exit_code, 0) << echo.output;
  EXPECT_NE(echo.output.find("echo 100000 bytes"), std::string::npos) << echo.output;
}

TEST(CliHelpTest, HelpExplainsTheCommandsAndFlags) {
  ProcessResult help = RunProgram(NORMSERVE_CLI_BINARY, {"--help"});
  for (const char* expected :
       {"health", "forward", "backward", "register", "delete <handle>", "Input activations x",
        "--timeout_ms", "--grad_input_out", "--residual_fp32", "--ca_cert"}) {
    EXPECT_NE(help.output.find(expected), std::string::npos) << expected << "\n" << help.output;
  }
  ProcessResult bench = RunProgram(NORMSERVE_BENCH_BINARY, {"--help"});
  for (const char* expected : {"--ops", "--sweep", "--rate", "--streaming", "--json_out"}) {
    EXPECT_NE(bench.output.find(expected), std::string::npos) << expected << "\n" << bench.output;
  }
}

}  // namespace
}  // namespace normserve::client_test
