// What the batcher reports about its work, for metrics. The batcher knows
// nothing of Prometheus; the frontend plugs an implementation in.
// Every method may be called from any batcher thread at once.
#ifndef NORMSERVE_SERVER_BATCHING_BATCH_OBSERVER_H_
#define NORMSERVE_SERVER_BATCHING_BATCH_OBSERVER_H_

#include <cstdint>

#include "absl/time/time.h"
#include "batch_key.h"

namespace normserve::server {

class BatchObserver {
 public:
  virtual ~BatchObserver() = default;
  // A request left the queue for compute after waiting `queued`.
  virtual void OnDequeued(Op op, absl::Duration queued) {}
  // One kernel launch of `requests` requests with `rows` rows in total.
  virtual void OnBatch(Op op, int requests, int64_t rows, absl::Duration compute) {}
  // Requests and rows waiting, after every change.
  virtual void OnQueueDepth(int requests, int64_t rows) {}
};

}  // namespace normserve::server

#endif  // NORMSERVE_SERVER_BATCHING_BATCH_OBSERVER_H_
