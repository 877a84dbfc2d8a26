// grpc.health.v1.Health/Check from the client side, through the stub that
// normserve::proto generates from the standard health.proto.
#ifndef NORMSERVE_CLIENT_HEALTH_H_
#define NORMSERVE_CLIENT_HEALTH_H_

#include <grpcpp/channel.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace normserve::client {

// grpc.health.v1.HealthCheckResponse.ServingStatus.
enum class ServingStatus { kUnknown = 0, kServing = 1, kNotServing = 2, kServiceUnknown = 3 };

// "UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN".
absl::string_view ServingStatusName(ServingStatus status);

// Calls Check for `service` ("" = the whole server) with the given deadline.
// The gRPC error when the call fails (NOT_FOUND when the server knows no such
// service; UNIMPLEMENTED when it serves no health service).
absl::StatusOr<ServingStatus> CheckHealth(const std::shared_ptr<grpc::Channel>& channel,
                                          absl::string_view service, absl::Duration timeout,
                                          bool wait_for_ready = false);

}  // namespace normserve::client

#endif  // NORMSERVE_CLIENT_HEALTH_H_
