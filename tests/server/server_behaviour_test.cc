// The service under concurrency and stress: many callers on one key, overload,
// deadlines, cancellation, drain on SIGTERM, health.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <random>
#include <thread>

#include "absl/synchronization/notification.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "normserve/v1/normserve.grpc.pb.h"
#include "reference.h"
#include "relative_error.h"
#include "tests/support/server_process.h"
#include "wire_tensors.h"

namespace normserve::testing {
namespace {

using kernels::DType;
using reference::HostTensor;

std::unique_ptr<v1::Normalizer::Stub> Connect(const ServerProcess& server) {
  return v1::Normalizer::NewStub(
      grpc::CreateChannel(server.target(), grpc::InsecureChannelCredentials()));
}

v1::ForwardRequest RmsRequest(const HostTensor& x, int64_t rows, int64_t hidden) {
  v1::ForwardRequest request;
  request.mutable_config()->set_kind(v1::RMS_NORM);
  *request.mutable_x() = ToTensor(x, {rows, hidden});
  return request;
}

// An async unary call whose completion can be waited for.
struct PendingForward {
  grpc::ClientContext context;
  v1::ForwardRequest request;
  v1::ForwardResponse response;
  grpc::Status status;
  absl::Notification done;

  void Start(v1::Normalizer::Stub& stub) {
    stub.async()->Forward(&context, &request, &response, [this](grpc::Status s) {
      status = std::move(s);
      done.Notify();
    });
  }
};

TEST(ServerBehaviourTest, SixtyFourConcurrentClientsEachGetTheirOwnRows) {
  auto server = ServerProcess::Start({"--max_queue_delay_us=2000"});
  ASSERT_TRUE(server.ok()) << server.status();
  constexpr int kClients = 64;
  constexpr int64_t kHidden = 128;
  std::vector<std::thread> clients;
  std::atomic<int> correct{0};
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      // Each client has its own channel and its own data.
      auto stub = Connect(**server);
      std::mt19937_64 rng(1000 + i);
      for (int call = 0; call < 3; ++call) {
        const int64_t rows = 1 + (i + call) % 7;
        auto x = HostTensor::Random(DType::kF32, rows * kHidden, rng);
        v1::ForwardResponse response;
        grpc::ClientContext context;
        if (!stub->Forward(&context, RmsRequest(x, rows, kHidden), &response).ok()) return;
        const auto expected = reference::Forward(
            {.center = false}, {.rows = rows, .hidden = kHidden, .x = x.Values()});
        if (reference::RelativeError(Values(response.output()), expected.out) < 1e-5) ++correct;
      }
    });
  }
  for (auto& client : clients) client.join();
  EXPECT_EQ(correct.load(), kClients * 3);

  auto metrics = (*server)->ScrapeMetrics();
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  const double batches = SumMetric(*metrics, "normserve_batch_requests_count", {"op=\"forward\""});
  const double single =
      SumMetric(*metrics, "normserve_batch_requests_bucket", {"op=\"forward\"", "le=\"1\""});
  EXPECT_GT(batches, 0);
  EXPECT_GT(batches - single, 0) << "no batch held more than one request";
  EXPECT_LT(batches, kClients * 3) << "every request ran in its own launch";
  EXPECT_EQ(SumMetric(*metrics, "normserve_requests_total", {"op=\"forward\"", "code=\"OK\""}),
            kClients * 3);
}

TEST(ServerBehaviourTest, OverloadGetsResourceExhaustedNotAnUnboundedQueue) {
  // A long batching delay keeps requests queued; the queue holds two.
  auto server = ServerProcess::Start(
      {"--max_queued_requests=2", "--max_queue_delay_us=300000", "--max_batch_rows=100000"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = Connect(**server);
  std::mt19937_64 rng(1);
  auto x = HostTensor::Random(DType::kF32, 4 * 16, rng);
  std::vector<std::unique_ptr<PendingForward>> calls;
  for (int i = 0; i < 12; ++i) {
    calls.push_back(std::make_unique<PendingForward>());
    calls.back()->request = RmsRequest(x, 4, 16);
    calls.back()->Start(*stub);
  }
  int ok = 0, exhausted = 0;
  for (auto& call : calls) {
    ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(absl::Seconds(20)));
    if (call->status.ok()) ++ok;
    if (call->status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++exhausted;
      EXPECT_THAT(call->status.error_message(), ::testing::HasSubstr("queue full"));
    }
  }
  EXPECT_EQ(ok + exhausted, 12) << "every call either computed or was refused";
  EXPECT_GE(ok, 2);
  EXPECT_GE(exhausted, 1);
}

TEST(ServerBehaviourTest, DeadlinePassedWhileQueuedIsDroppedBeforeCompute) {
  auto server = ServerProcess::Start({"--max_queue_delay_us=400000", "--max_batch_rows=100000"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = Connect(**server);
  std::mt19937_64 rng(2);
  auto x = HostTensor::Random(DType::kF32, 2 * 16, rng);
  v1::ForwardResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
  const grpc::Status status = stub->Forward(&context, RmsRequest(x, 2, 16), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server notices when the batch forms (after its 400 ms delay).
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  auto metrics = (*server)->ScrapeMetrics();
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(SumMetric(*metrics, "normserve_requests_total", {"code=\"DEADLINE_EXCEEDED\""}), 1);
  EXPECT_EQ(SumMetric(*metrics, "normserve_batch_rows_count"), 0) << "it was computed anyway";
}

TEST(ServerBehaviourTest, CancelledWhileQueuedIsDroppedBeforeCompute) {
  auto server = ServerProcess::Start({"--max_queue_delay_us=400000", "--max_batch_rows=100000"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = Connect(**server);
  std::mt19937_64 rng(3);
  auto x = HostTensor::Random(DType::kF32, 2 * 16, rng);
  PendingForward call;
  call.request = RmsRequest(x, 2, 16);
  call.Start(*stub);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  call.context.TryCancel();
  ASSERT_TRUE(call.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(call.status.error_code(), grpc::StatusCode::CANCELLED);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  auto metrics = (*server)->ScrapeMetrics();
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(SumMetric(*metrics, "normserve_requests_total", {"code=\"CANCELLED\""}), 1);
  EXPECT_EQ(SumMetric(*metrics, "normserve_batch_rows_count"), 0) << "it was computed anyway";
}

TEST(ServerBehaviourTest, SigtermFinishesInFlightRequestsThenExitsZero) {
  auto server = ServerProcess::Start({"--max_queue_delay_us=300000", "--max_batch_rows=100000"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = Connect(**server);
  std::mt19937_64 rng(4);
  std::vector<std::unique_ptr<PendingForward>> calls;
  std::vector<HostTensor> inputs;
  for (int i = 0; i < 8; ++i) {
    inputs.push_back(HostTensor::Random(DType::kF32, 3 * 32, rng));
    calls.push_back(std::make_unique<PendingForward>());
    calls.back()->request = RmsRequest(inputs.back(), 3, 32);
    calls.back()->Start(*stub);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // all queued, none computed
  (*server)->Signal(SIGTERM);
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(calls[i]->done.WaitForNotificationWithTimeout(absl::Seconds(20)));
    ASSERT_TRUE(calls[i]->status.ok()) << calls[i]->status.error_message();
    const auto expected =
        reference::Forward({.center = false}, {.rows = 3, .hidden = 32, .x = inputs[i].Values()});
    EXPECT_LT(reference::RelativeError(Values(calls[i]->response.output()), expected.out), 1e-5);
  }
  auto exit_code = (*server)->WaitForExit(absl::Seconds(20));
  ASSERT_TRUE(exit_code.ok());
  EXPECT_EQ(*exit_code, 0);
}

TEST(ServerBehaviourTest, HealthServesTheOverallAndTheNormalizerService) {
  auto server = ServerProcess::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  auto health = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel((*server)->target(), grpc::InsecureChannelCredentials()));
  for (const std::string service : {"", "normserve.v1.Normalizer"}) {
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(health->Check(&context, request, &response).ok());
    EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING) << service;
  }
  grpc::health::v1::HealthCheckRequest unknown;
  unknown.set_service("no.such.Service");
  grpc::health::v1::HealthCheckResponse response;
  grpc::ClientContext context;
  EXPECT_EQ(health->Check(&context, unknown, &response).error_code(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace normserve::testing
