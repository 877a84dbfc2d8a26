// The client library against a real normserve-server on 127.0.0.1.
#include <atomic>
#include <future>
#include <set>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "normserve/client/client.h"
#include "normserve/client/tensor.h"
#include "reference_compare.h"
#include "tests/support/server_process.h"

namespace normserve::client {
namespace {

using client_test::AllClose;
using client_test::RandomValues;
using client_test::ReferenceBackward;
using client_test::ReferenceForward;
using testing::ServerProcess;

class ClientCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ClientOptions options;
    options.target = server_->target();
    options.default_timeout = absl::Seconds(10);
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  static v1::ForwardRequest MakeForward(v1::NormKind kind, int64_t rows, int64_t hidden,
                                        v1::DType dtype, uint32_t seed, bool residual = false,
                                        bool params = true) {
    v1::ForwardRequest request;
    request.mutable_config()->set_kind(kind);
    const size_t n = static_cast<size_t>(rows * hidden);
    *request.mutable_x() = *MakeTensor(RandomValues(n, seed, 0.5f, 2.0f), {rows, hidden}, dtype);
    if (residual) {
      *request.mutable_residual() = *MakeTensor(RandomValues(n, seed + 1), {rows, hidden}, dtype);
    }
    if (params) {
      *request.mutable_params()->mutable_weight() =
          *MakeTensor(RandomValues(hidden, seed + 2, 1.0f, 0.2f), {hidden}, dtype);
      if (kind == v1::LAYER_NORM) {
        *request.mutable_params()->mutable_bias() =
            *MakeTensor(RandomValues(hidden, seed + 3, 0.0f, 0.2f), {hidden}, dtype);
      }
    }
    return request;
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientCallTest, SyncForwardMatchesTheFloat64Reference) {
  v1::ForwardRequest ln = MakeForward(v1::LAYER_NORM, 5, 96, v1::DTYPE_FP32, 1, true);
  ln.set_return_stats(true);
  absl::StatusOr<v1::ForwardResponse> out = client_->Forward(ln);
  ASSERT_TRUE(out.ok()) << out.status();
  const reference::ForwardOutputs want = ReferenceForward(ln);
  EXPECT_TRUE(AllClose(out->output(), want.out, 1e-5, 1e-4));
  EXPECT_TRUE(AllClose(out->residual_out(), want.residual, 1e-6, 1e-6));
  EXPECT_TRUE(AllClose(out->mean(), want.mean, 1e-5, 1e-4));
  EXPECT_TRUE(AllClose(out->rstd(), want.rstd, 1e-5, 1e-4));

  v1::ForwardRequest rms = MakeForward(v1::RMS_NORM, 3, 64, v1::DTYPE_FP32, 2);
  rms.mutable_config()->set_eps(1e-3f);
  rms.mutable_config()->set_c(2.0f);
  rms.mutable_config()->set_partial(0.5);
  out = client_->Forward(rms);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(AllClose(out->output(), ReferenceForward(rms).out, 1e-5, 1e-4));
}

TEST_F(ClientCallTest, HalfPrecisionForwardStaysWithinItsRounding) {
  for (v1::DType dtype : {v1::DTYPE_FP16, v1::DTYPE_BF16}) {
    v1::ForwardRequest request = MakeForward(v1::RMS_NORM, 4, 128, dtype, 3, true);
    absl::StatusOr<v1::ForwardResponse> out = client_->Forward(request);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->output().dtype(), dtype);
    const double rtol = dtype == v1::DTYPE_BF16 ? 1.6e-2 : 2e-3;
    EXPECT_TRUE(AllClose(out->output(), ReferenceForward(request).out, rtol, rtol));
  }
}

TEST_F(ClientCallTest, SyncBackwardMatchesTheFloat64Reference) {
  v1::ForwardRequest fwd = MakeForward(v1::LAYER_NORM, 4, 80, v1::DTYPE_FP32, 4, true);
  v1::BackwardRequest request;
  *request.mutable_config() = fwd.config();
  *request.mutable_x() = fwd.x();
  *request.mutable_residual() = fwd.residual();
  *request.mutable_params() = fwd.params();
  *request.mutable_grad_output() = *MakeTensor(RandomValues(4 * 80, 9), {4, 80});
  request.set_want_grad_weight(true);
  request.set_want_grad_bias(true);
  absl::StatusOr<v1::BackwardResponse> out = client_->Backward(request);
  ASSERT_TRUE(out.ok()) << out.status();
  const reference::BackwardOutputs want = ReferenceBackward(request);
  EXPECT_TRUE(AllClose(out->grad_input(), want.grad_in, 1e-4, 1e-3));
  EXPECT_TRUE(AllClose(out->grad_weight(), want.grad_weight, 1e-4, 1e-3));
  EXPECT_TRUE(AllClose(out->grad_bias(), want.grad_bias, 1e-4, 1e-3));
}

TEST_F(ClientCallTest, RegisteredParamsServeLikeInlineOnesUntilDeleted) {
  v1::ForwardRequest inline_request = MakeForward(v1::LAYER_NORM, 2, 32, v1::DTYPE_FP32, 5);
  v1::RegisterParamsRequest reg;
  *reg.mutable_weight() = inline_request.params().weight();
  *reg.mutable_bias() = inline_request.params().bias();
  reg.set_name("client-test");
  absl::StatusOr<v1::ParamsInfo> info = client_->RegisterParams(reg);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_FALSE(info->handle().empty());
  EXPECT_EQ(info->hidden(), 32);

  absl::StatusOr<std::vector<v1::ParamsInfo>> listed = client_->ListParams();
  ASSERT_TRUE(listed.ok()) << listed.status();
  bool found = false;
  for (const v1::ParamsInfo& p : *listed) found |= p.handle() == info->handle();
  EXPECT_TRUE(found);

  v1::ForwardRequest by_handle = inline_request;
  by_handle.mutable_params()->Clear();
  by_handle.mutable_params()->set_handle(info->handle());
  absl::StatusOr<v1::ForwardResponse> a = client_->Forward(inline_request);
  absl::StatusOr<v1::ForwardResponse> b = client_->Forward(by_handle);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << " " << b.status();
  EXPECT_EQ(a->output().data(), b->output().data());

  ASSERT_TRUE(client_->DeleteParams(info->handle()).ok());
  EXPECT_EQ(client_->Forward(by_handle).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->DeleteParams(info->handle()).code(), absl::StatusCode::kNotFound);
}

TEST_F(ClientCallTest, EchoReturnsThePayloadAndHealthIsServing) {
  std::string payload(300000, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 7);
  absl::StatusOr<std::string> echoed = client_->Echo(payload);
  ASSERT_TRUE(echoed.ok()) << echoed.status();
  EXPECT_EQ(*echoed, payload);
  EXPECT_EQ(*client_->CheckHealth(), ServingStatus::kServing);
  EXPECT_EQ(*client_->CheckHealth("normserve.v1.Normalizer"), ServingStatus::kServing);
}

TEST_F(ClientCallTest, InvalidRequestsComeBackAsInvalidArgument) {
  v1::ForwardRequest request = MakeForward(v1::RMS_NORM, 2, 16, v1::DTYPE_FP32, 6);
  request.mutable_x()->mutable_data()->resize(7);  // not 2*16*4 bytes
  absl::StatusOr<v1::ForwardResponse> out = client_->Forward(request);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(out.status().message().empty());
}

TEST_F(ClientCallTest, AsyncCallsEachGetTheirOwnAnswer) {
  constexpr int kCalls = 24;
  std::vector<std::shared_ptr<const v1::ForwardRequest>> requests;
  for (int i = 0; i < kCalls; ++i) {
    requests.push_back(std::make_shared<const v1::ForwardRequest>(MakeForward(
        i % 2 ? v1::LAYER_NORM : v1::RMS_NORM, 1 + i % 3, 64, v1::DTYPE_FP32, 100 + i)));
  }
  absl::Mutex mu;
  std::vector<absl::StatusOr<v1::ForwardResponse>> results(kCalls, absl::UnknownError("unset"));
  int done = 0;
  for (int i = 0; i < kCalls; ++i) {
    client_->ForwardAsync(requests[i], CallOptions(),
                          [&, i](absl::StatusOr<v1::ForwardResponse> r) {
                            absl::MutexLock lock(&mu);
                            results[i] = std::move(r);
                            ++done;
                          });
  }
  {
    absl::MutexLock lock(&mu);
    auto all_done = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu) { return done == kCalls; };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&all_done), absl::Seconds(20)));
  }
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(results[i].ok()) << i << ": " << results[i].status();
    EXPECT_TRUE(AllClose(results[i]->output(), ReferenceForward(*requests[i]).out, 1e-5, 1e-4))
        << "call " << i;
  }

  // Futures.
  std::vector<v1::ForwardRequest> plain;
  std::vector<std::future<absl::StatusOr<v1::ForwardResponse>>> futures;
  for (int i = 0; i < 8; ++i) {
    plain.push_back(MakeForward(v1::RMS_NORM, 2, 32, v1::DTYPE_FP32, 200 + i));
    futures.push_back(client_->ForwardFuture(plain.back()));
  }
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(futures[i].wait_for(std::chrono::seconds(20)), std::future_status::ready);
    absl::StatusOr<v1::ForwardResponse> r = futures[i].get();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(AllClose(r->output(), ReferenceForward(plain[i]).out, 1e-5, 1e-4));
  }
}

TEST_F(ClientCallTest, StreamAnswersEveryIdOnceWithItsOwnResult) {
  std::unique_ptr<StreamSession> session = client_->OpenStream();
  std::map<uint64_t, v1::ForwardRequest> sent;
  for (uint64_t id = 1; id <= 30; ++id) {
    // Ids are arbitrary client choices, not a sequence.
    const uint64_t chosen = id * 1000003;
    v1::ForwardRequest request =
        MakeForward(id % 3 ? v1::RMS_NORM : v1::LAYER_NORM, 1 + id % 4, 32 * (1 + id % 3),
                    v1::DTYPE_FP32, static_cast<uint32_t>(id));
    sent[chosen] = request;
    ASSERT_TRUE(session->Send(MakeStreamRequest(chosen, std::move(request))).ok());
  }
  // One bad request: it fails alone, with its own id.
  v1::ForwardRequest bad = MakeForward(v1::RMS_NORM, 1, 8, v1::DTYPE_FP32, 99);
  bad.mutable_x()->mutable_data()->resize(3);
  ASSERT_TRUE(session->Send(MakeStreamRequest(7, std::move(bad))).ok());
  session->CloseSend();
  EXPECT_EQ(session->Send(MakeStreamRequest(8, v1::ForwardRequest())).code(),
            absl::StatusCode::kFailedPrecondition);

  std::set<uint64_t> answered;
  bool saw_bad = false;
  while (true) {
    absl::StatusOr<v1::StreamResponse> r = session->Next(absl::Seconds(20));
    if (absl::IsOutOfRange(r.status())) break;
    ASSERT_TRUE(r.ok()) << r.status();
    if (r->id() == 7) {
      saw_bad = true;
      EXPECT_EQ(ResponseStatus(*r).code(), absl::StatusCode::kInvalidArgument);
      continue;
    }
    ASSERT_TRUE(sent.contains(r->id())) << r->id();
    EXPECT_TRUE(answered.insert(r->id()).second) << "answered twice: " << r->id();
    ASSERT_TRUE(ResponseStatus(*r).ok()) << ResponseStatus(*r);
    EXPECT_TRUE(AllClose(r->forward().output(), ReferenceForward(sent[r->id()]).out, 1e-5, 1e-4));
  }
  EXPECT_TRUE(saw_bad);
  EXPECT_EQ(answered.size(), sent.size());
  EXPECT_TRUE(session->Finish().ok());
}

TEST_F(ClientCallTest, StreamCallbackModeDeliversEveryAnswer) {
  absl::Mutex mu;
  std::set<uint64_t> ids;
  std::unique_ptr<StreamSession> session =
      client_->OpenStream(CallOptions(), [&](v1::StreamResponse r) {
        absl::MutexLock lock(&mu);
        ids.insert(r.id());
      });
  for (uint64_t id = 0; id < 10; ++id) {
    v1::BackwardRequest request;
    v1::ForwardRequest fwd = MakeForward(v1::RMS_NORM, 2, 16, v1::DTYPE_FP32, 50 + id);
    *request.mutable_config() = fwd.config();
    *request.mutable_x() = fwd.x();
    *request.mutable_grad_output() = fwd.x();
    ASSERT_TRUE(session->Send(MakeStreamRequest(id, std::move(request))).ok());
  }
  EXPECT_TRUE(session->Finish().ok());
  EXPECT_EQ(session->Next().status().code(), absl::StatusCode::kFailedPrecondition);
  absl::MutexLock lock(&mu);
  EXPECT_EQ(ids.size(), 10u);
}

TEST_F(ClientCallTest, TinyDeadlinesExpireAsDeadlineExceeded) {
  v1::ForwardRequest request = MakeForward(v1::RMS_NORM, 64, 1024, v1::DTYPE_FP32, 7);
  CallOptions tiny;
  tiny.timeout = absl::Microseconds(1);
  EXPECT_EQ(client_->Forward(request, tiny).status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(client_->ForwardFuture(request, tiny).get().status().code(),
            absl::StatusCode::kDeadlineExceeded);
  std::unique_ptr<StreamSession> session = client_->OpenStream(tiny);
  session->Send(MakeStreamRequest(1, request)).IgnoreError();
  EXPECT_EQ(session->Finish().code(), absl::StatusCode::kDeadlineExceeded);
  // The channel is still fine afterwards.
  EXPECT_TRUE(client_->Forward(request).ok());
}

TEST_F(ClientCallTest, DestroyingAStreamMidwayCancelsIt) {
  std::unique_ptr<StreamSession> session = client_->OpenStream();
  for (uint64_t id = 0; id < 20; ++id) {
    session->Send(MakeStreamRequest(id, MakeForward(v1::RMS_NORM, 8, 256, v1::DTYPE_FP32, 1)))
        .IgnoreError();
  }
  session.reset();  // must not hang or crash
  EXPECT_TRUE(client_->Forward(MakeForward(v1::RMS_NORM, 1, 8, v1::DTYPE_FP32, 2)).ok());
}

TEST(ClientNoServerTest, CallsFailWithUnavailableWhenNothingListens) {
  ClientOptions options;
  options.target = absl::StrCat("127.0.0.1:", testing::PickFreePort());
  options.initial_backoff = absl::Milliseconds(20);
  options.max_backoff = absl::Milliseconds(50);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  ASSERT_TRUE(client.ok());
  CallOptions call;
  call.timeout = absl::Seconds(5);
  const absl::Time start = absl::Now();
  EXPECT_EQ((*client)->Echo("x", call).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ((*client)->CheckHealth("", call).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace normserve::client
