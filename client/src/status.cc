#include "normserve/client/status.h"

#include "absl/strings/str_cat.h"

namespace normserve::client {

absl::Status FromGrpcStatus(const grpc::Status& status) {
  return FromWireCode(static_cast<int>(status.error_code()), status.error_message());
}

absl::Status FromWireCode(int code, const std::string& message) {
  if (code == 0) return absl::OkStatus();
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::UnknownError(absl::StrCat("status code ", code, ": ", message));
  }
  return absl::Status(static_cast<absl::StatusCode>(code), message);
}

}  // namespace normserve::client
