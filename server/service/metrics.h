// Prometheus metrics of the service, served as text on an HTTP port:
//   normserve_requests_total{op,code}          requests answered
//   normserve_request_seconds{op}              time from arrival to answer
//   normserve_queue_seconds{op}                time spent queued before compute
//   normserve_compute_seconds{op}              one batch's kernel time
//   normserve_batch_rows{op}, normserve_batch_requests{op}   batch sizes
//   normserve_bytes_received_total, normserve_bytes_sent_total  tensor payload bytes
//   normserve_queue_requests, normserve_queue_rows             queue depth now
// Thread-safe.
#ifndef NORMSERVE_SERVER_SERVICE_METRICS_H_
#define NORMSERVE_SERVER_SERVICE_METRICS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/batching/batch_observer.h"

namespace prometheus {
class Registry;
class Exposer;
}  // namespace prometheus

namespace normserve::server {

class Metrics : public BatchObserver {
 public:
  Metrics();
  ~Metrics() override;

  // Serves /metrics on address ("host:port"). Error when it cannot bind.
  absl::Status Serve(const std::string& address);

  // One answered RPC (or stream message): op is "forward", "backward",
  // "register", ...; code is the gRPC code's name.
  void OnAnswered(absl::string_view op, absl::string_view code, absl::Duration latency);
  void OnPayload(int64_t received_bytes, int64_t sent_bytes);

  void OnDequeued(Op op, absl::Duration queued) override;
  void OnBatch(Op op, int requests, int64_t rows, absl::Duration compute) override;
  void OnQueueDepth(int requests, int64_t rows) override;

 private:
  struct Families;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> families_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace normserve::server

#endif  // NORMSERVE_SERVER_SERVICE_METRICS_H_
