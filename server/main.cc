// normserve-server: the gRPC normalization service.
//
// Threads and shutdown order: main parses flags, builds the backends, starts
// the batcher's workers (--workers_per_device per GPU, one for the CPU), the
// metrics exposer and the gRPC server, then waits for SIGINT / SIGTERM. On a signal it marks health
// NOT_SERVING, stops accepting RPCs and lets those in flight finish
// (Server::Shutdown with the drain deadline; the batcher keeps running them),
// then shuts the batcher down (joins its workers) and exits 0.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "normserve/kernels/backend.h"
#include "server/batching/batcher.h"
#include "server/service/metrics.h"
#include "server/service/normalizer_service.h"
#include "server/service/param_registry.h"

ABSL_FLAG(std::string, address, "0.0.0.0:50051", "gRPC listen address (host:port)");
ABSL_FLAG(std::string, metrics_address, "0.0.0.0:9464",
          "Prometheus /metrics listen address (host:port); empty disables metrics");
ABSL_FLAG(std::string, backend, "auto",
          "auto: CUDA on every GPU in --devices when a GPU is present, else CPU; cpu; cuda");
ABSL_FLAG(std::string, devices, "",
          "comma-separated GPU indices for the CUDA backend; empty means all visible GPUs");
ABSL_FLAG(int, cpu_threads, 0, "CPU backend worker threads; 0 means one per core");
ABSL_FLAG(int64_t, max_batch_rows, 4096,
          "launch a batch once its rows reach this many (a larger single request runs alone)");
ABSL_FLAG(int64_t, max_queue_delay_us, 0,
          "... or once its oldest request has waited this many microseconds; 0 still batches "
          "the requests that arrive while every worker is busy");
ABSL_FLAG(int, workers_per_device, 2,
          "batches in flight per GPU (copies of one overlap compute of another); the CPU "
          "backend always runs one batch at a time over all its threads");
ABSL_FLAG(int, max_queued_requests, 1024,
          "requests waiting beyond this get RESOURCE_EXHAUSTED at once");
ABSL_FLAG(int64_t, max_queued_rows, int64_t{1} << 22,
          "rows waiting beyond this get RESOURCE_EXHAUSTED at once");
ABSL_FLAG(int, max_message_bytes, 256 << 20, "largest request or response message, in bytes");
ABSL_FLAG(int, max_stream_in_flight, 256, "requests in compute at once per Stream call");
ABSL_FLAG(int, max_params, 4096, "most registered parameter sets");
ABSL_FLAG(int, drain_timeout_s, 30,
          "on SIGTERM / SIGINT, how long in-flight RPCs may take before they are cancelled");
ABSL_FLAG(int, max_connection_age_s, 0,
          "close client connections after this many seconds (they reconnect at once) so that "
          "clients re-resolve and spread onto replicas added since; 0 keeps connections");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM server certificate; with --tls_key_file enables TLS");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error");

namespace {

constexpr char kServiceName[] = "normserve.v1.Normalizer";

absl::StatusOr<std::vector<int>> ParseDevices(const std::string& flag, int available) {
  std::vector<int> devices;
  if (flag.empty()) {
    for (int i = 0; i < available; ++i) devices.push_back(i);
    return devices;
  }
  for (absl::string_view part : absl::StrSplit(flag, ',', absl::SkipEmpty())) {
    int index;
    if (!absl::SimpleAtoi(part, &index) || index < 0 || index >= available) {
      return absl::InvalidArgumentError(
          absl::StrCat("--devices: \"", part, "\" is not a GPU index in [0, ", available, ")"));
    }
    devices.push_back(index);
  }
  return devices;
}

// One backend per batcher worker: every selected GPU, or the CPU.
absl::StatusOr<std::vector<std::unique_ptr<normserve::kernels::Backend>>> MakeBackends() {
  namespace kernels = normserve::kernels;
  const std::string choice = absl::GetFlag(FLAGS_backend);
  if (choice != "auto" && choice != "cpu" && choice != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("--backend must be auto, cpu or cuda, got \"", choice, "\""));
  }
  std::vector<std::unique_ptr<kernels::Backend>> backends;
  const int gpus = choice == "cpu" ? 0 : kernels::CudaDeviceCount();
  if (gpus > 0) {
    auto devices = ParseDevices(absl::GetFlag(FLAGS_devices), gpus);
    if (!devices.ok()) return devices.status();
    for (int device : *devices) {
      auto backend = kernels::MakeCudaBackend({.device = device});
      if (!backend.ok()) return backend.status();
      backends.push_back(*std::move(backend));
    }
    return backends;
  }
  if (choice == "cuda") {
    return absl::UnavailableError("--backend=cuda but no usable GPU was found");
  }
  backends.push_back(kernels::MakeCpuBackend({.threads = absl::GetFlag(FLAGS_cpu_threads)}));
  return backends;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeCredentials() {
  const std::string cert = absl::GetFlag(FLAGS_tls_cert_file);
  const std::string key = absl::GetFlag(FLAGS_tls_key_file);
  if (cert.empty() && key.empty()) return grpc::InsecureServerCredentials();
  if (cert.empty() || key.empty()) {
    return absl::InvalidArgumentError("--tls_cert_file and --tls_key_file go together");
  }
  auto cert_pem = ReadFile(cert);
  if (!cert_pem.ok()) return cert_pem.status();
  auto key_pem = ReadFile(key);
  if (!key_pem.ok()) return key_pem.status();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key_pem, *cert_pem});
  return grpc::SslServerCredentials(options);
}

int Fail(const absl::Status& status) {
  spdlog::critical("{}", status.ToString());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Serves LayerNorm / RMSNorm (forward, backward, fused residual) over gRPC.\n"
      "Usage: normserve-server [--address=0.0.0.0:50051] [--backend=auto|cpu|cuda] ...");
  absl::ParseCommandLine(argc, argv);
  spdlog::set_level(spdlog::level::from_str(absl::GetFlag(FLAGS_log_level)));

  // Signals are taken by sigwait below; block them before any thread starts
  // so that every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto backends = MakeBackends();
  if (!backends.ok()) return Fail(backends.status());
  for (const auto& backend : *backends) spdlog::info("backend: {}", backend->Describe());

  normserve::server::BatcherOptions batcher_options;
  batcher_options.max_batch_rows = absl::GetFlag(FLAGS_max_batch_rows);
  batcher_options.max_queue_delay = absl::Microseconds(absl::GetFlag(FLAGS_max_queue_delay_us));
  batcher_options.max_queued_requests = absl::GetFlag(FLAGS_max_queued_requests);
  batcher_options.max_queued_rows = absl::GetFlag(FLAGS_max_queued_rows);
  const bool on_gpu = (*backends)[0]->Describe().rfind("cuda", 0) == 0;
  batcher_options.workers_per_backend = on_gpu ? absl::GetFlag(FLAGS_workers_per_device) : 1;
  if (batcher_options.max_batch_rows < 1 || batcher_options.max_queued_requests < 1 ||
      batcher_options.workers_per_backend < 1 || batcher_options.max_queued_rows < 1 ||
      absl::GetFlag(FLAGS_max_queue_delay_us) < 0) {
    return Fail(absl::InvalidArgumentError(
        "--max_batch_rows, --max_queued_requests, --max_queued_rows and --workers_per_device "
        "must be >= 1 and "
        "--max_queue_delay_us >= 0"));
  }

  normserve::server::Metrics metrics;
  const std::string metrics_address = absl::GetFlag(FLAGS_metrics_address);
  if (!metrics_address.empty()) {
    if (auto status = metrics.Serve(metrics_address); !status.ok()) return Fail(status);
    spdlog::info("metrics on http://{}/metrics", metrics_address);
  }

  normserve::server::Batcher batcher(batcher_options, *std::move(backends), &metrics);
  normserve::server::ParamRegistry registry(absl::GetFlag(FLAGS_max_params));
  normserve::server::NormalizerService service(
      {.max_stream_in_flight = absl::GetFlag(FLAGS_max_stream_in_flight)}, &batcher, &registry,
      &metrics);

  auto credentials = MakeCredentials();
  if (!credentials.ok()) return Fail(credentials.status());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  const std::string address = absl::GetFlag(FLAGS_address);
  int bound_port = 0;
  builder.AddListeningPort(address, *credentials, &bound_port);
  builder.SetMaxReceiveMessageSize(absl::GetFlag(FLAGS_max_message_bytes));
  builder.SetMaxSendMessageSize(absl::GetFlag(FLAGS_max_message_bytes));
  if (const int age_s = absl::GetFlag(FLAGS_max_connection_age_s); age_s > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, age_s * 1000);
    // Calls in flight on an aged connection get this long to finish.
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, 30 * 1000);
  }
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    return Fail(absl::UnavailableError(absl::StrCat("cannot listen on ", address)));
  }
  server->GetHealthCheckService()->SetServingStatus(kServiceName, true);
  spdlog::info(
      "normserve serving {} on {} (max_batch_rows={}, max_queue_delay_us={}, "
      "workers per backend={})",
      kServiceName, address, batcher_options.max_batch_rows,
      absl::GetFlag(FLAGS_max_queue_delay_us), batcher_options.workers_per_backend);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  spdlog::info("signal {}: draining", signal_number);
  server->GetHealthCheckService()->SetServingStatus(false);
  server->Shutdown(std::chrono::system_clock::now() +
                   std::chrono::seconds(absl::GetFlag(FLAGS_drain_timeout_s)));
  batcher.Shutdown();
  spdlog::info("drained; exiting");
  return 0;
}
