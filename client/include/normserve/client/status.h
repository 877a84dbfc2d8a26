// The one place where a grpc::Status becomes an absl::Status on the client.
//
// gRPC and Abseil share the canonical code numbering, so the code is kept as
// is; the message is kept, prefixed by nothing.
#ifndef NORMSERVE_CLIENT_STATUS_H_
#define NORMSERVE_CLIENT_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace normserve::client {

// grpc::Status -> absl::Status, same code and message. OK maps to OkStatus().
absl::Status FromGrpcStatus(const grpc::Status& status);

// A StreamResponse's (code, message) pair -> absl::Status. Codes outside the
// canonical range become UNKNOWN with the raw code in the message.
absl::Status FromWireCode(int code, const std::string& message);

}  // namespace normserve::client

#endif  // NORMSERVE_CLIENT_STATUS_H_
