// Options of a normserve client: where to connect, how to secure the channel,
// how to retry and balance, and the default per-call deadline.
//
// Defaults are written beside each field; fill them from flags only in main.
#ifndef NORMSERVE_CLIENT_CLIENT_OPTIONS_H_
#define NORMSERVE_CLIENT_CLIENT_OPTIONS_H_

#include <optional>
#include <string>

#include "absl/time/time.h"

namespace normserve::client {

struct ClientOptions {
  // Where the server(s) are. One of:
  //   "host:port"                       one address, resolved by DNS
  //   "10.0.0.1:50051,10.0.0.2:50051"   several IP literals (a static list,
  //                                     rewritten to an "ipv4:" / "ipv6:" URI;
  //                                     "localhost" counts as 127.0.0.1)
  //   "ipv4:a:p,b:p" / "dns:///name:port" / "unix:/path"  any gRPC target URI
  std::string target = "localhost:50051";

  // TLS with grpc::SslCredentials. ca_cert_path: PEM file of root
  // certificates; empty = gRPC's default roots. tls_server_name overrides the
  // name checked against the server certificate (e.g. when dialling an IP).
  bool tls = false;
  std::string ca_cert_path;
  std::string tls_server_name;

  // Deadline of a call that does not set CallOptions::timeout.
  // absl::InfiniteDuration() means no deadline.
  absl::Duration default_timeout = absl::Seconds(30);

  // Retries on UNAVAILABLE through gRPC's service config (retryPolicy):
  // max_attempts counts the first try (gRPC caps it at 5); backoff grows from
  // initial_backoff by backoff_multiplier up to max_backoff, with jitter.
  bool enable_retries = true;
  int max_attempts = 5;
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(2);
  double backoff_multiplier = 2.0;

  // Balance calls over every address of the target (round_robin); false uses
  // gRPC's default pick_first.
  bool round_robin = true;

  // Reconnect backoff after a connection is lost (gRPC default: 1 s .. 120 s;
  // ours is shorter so a restarted server is found again quickly).
  absl::Duration min_reconnect_backoff = absl::Milliseconds(100);
  absl::Duration max_reconnect_backoff = absl::Seconds(2);

  // Largest message sent or received, bytes (gRPC's default receive cap is
  // 4 MiB, too small for activations).
  int max_message_bytes = 512 << 20;

  // Bytes of a call's request kept for retries. A request bigger than this
  // is still sent but no longer retried once the buffer overflows.
  int retry_buffer_bytes = 64 << 20;
};

// Options of one call.
struct CallOptions {
  // Deadline relative to the start of the call; unset = the client's
  // default_timeout. An expired deadline yields DEADLINE_EXCEEDED.
  std::optional<absl::Duration> timeout;
  // Wait (until the deadline) for the channel to become ready instead of
  // failing fast with UNAVAILABLE when no server is reachable.
  bool wait_for_ready = false;
};

}  // namespace normserve::client

#endif  // NORMSERVE_CLIENT_CLIENT_OPTIONS_H_
