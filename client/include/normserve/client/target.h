// Turns the user's spelling of a target into a gRPC target URI.
#ifndef NORMSERVE_CLIENT_TARGET_H_
#define NORMSERVE_CLIENT_TARGET_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace normserve::client {

// - A target with a scheme ("dns:", "ipv4:", "ipv6:", "unix:", "xds:", or any
//   "scheme://") is returned unchanged.
// - A comma-separated list of "ip:port" becomes "ipv4:ip:port,ip:port" (or
//   "ipv6:[ip]:port,..."), the static resolver that round_robin spreads over.
//   "localhost" in a list is written as 127.0.0.1.
// - A single "host:port" is returned unchanged (gRPC resolves it by DNS).
// INVALID_ARGUMENT for an empty target, a list entry that is not an IP literal
// with a port in 1..65535, or a list mixing IPv4 and IPv6.
absl::StatusOr<std::string> ResolveTarget(absl::string_view target);

}  // namespace normserve::client

#endif  // NORMSERVE_CLIENT_TARGET_H_
