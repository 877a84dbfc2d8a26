// The client's channel policies against several real servers on 127.0.0.1:
// retries across a server restart, and round_robin over a static address list.
#include <csignal>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "normserve/client/client.h"
#include "normserve/client/tensor.h"
#include "reference_compare.h"
#include "tests/support/server_process.h"

namespace normserve::client {
namespace {

using testing::ServerProcess;

v1::ForwardRequest SmallForward() {
  v1::ForwardRequest request;
  request.mutable_config()->set_kind(v1::RMS_NORM);
  *request.mutable_x() = *MakeTensor(client_test::RandomValues(32, 1), {2, 16});
  return request;
}

double ForwardCount(const ServerProcess& server) {
  absl::StatusOr<std::string> text = server.ScrapeMetrics();
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? testing::SumMetric(*text, "normserve_requests_total") : -1;
}

TEST(ClientClusterTest, CallsReachARestartedServerThroughRetries) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> first = ServerProcess::Start();
  ASSERT_TRUE(first.ok()) << first.status();
  const int port = (*first)->port();

  ClientOptions options;
  options.target = (*first)->target();
  options.max_attempts = 5;
  options.initial_backoff = absl::Milliseconds(200);
  options.max_backoff = absl::Seconds(1);
  options.min_reconnect_backoff = absl::Milliseconds(50);
  options.max_reconnect_backoff = absl::Milliseconds(200);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  ASSERT_TRUE(client.ok());
  CallOptions call;
  call.timeout = absl::Seconds(10);
  ASSERT_TRUE((*client)->Forward(SmallForward(), call).ok());

  // Kill the server: calls now fail (after their retries) with UNAVAILABLE.
  (*first)->Signal(SIGKILL);
  ASSERT_TRUE((*first)->WaitForExit(absl::Seconds(10)).ok());
  first->reset();
  EXPECT_EQ((*client)->Forward(SmallForward(), call).status().code(),
            absl::StatusCode::kUnavailable);

  // A new server on the same port: the next call succeeds without any
  // wait_for_ready, by reconnecting and retrying.
  absl::StatusOr<std::unique_ptr<ServerProcess>> second = ServerProcess::Start({}, port);
  ASSERT_TRUE(second.ok()) << second.status();
  absl::StatusOr<v1::ForwardResponse> after = (*client)->Forward(SmallForward(), call);
  EXPECT_TRUE(after.ok()) << after.status();
}

TEST(ClientClusterTest, RoundRobinSpreadsCallsOverEveryServerAndSurvivesOneDying) {
  std::vector<std::unique_ptr<ServerProcess>> servers;
  std::vector<std::string> addresses;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    addresses.push_back((*server)->target());
    servers.push_back(*std::move(server));
  }
  ClientOptions options;
  options.target = absl::StrJoin(addresses, ",");  // a static list: ipv4:a,b,c
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE((*client)->WaitForConnected(absl::Seconds(10)).ok());

  // round_robin rotates over the READY subchannels; give the three a few
  // rounds to connect, checking each server's own request counter.
  bool all_served = false;
  for (int round = 0; round < 20 && !all_served; ++round) {
    for (int i = 0; i < 15; ++i) ASSERT_TRUE((*client)->Forward(SmallForward()).ok());
    all_served = true;
    for (const auto& server : servers) all_served &= ForwardCount(*server) > 0;
  }
  for (size_t i = 0; i < servers.size(); ++i) {
    EXPECT_GT(ForwardCount(*servers[i]), 0) << "server " << addresses[i] << " got no calls";
  }

  // Kill one: every call still succeeds on the other two.
  servers[1]->Signal(SIGKILL);
  ASSERT_TRUE(servers[1]->WaitForExit(absl::Seconds(10)).ok());
  const double before0 = ForwardCount(*servers[0]);
  const double before2 = ForwardCount(*servers[2]);
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<v1::ForwardResponse> r = (*client)->Forward(SmallForward());
    EXPECT_TRUE(r.ok()) << i << ": " << r.status();
  }
  // The counters may trail the answers a little: poll briefly (bounded).
  double served = 0;
  for (int poll = 0; poll < 20; ++poll) {
    served = ForwardCount(*servers[0]) - before0 + ForwardCount(*servers[2]) - before2;
    if (served >= 20) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(served, 20);
}

}  // namespace
}  // namespace normserve::client
