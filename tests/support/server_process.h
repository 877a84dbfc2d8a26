// Runs a real normserve-server as a child process on loopback, for
// integration tests.
//
//   auto server = ServerProcess::Start({"--max_batch_rows=64"});
//   ASSERT_TRUE(server.ok()) << server.status();
//   auto stub = v1::Normalizer::NewStub(grpc::CreateChannel((*server)->target(), ...));
//
// Start picks free 127.0.0.1 ports (gRPC and metrics) unless a port is given
// (and picks again, up to 3 times, when the server exits before serving: a
// parallel test may take a picked port first),
// runs the binary built by this tree (--backend from extra_flags, else from
// $NORMSERVE_TEST_BACKEND, else cpu) and returns once health reports SERVING. The destructor kills
// a server still running (SIGKILL) and reaps it.
#ifndef NORMSERVE_TESTS_SUPPORT_SERVER_PROCESS_H_
#define NORMSERVE_TESTS_SUPPORT_SERVER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace normserve::testing {

class ServerProcess {
 public:
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      std::vector<std::string> extra_flags = {}, int port = 0);
  ~ServerProcess();

  const std::string& target() const { return target_; }  // "127.0.0.1:<port>"
  int port() const { return port_; }
  const std::string& metrics_url() const { return metrics_url_; }  // "127.0.0.1:<p>/metrics"

  void Signal(int signal);
  // The exit code (or 128 + signal), or DEADLINE_EXCEEDED if still running.
  absl::StatusOr<int> WaitForExit(absl::Duration timeout);

  // GET of metrics_url(): the Prometheus text.
  absl::StatusOr<std::string> ScrapeMetrics() const;

 private:
  ServerProcess() = default;
  // One try on the given gRPC port (metrics on another); ABORTED when the
  // server exits before it serves.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> StartOnce(
      const std::vector<std::string>& extra_flags, int port);
  // Whether the process has exited (reaping it if so).
  bool ExitedEarly();

  pid_t pid_ = -1;
  bool exited_ = false;
  int port_ = 0;
  std::string target_;
  std::string metrics_url_;
};

// A port on 127.0.0.1 that was free a moment ago.
int PickFreePort();

// The value of a Prometheus sample: the sum of every series of `name` whose
// labels contain each of `label_matchers` (e.g. {"op=\"forward\""}); 0 if none.
double SumMetric(const std::string& text, const std::string& name,
                 const std::vector<std::string>& label_matchers = {});

}  // namespace normserve::testing

#endif  // NORMSERVE_TESTS_SUPPORT_SERVER_PROCESS_H_
