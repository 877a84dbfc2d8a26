// The one place where absl::Status becomes grpc::Status.
#ifndef NORMSERVE_SERVER_SERVICE_GRPC_STATUS_H_
#define NORMSERVE_SERVER_SERVICE_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace normserve::server {

// Same code (the two enums share their numbering), same message.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace normserve::server

#endif  // NORMSERVE_SERVER_SERVICE_GRPC_STATUS_H_
