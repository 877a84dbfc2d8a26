#include "normserve/client/channel.h"

#include <grpc/grpc.h>
#include <grpc/grpc_security_constants.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "normserve/client/target.h"

namespace normserve::client {
namespace {

// "0.1s": the duration syntax of the service config (a google.protobuf.Duration
// in JSON form).
std::string JsonDuration(absl::Duration d) {
  return absl::StrFormat("%.6fs", absl::ToDoubleSeconds(d));
}

int ClampMillis(absl::Duration d) {
  const int64_t ms = absl::ToInt64Milliseconds(d);
  return static_cast<int>(std::clamp<int64_t>(ms, 1, 1 << 30));
}

}  // namespace

std::string ServiceConfigJson(const ClientOptions& options) {
  std::string json = "{";
  if (options.round_robin) {
    absl::StrAppend(&json, R"("loadBalancingConfig":[{"round_robin":{}}])");
  }
  if (options.enable_retries) {
    if (options.round_robin) absl::StrAppend(&json, ",");
    absl::StrAppend(&json, R"("methodConfig":[{"name":[{"service":"normserve.v1.Normalizer"}],)",
                    R"("retryPolicy":{"maxAttempts":)", options.max_attempts,
                    R"(,"initialBackoff":")", JsonDuration(options.initial_backoff),
                    R"(","maxBackoff":")", JsonDuration(options.max_backoff),
                    R"(","backoffMultiplier":)", absl::StrFormat("%g", options.backoff_multiplier),
                    R"(,"retryableStatusCodes":["UNAVAILABLE"]}}])");
  }
  absl::StrAppend(&json, "}");
  return json;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const ClientOptions& options) {
  absl::StatusOr<std::string> target = ResolveTarget(options.target);
  if (!target.ok()) return target.status();
  if (options.enable_retries &&
      (options.max_attempts < 2 || options.initial_backoff <= absl::ZeroDuration() ||
       options.max_backoff <= absl::ZeroDuration() || options.backoff_multiplier <= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "retry policy needs max_attempts >= 2 (got ", options.max_attempts,
        "), positive backoffs and a positive multiplier (got ", options.backoff_multiplier, ")"));
  }

  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.ca_cert_path.empty()) {
      std::ifstream in(options.ca_cert_path, std::ios::binary);
      if (!in) {
        return absl::NotFoundError(
            absl::StrCat("cannot read CA certificate file '", options.ca_cert_path, "'"));
      }
      std::stringstream pem;
      pem << in.rdbuf();
      ssl.pem_root_certs = pem.str();
    }
    credentials = grpc::SslCredentials(ssl);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }

  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(ServiceConfigJson(options));
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, options.enable_retries ? 1 : 0);
  args.SetInt(GRPC_ARG_PER_RPC_RETRY_BUFFER_SIZE, options.retry_buffer_bytes);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, ClampMillis(options.min_reconnect_backoff));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, ClampMillis(options.min_reconnect_backoff));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, ClampMillis(options.max_reconnect_backoff));
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  if (options.tls && !options.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls_server_name);
  }
  return grpc::CreateCustomChannel(*target, credentials, args);
}

}  // namespace normserve::client
