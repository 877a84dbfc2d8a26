// Builds the gRPC channel a Client talks through: target resolution,
// credentials, and the service config that turns on round_robin and retries.
#ifndef NORMSERVE_CLIENT_CHANNEL_H_
#define NORMSERVE_CLIENT_CHANNEL_H_

#include <grpcpp/channel.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "normserve/client/client_options.h"

namespace normserve::client {

// The JSON service config for `options`: loadBalancingConfig round_robin (when
// options.round_robin) and a retryPolicy on UNAVAILABLE for every method of
// normserve.v1.Normalizer (when options.enable_retries).
std::string ServiceConfigJson(const ClientOptions& options);

// A new channel with its own connections (a local subchannel pool, so two
// channels to the same target never share a TCP connection). Connecting is
// lazy: the first call (or WaitForConnected) dials. INVALID_ARGUMENT for a bad
// target or retry setting; NOT_FOUND when ca_cert_path cannot be read.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const ClientOptions& options);

}  // namespace normserve::client

#endif  // NORMSERVE_CLIENT_CHANNEL_H_
