#include "normserve/client/target.h"

#include <arpa/inet.h>

#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace normserve::client {
namespace {

bool HasScheme(absl::string_view target) {
  if (absl::StrContains(target, "://")) return true;
  for (absl::string_view scheme :
       {"dns:", "ipv4:", "ipv6:", "unix:", "unix-abstract:", "xds:", "vsock:"}) {
    if (absl::StartsWith(target, scheme)) return true;
  }
  return false;
}

enum class Family { kV4, kV6 };

// "a.b.c.d:port" or "[v6]:port" -> normalized entry and its family.
absl::StatusOr<std::pair<std::string, Family>> ParseListEntry(absl::string_view entry) {
  entry = absl::StripAsciiWhitespace(entry);
  const size_t colon = entry.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("target entry '", entry, "' has no ':port'"));
  }
  std::string host(entry.substr(0, colon));
  const absl::string_view port_text = entry.substr(colon + 1);
  int port = 0;
  if (!absl::SimpleAtoi(port_text, &port) || port < 1 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("target entry '", entry, "' has port '", port_text, "', not 1..65535"));
  }
  if (host == "localhost") host = "127.0.0.1";
  unsigned char buffer[16];
  if (inet_pton(AF_INET, host.c_str(), buffer) == 1) {
    return std::make_pair(absl::StrCat(host, ":", port), Family::kV4);
  }
  absl::string_view bare = host;
  if (absl::ConsumePrefix(&bare, "[") && absl::ConsumeSuffix(&bare, "]")) {
    if (inet_pton(AF_INET6, std::string(bare).c_str(), buffer) == 1) {
      return std::make_pair(absl::StrCat("[", bare, "]:", port), Family::kV6);
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("target entry '", entry,
                   "' is not an IP literal; a list needs IPs (use dns:///name:port for a name)"));
}

}  // namespace

absl::StatusOr<std::string> ResolveTarget(absl::string_view target) {
  target = absl::StripAsciiWhitespace(target);
  if (target.empty()) return absl::InvalidArgumentError("target is empty");
  if (HasScheme(target)) return std::string(target);
  if (!absl::StrContains(target, ',')) return std::string(target);
  std::vector<std::string> entries;
  std::optional<Family> family;
  for (absl::string_view entry : absl::StrSplit(target, ',', absl::SkipWhitespace())) {
    absl::StatusOr<std::pair<std::string, Family>> parsed = ParseListEntry(entry);
    if (!parsed.ok()) return parsed.status();
    if (family.has_value() && *family != parsed->second) {
      return absl::InvalidArgumentError(
          absl::StrCat("target '", target, "' mixes IPv4 and IPv6 addresses"));
    }
    family = parsed->second;
    entries.push_back(std::move(parsed->first));
  }
  if (entries.empty()) return absl::InvalidArgumentError("target lists no address");
  return absl::StrCat(*family == Family::kV4 ? "ipv4:" : "ipv6:", absl::StrJoin(entries, ","));
}

}  // namespace normserve::client
