// Every op × dtype through the real server and the generated stub, checked
// against the float64 reference; params registry; input validation; Stream.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "normserve/v1/normserve.grpc.pb.h"
#include "reference.h"
#include "relative_error.h"
#include "tests/support/server_process.h"
#include "wire_tensors.h"

namespace normserve::testing {
namespace {

using kernels::DType;
using reference::HostTensor;

double Tolerance(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 1e-5;
    case DType::kF16:
      return 2e-3;
    case DType::kBF16:
      return 1e-2;
  }
  return 0;
}

class ServerOpsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto started = ServerProcess::Start({"--max_queue_delay_us=100"});
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = started->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    stub_ = v1::Normalizer::NewStub(
        grpc::CreateCustomChannel(server_->target(), grpc::InsecureChannelCredentials(), args));
  }

  static ServerProcess* server_;
  std::unique_ptr<v1::Normalizer::Stub> stub_;
  std::mt19937_64 rng_{1234};
};
ServerProcess* ServerOpsTest::server_ = nullptr;

struct OpCase {
  bool layer_norm;
  DType dtype;
};

std::string Name(const OpCase& c) {
  return std::string(c.layer_norm ? "LayerNorm_" : "RmsNorm_") + kernels::DTypeName(c.dtype);
}

std::vector<OpCase> AllCases() {
  std::vector<OpCase> cases;
  for (bool layer_norm : {true, false}) {
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16})
      cases.push_back({layer_norm, dtype});
  }
  return cases;
}

TEST_F(ServerOpsTest, FusedForwardMatchesReferenceForEveryKindAndDtype) {
  for (const OpCase& c : AllCases()) {
    SCOPED_TRACE(Name(c));
    const int64_t rows = 5, hidden = 300;
    auto x = HostTensor::Random(c.dtype, rows * hidden, rng_);
    auto y = HostTensor::Random(c.dtype, rows * hidden, rng_);
    auto w = HostTensor::Random(c.dtype, hidden, rng_, 1.0, 0.2);
    auto b = HostTensor::Random(c.dtype, hidden, rng_);
    v1::ForwardRequest request;
    request.mutable_config()->set_kind(c.layer_norm ? v1::LAYER_NORM : v1::RMS_NORM);
    request.mutable_config()->set_eps(1e-5f);
    *request.mutable_x() = ToTensor(x, {1, rows, hidden});
    *request.mutable_residual() = ToTensor(y, {1, rows, hidden});
    *request.mutable_params()->mutable_weight() = ToTensor(w, {hidden});
    *request.mutable_params()->mutable_bias() = ToTensor(b, {hidden});
    request.set_residual_out_dtype(v1::DTYPE_FP32);
    request.set_return_stats(true);
    v1::ForwardResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->Forward(&context, request, &response).ok());

    const kernels::NormConfig config{.center = c.layer_norm, .eps = 1e-5f};
    const auto expected = reference::Forward(config, {.rows = rows,
                                                      .hidden = hidden,
                                                      .x = x.Values(),
                                                      .y = y.Values(),
                                                      .weight = w.Values(),
                                                      .bias = b.Values()});
    EXPECT_THAT(response.output().shape(), ::testing::ElementsAre(1, rows, hidden));
    EXPECT_EQ(response.output().dtype(), ToWire(c.dtype));
    EXPECT_LT(reference::RelativeError(Values(response.output()), expected.out),
              Tolerance(c.dtype));
    EXPECT_EQ(response.residual_out().dtype(), v1::DTYPE_FP32);
    EXPECT_LT(reference::RelativeError(Values(response.residual_out()), expected.residual), 1e-6);
    EXPECT_LT(reference::RelativeError(Values(response.rstd()), expected.rstd), 1e-5);
    if (c.layer_norm) {
      EXPECT_LT(reference::RelativeError(Values(response.mean()), expected.mean), 1e-5);
    }
  }
}

TEST_F(ServerOpsTest, PartialRmsNormWithCustomScaleMatchesReference) {
  const int64_t rows = 3, hidden = 1000;
  auto x = HostTensor::Random(DType::kF32, rows * hidden, rng_);
  v1::ForwardRequest request;
  request.mutable_config()->set_kind(v1::RMS_NORM);
  request.mutable_config()->set_partial(0.0625);
  request.mutable_config()->set_c(2.5f);
  request.mutable_config()->set_eps(0.0f);
  *request.mutable_x() = ToTensor(x, {rows, hidden});
  v1::ForwardResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->Forward(&context, request, &response).ok());
  const kernels::NormConfig config{.center = false, .eps = 0.0f, .c = 2.5f, .partial = 0.0625};
  const auto expected =
      reference::Forward(config, {.rows = rows, .hidden = hidden, .x = x.Values()});
  EXPECT_LT(reference::RelativeError(Values(response.output()), expected.out), 1e-5);
}

TEST_F(ServerOpsTest, BackwardMatchesReferenceForEveryKindAndDtype) {
  for (const OpCase& c : AllCases()) {
    for (bool saved_stats : {false, true}) {
      SCOPED_TRACE(Name(c) + (saved_stats ? "_saved_stats" : ""));
      const int64_t rows = 6, hidden = 257;
      const kernels::NormConfig config{.center = c.layer_norm, .eps = 1e-5f};
      auto x = HostTensor::Random(c.dtype, rows * hidden, rng_);
      auto y = HostTensor::Random(c.dtype, rows * hidden, rng_);
      auto w = HostTensor::Random(c.dtype, hidden, rng_, 1.0, 0.2);
      auto dout = HostTensor::Random(c.dtype, rows * hidden, rng_);
      auto dp = HostTensor::Random(DType::kF32, rows * hidden, rng_);
      v1::BackwardRequest request;
      request.mutable_config()->set_kind(c.layer_norm ? v1::LAYER_NORM : v1::RMS_NORM);
      request.mutable_config()->set_eps(1e-5f);
      *request.mutable_x() = ToTensor(x, {rows, hidden});
      *request.mutable_residual() = ToTensor(y, {rows, hidden});
      *request.mutable_params()->mutable_weight() = ToTensor(w, {hidden});
      *request.mutable_grad_output() = ToTensor(dout, {rows, hidden});
      *request.mutable_grad_residual_out() = ToTensor(dp, {rows, hidden});
      request.set_want_grad_weight(true);
      request.set_want_grad_bias(true);
      if (saved_stats) {
        // Statistics from the server's own forward, as a training loop would.
        v1::ForwardRequest forward;
        *forward.mutable_config() = request.config();
        *forward.mutable_x() = request.x();
        *forward.mutable_residual() = request.residual();
        *forward.mutable_params() = request.params();
        forward.set_return_stats(true);
        v1::ForwardResponse forward_response;
        grpc::ClientContext context;
        ASSERT_TRUE(stub_->Forward(&context, forward, &forward_response).ok());
        *request.mutable_mean() = forward_response.mean();
        *request.mutable_rstd() = forward_response.rstd();
      }
      v1::BackwardResponse response;
      grpc::ClientContext context;
      const grpc::Status status = stub_->Backward(&context, request, &response);
      ASSERT_TRUE(status.ok()) << status.error_message();
      const auto expected = reference::Backward(config, {.rows = rows,
                                                         .hidden = hidden,
                                                         .x = x.Values(),
                                                         .y = y.Values(),
                                                         .weight = w.Values(),
                                                         .grad_out = dout.Values(),
                                                         .grad_residual_out = dp.Values()});
      EXPECT_EQ(response.grad_input().dtype(), ToWire(c.dtype));
      EXPECT_LT(reference::RelativeError(Values(response.grad_input()), expected.grad_in),
                Tolerance(c.dtype));
      EXPECT_LT(reference::RelativeError(Values(response.grad_weight()), expected.grad_weight),
                Tolerance(c.dtype));
      EXPECT_LT(reference::RelativeError(Values(response.grad_bias()), expected.grad_bias),
                Tolerance(c.dtype));
    }
  }
}

// A training loop that kept the forward's residual_out p sends it as x, with
// no residual, and the gradient arriving at p.
TEST_F(ServerOpsTest, BackwardOfASavedResidualStreamMatchesReference) {
  for (const OpCase& c : AllCases()) {
    SCOPED_TRACE(Name(c));
    const int64_t rows = 5, hidden = 264;
    const kernels::NormConfig config{.center = c.layer_norm, .eps = 1e-5f};
    auto x = HostTensor::Random(c.dtype, rows * hidden, rng_);
    auto y = HostTensor::Random(c.dtype, rows * hidden, rng_);
    auto w = HostTensor::Random(c.dtype, hidden, rng_, 1.0, 0.2);
    auto dout = HostTensor::Random(c.dtype, rows * hidden, rng_);
    auto dp = HostTensor::Random(c.dtype, rows * hidden, rng_);
    v1::ForwardRequest forward;
    forward.mutable_config()->set_kind(c.layer_norm ? v1::LAYER_NORM : v1::RMS_NORM);
    forward.mutable_config()->set_eps(1e-5f);
    *forward.mutable_x() = ToTensor(x, {rows, hidden});
    *forward.mutable_residual() = ToTensor(y, {rows, hidden});
    *forward.mutable_params()->mutable_weight() = ToTensor(w, {hidden});
    v1::ForwardResponse forward_response;
    {
      grpc::ClientContext context;
      ASSERT_TRUE(stub_->Forward(&context, forward, &forward_response).ok());
    }
    v1::BackwardRequest request;
    *request.mutable_config() = forward.config();
    *request.mutable_x() = forward_response.residual_out();
    *request.mutable_params() = forward.params();
    *request.mutable_grad_output() = ToTensor(dout, {rows, hidden});
    *request.mutable_grad_residual_out() = ToTensor(dp, {rows, hidden});
    request.set_want_grad_weight(true);
    v1::BackwardResponse response;
    grpc::ClientContext context;
    const grpc::Status status = stub_->Backward(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    const auto expected =
        reference::Backward(config, {.rows = rows,
                                     .hidden = hidden,
                                     .x = Values(forward_response.residual_out()),
                                     .weight = w.Values(),
                                     .grad_out = dout.Values(),
                                     .grad_residual_out = dp.Values()});
    EXPECT_LT(reference::RelativeError(Values(response.grad_input()), expected.grad_in),
              Tolerance(c.dtype));
    EXPECT_LT(reference::RelativeError(Values(response.grad_weight()), expected.grad_weight),
              Tolerance(c.dtype));
  }
}

TEST_F(ServerOpsTest, RegisteredParamsGiveTheSameResultAsInlineOnes) {
  const int64_t rows = 4, hidden = 64;
  auto x = HostTensor::Random(DType::kBF16, rows * hidden, rng_);
  auto w = HostTensor::Random(DType::kBF16, hidden, rng_);
  auto b = HostTensor::Random(DType::kBF16, hidden, rng_);
  v1::RegisterParamsRequest registration;
  *registration.mutable_weight() = ToTensor(w, {hidden});
  *registration.mutable_bias() = ToTensor(b, {hidden});
  registration.set_name("layer0.norm");
  v1::RegisterParamsResponse registered;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->RegisterParams(&context, registration, &registered).ok());
  }
  EXPECT_EQ(registered.info().hidden(), hidden);
  EXPECT_EQ(registered.info().dtype(), v1::DTYPE_BF16);

  v1::ForwardRequest by_handle;
  by_handle.mutable_config()->set_kind(v1::LAYER_NORM);
  *by_handle.mutable_x() = ToTensor(x, {rows, hidden});
  by_handle.mutable_params()->set_handle(registered.info().handle());
  v1::ForwardRequest inline_params = by_handle;
  inline_params.mutable_params()->clear_handle();
  *inline_params.mutable_params()->mutable_weight() = registration.weight();
  *inline_params.mutable_params()->mutable_bias() = registration.bias();
  v1::ForwardResponse a, b_response;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->Forward(&context, by_handle, &a).ok());
  }
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->Forward(&context, inline_params, &b_response).ok());
  }
  EXPECT_EQ(a.output().data(), b_response.output().data());

  v1::ListParamsResponse listed;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->ListParams(&context, {}, &listed).ok());
  }
  bool found = false;
  for (const auto& info : listed.params()) found |= info.handle() == registered.info().handle();
  EXPECT_TRUE(found);

  v1::DeleteParamsRequest deletion;
  deletion.set_handle(registered.info().handle());
  v1::DeleteParamsResponse deleted;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->DeleteParams(&context, deletion, &deleted).ok());
  }
  grpc::ClientContext context;
  const grpc::Status status = stub_->Forward(&context, by_handle, &a);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), ::testing::HasSubstr(registered.info().handle()));
}

// Each malformed request gets INVALID_ARGUMENT with a message naming what is
// wrong, never a crash or a truncated answer.
TEST_F(ServerOpsTest, BadInputGetsInvalidArgumentNamingTheField) {
  const int64_t rows = 2, hidden = 8;
  auto x = HostTensor::Random(DType::kF32, rows * hidden, rng_);
  v1::ForwardRequest good;
  good.mutable_config()->set_kind(v1::RMS_NORM);
  *good.mutable_x() = ToTensor(x, {rows, hidden});

  std::vector<std::pair<std::string, std::function<void(v1::ForwardRequest&)>>> cases = {
      {"config.kind", [](auto& r) { r.mutable_config()->clear_kind(); }},
      {"x is required", [](auto& r) { r.clear_x(); }},
      {"x.data has 60 bytes", [](auto& r) { r.mutable_x()->mutable_data()->resize(60); }},
      {"x.dtype", [](auto& r) { r.mutable_x()->set_dtype(v1::DTYPE_UNSPECIFIED); }},
      {"x.shape[0] must be >= 1", [](auto& r) { r.mutable_x()->set_shape(0, 0); }},
      {"x.shape must have rank >= 1", [](auto& r) { r.mutable_x()->clear_shape(); }},
      {"exceeds 65536",
       [](auto& r) {
         r.mutable_x()->set_shape(0, 1);
         r.mutable_x()->set_shape(1, 70000);
       }},
      {"eps must be finite and >= 0", [](auto& r) { r.mutable_config()->set_eps(-1.0f); }},
      {"eps must be finite", [](auto& r) { r.mutable_config()->set_eps(std::nanf("")); }},
      {"partial must be in (0, 1]", [](auto& r) { r.mutable_config()->set_partial(0.0); }},
      {"partial must be in (0, 1]", [](auto& r) { r.mutable_config()->set_partial(1.5); }},
      {"residual has shape [2, 4] fp32, expected the shape of x [2, 8] fp32",
       [](auto& r) {
         *r.mutable_residual() = r.x();
         r.mutable_residual()->set_shape(1, 4);
         r.mutable_residual()->mutable_data()->resize(32);
       }},
      {"residual has dtype fp16",
       [](auto& r) {
         *r.mutable_residual() = r.x();
         r.mutable_residual()->set_dtype(v1::DTYPE_FP16);
         r.mutable_residual()->mutable_data()->resize(32);
       }},
      {"params.weight has shape [7] fp32, expected [8]",
       [](auto& r) {
         auto* w = r.mutable_params()->mutable_weight();
         w->set_dtype(v1::DTYPE_FP32);
         w->add_shape(7);
         w->mutable_data()->resize(28);
       }},
      {"params.weight has dtype bf16, expected fp32",
       [](auto& r) {
         auto* w = r.mutable_params()->mutable_weight();
         w->set_dtype(v1::DTYPE_BF16);
         w->add_shape(8);
         w->mutable_data()->resize(16);
       }},
      {"residual_out_dtype must be x's dtype",
       [](auto& r) { r.set_residual_out_dtype(v1::DTYPE_BF16); }},
      {"not both",
       [](auto& r) {
         r.mutable_params()->set_handle("params-1");
         auto* w = r.mutable_params()->mutable_weight();
         w->set_dtype(v1::DTYPE_FP32);
         w->add_shape(8);
         w->mutable_data()->resize(32);
       }},
  };
  for (auto& [expected_message, mutate] : cases) {
    SCOPED_TRACE(expected_message);
    v1::ForwardRequest request = good;
    mutate(request);
    v1::ForwardResponse response;
    grpc::ClientContext context;
    const grpc::Status status = stub_->Forward(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_THAT(status.error_message(), ::testing::HasSubstr(expected_message));
  }
  v1::ForwardResponse response;
  grpc::ClientContext context;
  EXPECT_TRUE(stub_->Forward(&context, good, &response).ok()) << "the unmodified request is valid";
}

TEST_F(ServerOpsTest, BackwardValidatesGradientsAndSavedStatistics) {
  const int64_t rows = 2, hidden = 8;
  auto x = HostTensor::Random(DType::kF16, rows * hidden, rng_);
  v1::BackwardRequest good;
  good.mutable_config()->set_kind(v1::LAYER_NORM);
  *good.mutable_x() = ToTensor(x, {rows, hidden});
  *good.mutable_grad_output() = ToTensor(x, {rows, hidden});
  std::vector<std::pair<std::string, std::function<void(v1::BackwardRequest&)>>> cases = {
      {"grad_output is required", [](auto& r) { r.clear_grad_output(); }},
      {"grad_output has shape",
       [](auto& r) {
         r.mutable_grad_output()->set_shape(0, 1);
         r.mutable_grad_output()->set_shape(1, 16);
       }},
      {"mean and rstd must be given together",
       [](auto& r) {
         r.mutable_mean()->set_dtype(v1::DTYPE_FP32);
         r.mutable_mean()->add_shape(2);
         r.mutable_mean()->mutable_data()->resize(8);
       }},
      {"rstd has shape [3] fp32, expected [2]",
       [](auto& r) {
         for (auto* t : {r.mutable_mean(), r.mutable_rstd()}) {
           t->set_dtype(v1::DTYPE_FP32);
           t->add_shape(2);
           t->mutable_data()->resize(8);
         }
         r.mutable_rstd()->set_shape(0, 3);
       }},
      {"grad_residual_out must have x's dtype (fp16) or fp32",
       [](auto& r) {
         *r.mutable_grad_residual_out() = r.x();
         r.mutable_grad_residual_out()->set_dtype(v1::DTYPE_BF16);
       }},
  };
  for (auto& [expected_message, mutate] : cases) {
    SCOPED_TRACE(expected_message);
    v1::BackwardRequest request = good;
    mutate(request);
    v1::BackwardResponse response;
    grpc::ClientContext context;
    const grpc::Status status = stub_->Backward(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_THAT(status.error_message(), ::testing::HasSubstr(expected_message));
  }
}

TEST_F(ServerOpsTest, StreamAnswersEveryIdWithItsOwnResult) {
  grpc::ClientContext context;
  auto stream = stub_->Stream(&context);
  const int64_t hidden = 48;
  const kernels::NormConfig config{.center = true, .eps = 1e-5f};
  std::map<uint64_t, HostTensor> inputs;
  constexpr uint64_t kRequests = 40;
  constexpr uint64_t kBadId = 1000;
  for (uint64_t id = 1; id <= kRequests; ++id) {
    const int64_t rows = 1 + id % 4;
    inputs[id] = HostTensor::Random(DType::kF32, rows * hidden, rng_);
    v1::StreamRequest request;
    request.set_id(id);
    request.mutable_forward()->mutable_config()->set_kind(v1::LAYER_NORM);
    *request.mutable_forward()->mutable_x() = ToTensor(inputs[id], {rows, hidden});
    ASSERT_TRUE(stream->Write(request));
  }
  v1::StreamRequest bad;
  bad.set_id(kBadId);
  bad.mutable_forward()->mutable_config()->set_kind(v1::LAYER_NORM);
  ASSERT_TRUE(stream->Write(bad));
  stream->WritesDone();

  std::map<uint64_t, v1::StreamResponse> answers;
  v1::StreamResponse response;
  while (stream->Read(&response)) {
    EXPECT_EQ(answers.count(response.id()), 0u) << "id answered twice: " << response.id();
    answers[response.id()] = response;
  }
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_EQ(answers.size(), kRequests + 1);
  EXPECT_EQ(answers[kBadId].code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(answers[kBadId].message(), ::testing::HasSubstr("x is required"));
  for (const auto& [id, x] : inputs) {
    ASSERT_EQ(answers[id].code(), 0) << answers[id].message();
    const int64_t rows = x.size() / hidden;
    const auto expected =
        reference::Forward(config, {.rows = rows, .hidden = hidden, .x = x.Values()});
    EXPECT_LT(reference::RelativeError(Values(answers[id].forward().output()), expected.out), 1e-5)
        << "id " << id;
  }
}

TEST_F(ServerOpsTest, EchoReturnsThePayloadUnchanged) {
  v1::EchoRequest request;
  request.set_payload(std::string(100000, 'n'));
  v1::EchoResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->Echo(&context, request, &response).ok());
  EXPECT_EQ(response.payload(), request.payload());
}

}  // namespace
}  // namespace normserve::testing
