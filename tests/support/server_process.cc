#include "server_process.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"

#ifndef NORMSERVE_SERVER_BINARY
#error "NORMSERVE_SERVER_BINARY must name the normserve-server binary"
#endif

namespace normserve::testing {

int PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

namespace {

bool AcceptsConnections(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  const bool connected = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return connected;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    std::vector<std::string> extra_flags, int port) {
  // A picked port can be taken by another process before the server binds it
  // (tests run in parallel): the server then exits, and a fresh pick is tried.
  const int attempts = port != 0 ? 1 : 3;
  absl::StatusOr<std::unique_ptr<ServerProcess>> server;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    server = StartOnce(extra_flags, port != 0 ? port : PickFreePort());
    if (server.ok() || !absl::IsAborted(server.status())) break;
  }
  return server;
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::StartOnce(
    const std::vector<std::string>& extra_flags, int port) {
  auto server = std::unique_ptr<ServerProcess>(new ServerProcess());
  server->port_ = port;
  int metrics_port = PickFreePort();
  while (metrics_port == port) metrics_port = PickFreePort();
  server->target_ = absl::StrCat("127.0.0.1:", server->port_);
  server->metrics_url_ = absl::StrCat("127.0.0.1:", metrics_port, "/metrics");

  // $NORMSERVE_SERVER_BINARY overrides the path baked in at build time (for
  // test binaries carried to another machine, such as the GPU one).
  const char* binary = std::getenv("NORMSERVE_SERVER_BINARY");
  std::vector<std::string> args = {binary != nullptr ? binary : NORMSERVE_SERVER_BINARY,
                                   absl::StrCat("--address=", server->target_),
                                   absl::StrCat("--metrics_address=127.0.0.1:", metrics_port),
                                   "--log_level=warn"};
  bool backend_given = false;
  for (const auto& flag : extra_flags) backend_given |= absl::StartsWith(flag, "--backend");
  if (!backend_given) {
    // CPU unless NORMSERVE_TEST_BACKEND says otherwise (cuda on the GPU machine).
    const char* backend = std::getenv("NORMSERVE_TEST_BACKEND");
    args.push_back(absl::StrCat("--backend=", backend != nullptr ? backend : "cpu"));
  }
  args.insert(args.end(), extra_flags.begin(), extra_flags.end());

  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  server->pid_ = pid;

  // First wait for the port to accept TCP connections, so that the gRPC
  // channel below never sees a refused connection (and its reconnect backoff).
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  while (!AcceptsConnections(server->port_)) {
    if (server->ExitedEarly()) {
      return absl::AbortedError("normserve-server exited before serving (port taken?)");
    }
    if (absl::Now() > give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // A TLS server (--tls_cert_file) is checked over TLS, trusting its own
  // (self-signed) certificate.
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  for (const auto& flag : extra_flags) {
    if (!absl::StartsWith(flag, "--tls_cert_file=")) continue;
    std::ifstream file(flag.substr(std::strlen("--tls_cert_file=")));
    std::stringstream pem;
    pem << file.rdbuf();
    credentials = grpc::SslCredentials({.pem_root_certs = pem.str()});
  }
  auto channel = grpc::CreateChannel(server->target_, credentials);
  auto health = grpc::health::v1::Health::NewStub(channel);
  while (absl::Now() < give_up) {
    if (server->ExitedEarly()) {
      return absl::AbortedError("normserve-server exited before serving (port taken?)");
    }
    grpc::ClientContext context;
    context.set_wait_for_ready(true);
    // Short calls, so that a server that died is noticed above.
    context.set_deadline(absl::ToChronoTime(std::min(give_up, absl::Now() + absl::Seconds(1))));
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    if (health->Check(&context, request, &response).ok() &&
        response.status() == grpc::health::v1::HealthCheckResponse::SERVING) {
      return server;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError("normserve-server did not become SERVING within 20 s");
}

bool ServerProcess::ExitedEarly() {
  if (waitpid(pid_, nullptr, WNOHANG) != pid_) return false;
  exited_ = true;
  return true;
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void ServerProcess::Signal(int signal) {
  if (pid_ > 0 && !exited_) kill(pid_, signal);
}

absl::StatusOr<int> ServerProcess::WaitForExit(absl::Duration timeout) {
  const absl::Time give_up = absl::Now() + timeout;
  while (absl::Now() < give_up) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError("server still running");
}

absl::StatusOr<std::string> ServerProcess::ScrapeMetrics() const {
  // A minimal HTTP/1.0 GET: enough for the exposer, no client library needed.
  const std::vector<std::string> parts = absl::StrSplit(metrics_url_, absl::MaxSplits(':', 1));
  const std::vector<std::string> port_path = absl::StrSplit(parts[1], absl::MaxSplits('/', 1));
  int port;
  if (!absl::SimpleAtoi(port_path[0], &port)) return absl::InternalError("bad metrics url");
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return absl::UnavailableError("cannot connect to the metrics port");
  }
  const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return absl::UnavailableError("cannot send the metrics request");
  }
  std::string response;
  char buffer[65536];
  ssize_t got;
  while ((got = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, got);
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (body == std::string::npos) return absl::DataLossError("malformed metrics response");
  return response.substr(body + 4);
}

double SumMetric(const std::string& text, const std::string& name,
                 const std::vector<std::string>& label_matchers) {
  double sum = 0;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t end_of_name = line.find_first_of("{ ");
    if (end_of_name == std::string::npos || line.substr(0, end_of_name) != name) continue;
    bool matches = true;
    for (const auto& matcher : label_matchers) matches &= absl::StrContains(line, matcher);
    if (!matches) continue;
    double value;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &value)) sum += value;
  }
  return sum;
}

}  // namespace normserve::testing
