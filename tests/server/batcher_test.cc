// The batching core on its own (no gRPC): batch formation, limits, deadlines,
// cancellation, shutdown, and that every caller gets exactly its own rows.
#include "server/batching/batcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "host_tensor.h"
#include "reference.h"
#include "relative_error.h"

namespace normserve::server {
namespace {

using kernels::DType;
using reference::HostTensor;

// std::mutex based rather than absl::Notification: ThreadSanitizer (this test
// also runs under it) cannot see through Debian's uninstrumented Abseil.
class Notification {
 public:
  void Notify() {
    std::lock_guard lock(mu_);
    notified_ = true;
    cv_.notify_all();
  }
  bool HasBeenNotified() {
    std::lock_guard lock(mu_);
    return notified_;
  }
  bool WaitForNotificationWithTimeout(absl::Duration timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoSeconds(timeout), [this] { return notified_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;
};

// A backend that copies x to out (so a test sees where each row went), records
// every batch, and can be held inside Forward until released.
class RecordingBackend : public kernels::Backend {
 public:
  std::string Describe() const override { return "recording"; }

  absl::Status Forward(const kernels::ForwardBatch& batch) override {
    {
      std::unique_lock lock(mu_);
      batch_segments_.push_back(static_cast<int>(batch.segments.size()));
      batch_rows_.push_back(kernels::TotalRows(batch));
      entered_ = true;
      ++inside_;
      max_inside_ = std::max(max_inside_, inside_);
      changed_.notify_all();
      changed_.wait(lock, [this] { return !held_; });
      --inside_;
    }
    for (const auto& segment : batch.segments) {
      std::memcpy(segment.out, segment.x,
                  segment.rows * batch.hidden * kernels::DTypeSize(batch.dtype));
    }
    return absl::OkStatus();
  }
  absl::Status Backward(const kernels::BackwardBatch&) override {
    return absl::UnimplementedError("not used");
  }

  void Hold() {
    std::lock_guard lock(mu_);
    held_ = true;
  }
  void Release() {
    std::lock_guard lock(mu_);
    held_ = false;
    changed_.notify_all();
  }
  void WaitUntilEntered() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [this] { return entered_; });
  }
  // Waits until `count` batches are inside Forward at once; false on timeout.
  bool WaitUntilInside(int count) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return inside_ >= count; });
  }
  int max_inside() {
    std::lock_guard lock(mu_);
    return max_inside_;
  }
  std::vector<int> batch_segments() {
    std::lock_guard lock(mu_);
    return batch_segments_;
  }
  std::vector<int64_t> batch_rows() {
    std::lock_guard lock(mu_);
    return batch_rows_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  bool held_ = false;
  bool entered_ = false;
  int inside_ = 0;
  int max_inside_ = 0;
  std::vector<int> batch_segments_;
  std::vector<int64_t> batch_rows_;
};

// One caller's forward request over its own buffers, with the status its
// done callback received.
struct Caller {
  Caller(int64_t rows, int64_t hidden, std::mt19937_64& rng)
      : x(HostTensor::Random(DType::kF32, rows * hidden, rng)),
        out(HostTensor::Poisoned(DType::kF32, rows * hidden)),
        rows(rows),
        hidden(hidden) {}

  std::unique_ptr<WorkItem> MakeItem(const kernels::NormConfig& config = {}) {
    auto item = std::make_unique<WorkItem>();
    item->key.op = Op::kForward;
    item->key.dtype = DType::kF32;
    item->key.residual_dtype = DType::kF32;
    item->key.hidden = hidden;
    item->key.config = config;
    item->forward.rows = rows;
    item->forward.x = x.data();
    item->forward.out = out.data();
    item->done = [this](absl::Status status) {
      result = status;
      finished.Notify();
    };
    return item;
  }

  HostTensor x;
  HostTensor out;
  int64_t rows;
  int64_t hidden;
  absl::Status result;
  Notification finished;
};

std::vector<std::unique_ptr<kernels::Backend>> One(std::unique_ptr<kernels::Backend> backend) {
  std::vector<std::unique_ptr<kernels::Backend>> backends;
  backends.push_back(std::move(backend));
  return backends;
}

TEST(BatcherTest, BatchLaunchesOnceRowsReachMaxWithoutWaitingForTheDelay) {
  auto owned = std::make_unique<RecordingBackend>();
  RecordingBackend* backend = owned.get();
  Batcher batcher({.max_batch_rows = 8, .max_queue_delay = absl::Seconds(60)},
                  One(std::move(owned)), nullptr);
  std::mt19937_64 rng(1);
  std::vector<std::unique_ptr<Caller>> callers;
  for (int i = 0; i < 4; ++i) callers.push_back(std::make_unique<Caller>(2, 16, rng));
  for (auto& caller : callers) ASSERT_TRUE(batcher.Enqueue(caller->MakeItem()).ok());
  for (auto& caller : callers) {
    ASSERT_TRUE(caller->finished.WaitForNotificationWithTimeout(absl::Seconds(10)));
    EXPECT_TRUE(caller->result.ok()) << caller->result;
    EXPECT_EQ(caller->out.Values(), caller->x.Values());
  }
  EXPECT_THAT(backend->batch_rows(), ::testing::ElementsAre(8));
  EXPECT_THAT(backend->batch_segments(), ::testing::ElementsAre(4));
}

TEST(BatcherTest, LoneRequestLaunchesAfterTheDelay) {
  auto owned = std::make_unique<RecordingBackend>();
  RecordingBackend* backend = owned.get();
  const absl::Duration delay = absl::Milliseconds(30);
  Batcher batcher({.max_batch_rows = 1024, .max_queue_delay = delay}, One(std::move(owned)),
                  nullptr);
  std::mt19937_64 rng(2);
  Caller caller(3, 8, rng);
  const absl::Time start = absl::Now();
  ASSERT_TRUE(batcher.Enqueue(caller.MakeItem()).ok());
  ASSERT_TRUE(caller.finished.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_GE(absl::Now() - start, delay);
  EXPECT_TRUE(caller.result.ok());
  EXPECT_THAT(backend->batch_rows(), ::testing::ElementsAre(3));
}

TEST(BatcherTest, BatchNeverExceedsMaxRowsButAnOversizedRequestRunsAlone) {
  auto owned = std::make_unique<RecordingBackend>();
  RecordingBackend* backend = owned.get();
  backend->Hold();
  Batcher batcher({.max_batch_rows = 10, .max_queue_delay = absl::Milliseconds(1)},
                  One(std::move(owned)), nullptr);
  std::mt19937_64 rng(3);
  Caller blocker(1, 4, rng);
  ASSERT_TRUE(batcher.Enqueue(blocker.MakeItem()).ok());
  backend->WaitUntilEntered();
  // Queued while the worker is held: 6 + 6 cannot share a batch of 10; 25 runs alone.
  Caller a(6, 4, rng), b(6, 4, rng), big(25, 4, rng);
  ASSERT_TRUE(batcher.Enqueue(a.MakeItem()).ok());
  ASSERT_TRUE(batcher.Enqueue(b.MakeItem()).ok());
  ASSERT_TRUE(batcher.Enqueue(big.MakeItem()).ok());
  backend->Release();
  for (Caller* caller : {&blocker, &a, &b, &big}) {
    ASSERT_TRUE(caller->finished.WaitForNotificationWithTimeout(absl::Seconds(10)));
    EXPECT_TRUE(caller->result.ok());
    EXPECT_EQ(caller->out.Values(), caller->x.Values());
  }
  EXPECT_THAT(backend->batch_rows(), ::testing::ElementsAre(1, 6, 6, 25));
}

TEST(BatcherTest, WorkersOfOneBackendRunBatchesConcurrently) {
  auto owned = std::make_unique<RecordingBackend>();
  RecordingBackend* backend = owned.get();
  backend->Hold();
  Batcher batcher({.max_batch_rows = 2, .workers_per_backend = 2}, One(std::move(owned)), nullptr);
  std::mt19937_64 rng(10);
  Caller a(2, 4, rng), b(2, 4, rng), c(2, 4, rng);
  for (Caller* caller : {&a, &b, &c}) ASSERT_TRUE(batcher.Enqueue(caller->MakeItem()).ok());
  EXPECT_TRUE(backend->WaitUntilInside(2)) << "the second worker never started a batch";
  backend->Release();
  for (Caller* caller : {&a, &b, &c}) {
    ASSERT_TRUE(caller->finished.WaitForNotificationWithTimeout(absl::Seconds(10)));
    EXPECT_TRUE(caller->result.ok());
    EXPECT_EQ(caller->out.Values(), caller->x.Values());
  }
  EXPECT_EQ(backend->max_inside(), 2);
}

TEST(BatcherTest, DifferentKeysNeverShareABatch) {
  auto owned = std::make_unique<RecordingBackend>();
  RecordingBackend* backend = owned.get();
  backend->Hold();
  Batcher batcher({.max_batch_rows = 1024, .max_queue_delay = absl::Milliseconds(1)},
                  One(std::move(owned)), nullptr);
  std::mt19937_64 rng(4);
  Caller blocker(1, 4, rng), layer(2, 4, rng), rms(2, 4, rng), other_eps(2, 4, rng);
  ASSERT_TRUE(batcher.Enqueue(blocker.MakeItem()).ok());
  backend->WaitUntilEntered();
  ASSERT_TRUE(batcher.Enqueue(layer.MakeItem({.center = true})).ok());
  ASSERT_TRUE(batcher.Enqueue(rms.MakeItem({.center = false})).ok());
  ASSERT_TRUE(batcher.Enqueue(other_eps.MakeItem({.center = false, .eps = 0.5f})).ok());
  backend->Release();
  for (Caller* caller : {&blocker, &layer, &rms, &other_eps}) {
    ASSERT_TRUE(caller->finished.WaitForNotificationWithTimeout(absl::Seconds(10)));
  }
  EXPECT_THAT(backend->batch_segments(), ::testing::ElementsAre(1, 1, 1, 1));
}

TEST(BatcherTest, FullQueueAnswersResourceExhaustedAtOnce) {
  auto owned = std::make_unique<RecordingBackend>();
  RecordingBackend* backend = owned.get();
  backend->Hold();
  Batcher batcher(
      {.max_batch_rows = 1, .max_queue_delay = absl::ZeroDuration(), .max_queued_requests = 3},
      One(std::move(owned)), nullptr);
  std::mt19937_64 rng(5);
  std::vector<std::unique_ptr<Caller>> callers;
  for (int i = 0; i < 5; ++i) callers.push_back(std::make_unique<Caller>(1, 4, rng));
  ASSERT_TRUE(batcher.Enqueue(callers[0]->MakeItem()).ok());
  backend->WaitUntilEntered();  // callers[0] is in compute; the queue is empty
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE(batcher.Enqueue(callers[i]->MakeItem()).ok());
  const absl::Status refused = batcher.Enqueue(callers[4]->MakeItem());
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(), ::testing::HasSubstr("limit 3"));
  // The refused caller was answered synchronously with the same status.
  ASSERT_TRUE(callers[4]->finished.HasBeenNotified());
  EXPECT_EQ(callers[4]->result.code(), absl::StatusCode::kResourceExhausted);
  backend->Release();
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(callers[i]->finished.WaitForNotificationWithTimeout(absl::Seconds(10)));
    EXPECT_TRUE(callers[i]->result.ok());
  }
}

TEST(BatcherTest, ExpiredAndCancelledRequestsAreAnsweredWithoutCompute) {
  auto owned = std::make_unique<RecordingBackend>();
  RecordingBackend* backend = owned.get();
  Batcher batcher({.max_batch_rows = 1024, .max_queue_delay = absl::Milliseconds(5)},
                  One(std::move(owned)), nullptr);
  std::mt19937_64 rng(6);
  Caller expired(2, 4, rng), cancelled(2, 4, rng), live(2, 4, rng);
  auto expired_item = expired.MakeItem();
  expired_item->deadline = absl::Now() - absl::Seconds(1);
  auto cancelled_item = cancelled.MakeItem();
  cancelled_item->cancelled = [] { return true; };
  ASSERT_TRUE(batcher.Enqueue(std::move(expired_item)).ok());
  ASSERT_TRUE(batcher.Enqueue(std::move(cancelled_item)).ok());
  ASSERT_TRUE(batcher.Enqueue(live.MakeItem()).ok());
  for (Caller* caller : {&expired, &cancelled, &live}) {
    ASSERT_TRUE(caller->finished.WaitForNotificationWithTimeout(absl::Seconds(10)));
  }
  EXPECT_EQ(expired.result.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(cancelled.result.code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(live.result.ok());
  // Only the live request's rows reached the backend.
  EXPECT_THAT(backend->batch_rows(), ::testing::ElementsAre(2));
}

TEST(BatcherTest, ShutdownRunsQueuedWorkThenRefusesNewWork) {
  auto owned = std::make_unique<RecordingBackend>();
  Batcher batcher({.max_batch_rows = 1024, .max_queue_delay = absl::Hours(1)},
                  One(std::move(owned)), nullptr);
  std::mt19937_64 rng(7);
  Caller queued(2, 4, rng), late(2, 4, rng);
  ASSERT_TRUE(batcher.Enqueue(queued.MakeItem()).ok());
  batcher.Shutdown();  // must not wait for the hour-long delay
  ASSERT_TRUE(queued.finished.HasBeenNotified());
  EXPECT_TRUE(queued.result.ok());
  EXPECT_EQ(queued.out.Values(), queued.x.Values());
  EXPECT_EQ(batcher.Enqueue(late.MakeItem()).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(late.result.code(), absl::StatusCode::kUnavailable);
}

// The property the whole service rests on: with many concurrent callers on
// one key, each caller's output is its own rows' normalization, checked
// against the float64 reference, and batches did hold several callers.
TEST(BatcherTest, RowsNeverCrossBetweenCallers) {
  class CountingObserver : public BatchObserver {
   public:
    void OnBatch(Op, int requests, int64_t, absl::Duration) override {
      int seen = max_requests.load();
      while (requests > seen && !max_requests.compare_exchange_weak(seen, requests)) {
      }
    }
    std::atomic<int> max_requests{0};
  } observer;
  Batcher batcher({.max_batch_rows = 256, .max_queue_delay = absl::Milliseconds(2)},
                  One(kernels::MakeCpuBackend({.threads = 2})), &observer);
  constexpr int kCallers = 64;
  constexpr int64_t kHidden = 96;
  std::vector<std::unique_ptr<Caller>> callers;
  std::mt19937_64 rng(8);
  for (int i = 0; i < kCallers; ++i) {
    callers.push_back(std::make_unique<Caller>(1 + i % 5, kHidden, rng));
  }
  const kernels::NormConfig config{.center = true, .eps = 1e-5f};
  std::vector<std::thread> threads;
  for (auto& caller : callers) {
    threads.emplace_back(
        [&, c = caller.get()] { ASSERT_TRUE(batcher.Enqueue(c->MakeItem(config)).ok()); });
  }
  for (auto& thread : threads) thread.join();
  for (auto& caller : callers) {
    ASSERT_TRUE(caller->finished.WaitForNotificationWithTimeout(absl::Seconds(30)));
    ASSERT_TRUE(caller->result.ok()) << caller->result;
    reference::ForwardInputs in{.rows = caller->rows, .hidden = kHidden, .x = caller->x.Values()};
    const auto expected = reference::Forward(config, in);
    EXPECT_LT(reference::RelativeError(caller->out.Values(), expected.out), 1e-5);
  }
  EXPECT_GT(observer.max_requests.load(), 1) << "no batch held more than one caller";
}

TEST(BatcherTest, BackwardGradWeightIsReducedOverEachCallersOwnRows) {
  Batcher batcher({.max_batch_rows = 1024, .max_queue_delay = absl::Milliseconds(20)},
                  One(kernels::MakeCpuBackend({.threads = 2})), nullptr);
  constexpr int64_t kHidden = 40;
  const kernels::NormConfig config{.center = false, .eps = 1e-6f};
  std::mt19937_64 rng(9);
  struct BackwardCaller {
    int64_t rows;
    HostTensor x, grad_out, grad_in;
    std::vector<float> grad_weight, grad_bias;
    absl::Status result;
    Notification finished;
  };
  std::vector<std::unique_ptr<BackwardCaller>> callers;
  for (int64_t rows : {3, 5, 1}) {
    auto c = std::make_unique<BackwardCaller>();
    c->rows = rows;
    c->x = HostTensor::Random(DType::kF32, rows * kHidden, rng);
    c->grad_out = HostTensor::Random(DType::kF32, rows * kHidden, rng);
    c->grad_in = HostTensor::Poisoned(DType::kF32, rows * kHidden);
    c->grad_weight.assign(kHidden, std::nanf(""));
    c->grad_bias.assign(kHidden, std::nanf(""));
    callers.push_back(std::move(c));
  }
  for (auto& c : callers) {
    auto item = std::make_unique<WorkItem>();
    item->key = BatchKey{Op::kBackward, DType::kF32, DType::kF32, kHidden, config, nullptr};
    item->backward.rows = c->rows;
    item->backward.x = c->x.data();
    item->backward.grad_out = c->grad_out.data();
    item->backward.grad_in = c->grad_in.data();
    item->backward.grad_weight = c->grad_weight.data();
    item->backward.grad_bias = c->grad_bias.data();
    item->done = [c = c.get()](absl::Status status) {
      c->result = status;
      c->finished.Notify();
    };
    ASSERT_TRUE(batcher.Enqueue(std::move(item)).ok());
  }
  for (auto& c : callers) {
    ASSERT_TRUE(c->finished.WaitForNotificationWithTimeout(absl::Seconds(10)));
    ASSERT_TRUE(c->result.ok()) << c->result;
    reference::BackwardInputs in{
        .rows = c->rows, .hidden = kHidden, .x = c->x.Values(), .grad_out = c->grad_out.Values()};
    const auto expected = reference::Backward(config, in);
    EXPECT_LT(reference::RelativeError(c->grad_in.Values(), expected.grad_in), 1e-5);
    const std::vector<double> dw(c->grad_weight.begin(), c->grad_weight.end());
    const std::vector<double> db(c->grad_bias.begin(), c->grad_bias.end());
    EXPECT_LT(reference::RelativeError(dw, expected.grad_weight), 1e-5);
    EXPECT_LT(reference::RelativeError(db, expected.grad_bias), 1e-5);
  }
}

}  // namespace
}  // namespace normserve::server
