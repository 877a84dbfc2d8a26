#include "batcher.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernel_batch.h"

namespace normserve::server {

Batcher::Batcher(const BatcherOptions& options,
                 std::vector<std::unique_ptr<kernels::Backend>> backends, BatchObserver* observer)
    : options_(options), observer_(observer), backends_(std::move(backends)) {
  for (auto& backend : backends_) {
    for (int i = 0; i < std::max(1, options_.workers_per_backend); ++i) {
      workers_.emplace_back([this, raw = backend.get()] { WorkerLoop(raw); });
    }
  }
}

Batcher::~Batcher() { Shutdown(); }

absl::Status Batcher::Enqueue(std::unique_ptr<WorkItem> item) {
  absl::Status refused = TryEnqueue(item);
  if (!refused.ok()) item->done(refused);
  return refused;
}

absl::Status Batcher::TryEnqueue(std::unique_ptr<WorkItem>& item) {
  int depth_requests;
  int64_t depth_rows;
  {
    std::unique_lock lock(mu_);
    if (shutting_down_) return absl::UnavailableError("server is shutting down");
    if (queued_requests_ >= options_.max_queued_requests) {
      return absl::ResourceExhaustedError(
          absl::StrCat("queue full: ", queued_requests_, " requests waiting (limit ",
                       options_.max_queued_requests, "); retry later"));
    }
    if (queued_rows_ + item->rows() > options_.max_queued_rows && queued_requests_ > 0) {
      return absl::ResourceExhaustedError(
          absl::StrCat("queue full: ", queued_rows_, " rows waiting, request adds ", item->rows(),
                       " (limit ", options_.max_queued_rows, "); retry later"));
    }
    item->enqueued_at = absl::Now();
    KeyQueue& queue = queues_[item->key];
    queue.rows += item->rows();
    queued_rows_ += item->rows();
    ++queued_requests_;
    queue.items.push_back(std::move(item));
    depth_requests = queued_requests_;
    depth_rows = queued_rows_;
    work_available_.notify_one();
  }
  if (observer_ != nullptr) observer_->OnQueueDepth(depth_requests, depth_rows);
  return absl::OkStatus();
}

void Batcher::Shutdown() {
  {
    std::unique_lock lock(mu_);
    if (shutting_down_ && workers_.empty()) return;
    shutting_down_ = true;
    work_available_.notify_all();
  }
  for (auto& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
  workers_.clear();
}

void Batcher::WorkerLoop(kernels::Backend* backend) {
  TakenBatch taken;
  while (TakeBatch(&taken)) {
    for (auto& item : taken.expired) {
      item->done(absl::DeadlineExceededError("deadline passed while queued; not computed"));
    }
    for (auto& item : taken.cancelled) {
      item->done(absl::CancelledError("cancelled by the caller while queued"));
    }
    if (!taken.items.empty()) Run(backend, taken.items);
    taken = TakenBatch();
  }
}

bool Batcher::TakeBatch(TakenBatch* taken) {
  int depth_requests;
  int64_t depth_rows;
  {
    std::unique_lock lock(mu_);
    while (true) {
      if (queues_.empty()) {
        if (shutting_down_) return false;
        work_available_.wait(lock);
        continue;
      }
      const absl::Time now = absl::Now();
      // The ready queue whose oldest request is oldest; otherwise the time
      // at which the first queue becomes ready by delay.
      auto ready = queues_.end();
      absl::Time ready_oldest = absl::InfiniteFuture();
      absl::Time next_ready = absl::InfiniteFuture();
      for (auto it = queues_.begin(); it != queues_.end(); ++it) {
        const absl::Time oldest = it->second.items.front()->enqueued_at;
        const absl::Time due = oldest + options_.max_queue_delay;
        const bool is_ready =
            shutting_down_ || it->second.rows >= options_.max_batch_rows || due <= now;
        if (is_ready && oldest < ready_oldest) {
          ready = it;
          ready_oldest = oldest;
        }
        if (due < next_ready) next_ready = due;
      }
      if (ready != queues_.end()) {
        TakeFrom(ready->second, now, taken);
        if (ready->second.items.empty()) queues_.erase(ready);
        break;
      }
      if (next_ready == absl::InfiniteFuture()) {
        work_available_.wait(lock);
      } else {
        work_available_.wait_until(lock, absl::ToChronoTime(next_ready));
      }
    }
    depth_requests = queued_requests_;
    depth_rows = queued_rows_;
  }
  if (observer_ != nullptr) observer_->OnQueueDepth(depth_requests, depth_rows);
  return true;
}

void Batcher::TakeFrom(KeyQueue& queue, absl::Time now, TakenBatch* taken) {
  int64_t rows = 0;
  while (!queue.items.empty()) {
    WorkItem& front = *queue.items.front();
    const bool is_live = front.deadline > now && !front.is_cancelled();
    // Always take the first live request, even when larger than a batch.
    if (is_live && !taken->items.empty() && rows + front.rows() > options_.max_batch_rows) break;
    std::unique_ptr<WorkItem> item = std::move(queue.items.front());
    queue.items.pop_front();
    queue.rows -= item->rows();
    queued_rows_ -= item->rows();
    --queued_requests_;
    // The deadline is checked first: a caller whose deadline passed also
    // reads as cancelled, and DEADLINE_EXCEEDED is the truer answer.
    if (item->deadline <= now) {
      taken->expired.push_back(std::move(item));
    } else if (item->is_cancelled()) {
      taken->cancelled.push_back(std::move(item));
    } else {
      rows += item->rows();
      if (observer_ != nullptr) observer_->OnDequeued(item->key.op, now - item->enqueued_at);
      taken->items.push_back(std::move(item));
    }
  }
}

void Batcher::Run(kernels::Backend* backend, std::vector<std::unique_ptr<WorkItem>>& items) {
  const BatchKey& key = items.front()->key;
  const absl::Time start = absl::Now();
  absl::Status status;
  int64_t rows = 0;
  if (key.op == Op::kForward) {
    const kernels::ForwardBatch batch = MakeForwardBatch(key, items);
    rows = kernels::TotalRows(batch);
    status = backend->Forward(batch);
  } else {
    const kernels::BackwardBatch batch = MakeBackwardBatch(key, items);
    rows = kernels::TotalRows(batch);
    status = backend->Backward(batch);
  }
  if (observer_ != nullptr) {
    observer_->OnBatch(key.op, static_cast<int>(items.size()), rows, absl::Now() - start);
  }
  for (auto& item : items) item->done(status);
}

}  // namespace normserve::server
