// The batching core: queues requests by batch key and runs each batch as one
// kernel launch on a backend. Knows nothing of gRPC.
//
//   Batcher batcher(options, std::move(backends), &observer);
//   batcher.Enqueue(std::move(item));
//   // item->done runs exactly once: later from a worker thread, or at once
//   // from this thread when the item is refused (queue full, shutting down).
//
// A key's queue becomes a batch when its rows reach max_batch_rows or when its
// oldest request has waited max_queue_delay, whichever comes first. Among
// ready queues the one whose oldest request is oldest goes first. Requests
// whose deadline has passed or that were cancelled are answered
// (DEADLINE_EXCEEDED / CANCELLED) when their batch is formed, before compute.
//
// Threads: options.workers_per_backend workers per backend, started by the
// constructor. Shutdown (also
// run by the destructor) stops accepting, lets the workers run everything
// already queued without waiting for the delay, then joins them.
#ifndef NORMSERVE_SERVER_BATCHING_BATCHER_H_
#define NORMSERVE_SERVER_BATCHING_BATCHER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "batch_key.h"
#include "batch_observer.h"
#include "normserve/kernels/backend.h"
#include "work_item.h"

namespace normserve::server {

struct BatcherOptions {
  // A batch launches once its rows reach this many (a single larger request
  // still runs, alone). >= 1.
  int64_t max_batch_rows = 4096;
  // ... or once its oldest request has waited this long. Zero (as Triton's
  // default) still batches: requests that arrive while every worker is busy
  // wait and leave together; an idle worker takes a request at once.
  absl::Duration max_queue_delay = absl::ZeroDuration();
  // Beyond either limit, Enqueue answers RESOURCE_EXHAUSTED at once.
  int max_queued_requests = 1024;
  int64_t max_queued_rows = int64_t{1} << 22;
  // Worker threads per backend, each running one batch at a time. More than
  // one lets a GPU backend overlap one batch's copies with another's compute.
  int workers_per_backend = 1;
};

class Batcher {
 public:
  // workers_per_backend worker threads per backend (at least one backend).
  // observer may be null; otherwise it must outlive the batcher.
  Batcher(const BatcherOptions& options, std::vector<std::unique_ptr<kernels::Backend>> backends,
          BatchObserver* observer);
  ~Batcher();

  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // OK: the item is queued and its done callback will run later. Otherwise the
  // item is refused and its done callback has already run with the returned
  // status: RESOURCE_EXHAUSTED when a queue limit is reached, UNAVAILABLE
  // after Shutdown.
  absl::Status Enqueue(std::unique_ptr<WorkItem> item) ABSL_LOCKS_EXCLUDED(mu_);

  // Stops accepting, finishes everything queued, joins the workers. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct KeyQueue {
    std::deque<std::unique_ptr<WorkItem>> items;
    int64_t rows = 0;
  };
  // What a worker takes out of the queues in one go.
  struct TakenBatch {
    std::vector<std::unique_ptr<WorkItem>> items;    // to compute
    std::vector<std::unique_ptr<WorkItem>> expired;  // deadline passed
    std::vector<std::unique_ptr<WorkItem>> cancelled;
  };

  // Queues the item (taking it) or leaves it with the caller and says why.
  absl::Status TryEnqueue(std::unique_ptr<WorkItem>& item) ABSL_LOCKS_EXCLUDED(mu_);
  void WorkerLoop(kernels::Backend* backend) ABSL_LOCKS_EXCLUDED(mu_);
  // Waits for a ready queue and takes a batch from it; false once shut down
  // and drained.
  bool TakeBatch(TakenBatch* taken) ABSL_LOCKS_EXCLUDED(mu_);
  void TakeFrom(KeyQueue& queue, absl::Time now, TakenBatch* taken)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Run(kernels::Backend* backend, std::vector<std::unique_ptr<WorkItem>>& items);

  const BatcherOptions options_;
  BatchObserver* const observer_;  // may be null
  // The backends, owned here; each used only by its own workers.
  std::vector<std::unique_ptr<kernels::Backend>> backends_;
  std::vector<std::thread> workers_;

  // std::mutex rather than absl::Mutex: ThreadSanitizer understands it even
  // with Debian's uninstrumented Abseil, so the core can be checked under TSan.
  std::mutex mu_;
  // Signalled on every enqueue and at shutdown.
  std::condition_variable work_available_;
  absl::flat_hash_map<BatchKey, KeyQueue> queues_ ABSL_GUARDED_BY(mu_);
  int queued_requests_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t queued_rows_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace normserve::server

#endif  // NORMSERVE_SERVER_BATCHING_BATCHER_H_
