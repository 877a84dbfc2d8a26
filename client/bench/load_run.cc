#include "normserve/loadgen/load_run.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <random>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "normserve/client/stream_session.h"

namespace normserve::loadgen {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t ToNs(absl::Duration d) { return absl::ToInt64Nanoseconds(d); }

// A single worker thread running posted tasks in order. Closed-loop chains
// hop onto it after an error, so that calls failing synchronously never
// recurse through the callbacks of their own failures.
class Worker {
 public:
  Worker() : thread_([this] { Loop(); }) {}
  ~Worker() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    thread_.join();
  }
  void Post(absl::AnyInvocable<void()> task) {
    absl::MutexLock lock(&mu_);
    tasks_.push_back(std::move(task));
  }

 private:
  void Loop() {
    while (true) {
      absl::AnyInvocable<void()> task;
      {
        absl::MutexLock lock(&mu_);
        auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_ || !tasks_.empty(); };
        mu_.Await(absl::Condition(&ready));
        if (tasks_.empty()) return;  // stop_ and drained
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  absl::Mutex mu_;
  std::deque<absl::AnyInvocable<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts after the fields it reads
};

// One stream per channel in streaming mode: ids map back to the request's
// intended time, op and continuation.
struct StreamChannel {
  struct Pending {
    int64_t intended_ns;
    size_t op;
    absl::AnyInvocable<void(bool ok)> next;
  };
  absl::Mutex mu;
  uint64_t next_id ABSL_GUARDED_BY(mu) = 1;
  absl::flat_hash_map<uint64_t, Pending> pending ABSL_GUARDED_BY(mu);
  std::unique_ptr<client::StreamSession> session;
};

class LoadRun {
 public:
  LoadRun(const LoadOptions& options, const std::vector<client::Client*>& clients,
          std::vector<PreparedOp> ops)
      : options_(options), clients_(clients), ops_(std::move(ops)) {}

  RunResult Run() {
    start_ns_ = NowNs();
    warm_end_ns_ = start_ns_ + ToNs(options_.warmup);
    end_ns_ = warm_end_ns_ + ToNs(options_.duration);
    if (options_.streaming) OpenStreams();
    std::thread progress;
    if (options_.progress) progress = std::thread([this] { ProgressLoop(); });

    if (options_.loop == Loop::kClosed) {
      RunClosed();
    } else {
      RunOpen();
    }
    WaitDrained();
    if (options_.streaming) CloseStreams();
    progress_stop_.Notify();
    if (progress.joinable()) progress.join();
    worker_.reset();  // runs what is left, then stops

    absl::MutexLock lock(&mu_);
    result_.loop = options_.loop;
    result_.concurrency = options_.loop == Loop::kClosed ? options_.concurrency : 0;
    result_.target_rate = options_.loop == Loop::kOpen ? options_.rate : 0;
    result_.streaming = options_.streaming;
    result_.channels = static_cast<int>(clients_.size());
    result_.duration_s = absl::ToDoubleSeconds(options_.duration);
    result_.requests = result_.ok + result_.errors;
    result_.throughput_rps = static_cast<double>(result_.requests) / result_.duration_s;
    result_.rows_per_s = static_cast<double>(result_.rows) / result_.duration_s;
    result_.gb_per_s = static_cast<double>(result_.payload_bytes) / result_.duration_s / 1e9;
    return std::move(result_);
  }

 private:
  // --- closed loop ---
  void RunClosed() {
    {
      absl::MutexLock lock(&mu_);
      active_slots_ = options_.concurrency;
    }
    for (int slot = 0; slot < options_.concurrency; ++slot) {
      const size_t channel = static_cast<size_t>(slot) % clients_.size();
      auto picker = std::make_shared<OpPicker>(options_.mix, options_.seed + slot);
      StartChain(channel, std::move(picker));
    }
  }

  // Sends one request of the slot; its completion sends the next one until
  // the window has closed.
  void StartChain(size_t channel, std::shared_ptr<OpPicker> picker) {
    const int64_t now = NowNs();
    if (now >= end_ns_) {
      absl::MutexLock lock(&mu_);
      --active_slots_;
      return;
    }
    Issue(channel, picker->Pick(), now, [this, channel, picker](bool ok) mutable {
      if (ok) {
        StartChain(channel, std::move(picker));
      } else {
        worker_->Post([this, channel, picker] { StartChain(channel, picker); });
      }
    });
  }

  // --- open loop ---
  void RunOpen() {
    OpPicker picker(options_.mix, options_.seed);
    std::mt19937_64 rng(options_.seed * 7919 + 1);
    std::exponential_distribution<double> exponential(options_.rate);
    const double interval_ns = 1e9 / options_.rate;
    double next_ns = static_cast<double>(start_ns_);
    size_t channel = 0;
    while (next_ns < static_cast<double>(end_ns_)) {
      const int64_t intended = static_cast<int64_t>(next_ns);
      const int64_t wait = intended - NowNs();
      if (wait > 200'000) {
        absl::SleepFor(absl::Nanoseconds(wait - 100'000));
        continue;
      }
      if (wait > 0) std::this_thread::yield();
      if (wait > 0) continue;
      {
        absl::MutexLock lock(&mu_);
        auto room = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
          return outstanding_ < options_.max_outstanding;
        };
        mu_.AwaitWithTimeout(absl::Condition(&room), absl::Seconds(1));
      }
      Issue(channel, picker.Pick(), intended, [](bool) {});
      channel = (channel + 1) % clients_.size();
      next_ns += options_.poisson ? exponential(rng) * 1e9 : interval_ns;
    }
  }

  // --- one request ---
  void Issue(size_t channel, size_t op_index, int64_t intended_ns,
             absl::AnyInvocable<void(bool ok)> next) {
    {
      absl::MutexLock lock(&mu_);
      ++outstanding_;
    }
    const PreparedOp& op = ops_[op_index];
    if (options_.streaming) {
      IssueOnStream(channel, op_index, intended_ns, std::move(next));
      return;
    }
    client::CallOptions call;
    call.timeout = options_.call_timeout;
    client::Client& client = *clients_[channel];
    if (op.forward) {
      client.ForwardAsync(op.forward, call,
                          [this, op_index, intended_ns,
                           next = std::move(next)](absl::StatusOr<v1::ForwardResponse> r) mutable {
                            Complete(intended_ns, op_index, r.status(),
                                     r.ok() ? ResponsePayloadBytes(*r) : 0, std::move(next));
                          });
    } else if (op.backward) {
      client.BackwardAsync(op.backward, call,
                           [this, op_index, intended_ns, next = std::move(next)](
                               absl::StatusOr<v1::BackwardResponse> r) mutable {
                             Complete(intended_ns, op_index, r.status(),
                                      r.ok() ? ResponsePayloadBytes(*r) : 0, std::move(next));
                           });
    } else {
      client.EchoAsync(op.echo, call,
                       [this, op_index, intended_ns,
                        next = std::move(next)](absl::StatusOr<v1::EchoResponse> r) mutable {
                         Complete(intended_ns, op_index, r.status(),
                                  r.ok() ? static_cast<int64_t>(r->payload().size()) : 0,
                                  std::move(next));
                       });
    }
  }

  void IssueOnStream(size_t channel, size_t op_index, int64_t intended_ns,
                     absl::AnyInvocable<void(bool ok)> next) {
    StreamChannel& stream = *streams_[channel];
    const PreparedOp& op = ops_[op_index];
    uint64_t id;
    {
      absl::MutexLock lock(&stream.mu);
      id = stream.next_id++;
      stream.pending.emplace(id, StreamChannel::Pending{intended_ns, op_index, std::move(next)});
    }
    // A StreamRequest owns its op, so the shared prebuilt request is copied
    // into each message (the unary path sends the shared one as is).
    v1::StreamRequest request = op.forward ? client::MakeStreamRequest(id, *op.forward)
                                           : client::MakeStreamRequest(id, *op.backward);
    absl::Status sent = stream.session->Send(std::move(request));
    if (!sent.ok()) {
      std::optional<StreamChannel::Pending> pending = TakePending(stream, id);
      if (pending.has_value()) {
        Complete(intended_ns, op_index, sent, 0, std::move(pending->next));
      }
    }
  }

  static std::optional<StreamChannel::Pending> TakePending(StreamChannel& stream, uint64_t id) {
    absl::MutexLock lock(&stream.mu);
    auto it = stream.pending.find(id);
    if (it == stream.pending.end()) return std::nullopt;
    StreamChannel::Pending pending = std::move(it->second);
    stream.pending.erase(it);
    return pending;
  }

  void OpenStreams() {
    client::CallOptions call;
    call.timeout = options_.warmup + options_.duration + options_.call_timeout + absl::Seconds(5);
    for (size_t i = 0; i < clients_.size(); ++i) {
      streams_.push_back(std::make_unique<StreamChannel>());
      StreamChannel* stream = streams_.back().get();
      stream->session = clients_[i]->OpenStream(call, [this, stream](v1::StreamResponse r) {
        std::optional<StreamChannel::Pending> pending = TakePending(*stream, r.id());
        if (!pending.has_value()) return;  // an id we never sent: ignore
        const int64_t bytes = r.has_forward()    ? ResponsePayloadBytes(r.forward())
                              : r.has_backward() ? ResponsePayloadBytes(r.backward())
                                                 : 0;
        Complete(pending->intended_ns, pending->op, client::ResponseStatus(r), bytes,
                 std::move(pending->next));
      });
    }
  }

  // Ends the streams; requests still unanswered when a stream ends count as
  // errors with the stream's final status.
  void CloseStreams() {
    for (auto& stream : streams_) {
      absl::Status final_status = stream->session->Finish();
      absl::flat_hash_map<uint64_t, StreamChannel::Pending> left;
      {
        absl::MutexLock lock(&stream->mu);
        left.swap(stream->pending);
      }
      for (auto& [id, pending] : left) {
        Complete(pending.intended_ns, pending.op,
                 final_status.ok() ? absl::DataLossError("stream ended without an answer")
                                   : final_status,
                 0, [](bool) {});
      }
    }
  }

  void Complete(int64_t intended_ns, size_t op_index, const absl::Status& status,
                int64_t response_bytes, absl::AnyInvocable<void(bool ok)> next) {
    const int64_t latency = NowNs() - intended_ns;
    {
      absl::MutexLock lock(&mu_);
      --outstanding_;
      ++interval_requests_;
      if (status.ok()) {
        interval_latency_.Record(latency);
      } else {
        ++interval_errors_;
      }
      if (intended_ns >= warm_end_ns_ && intended_ns < end_ns_) {
        if (status.ok()) {
          ++result_.ok;
          result_.rows += ops_[op_index].rows;
          result_.payload_bytes += ops_[op_index].request_payload_bytes + response_bytes;
          result_.latency_ns.Record(latency);
        } else {
          ++result_.errors;
          ++result_.errors_by_code[absl::StatusCodeToString(status.code())];
        }
      }
    }
    next(status.ok());
  }

  // Waits for every request to finish: closed-loop chains to stop, open-loop
  // calls to complete. Bounded by the call deadline plus a margin.
  void WaitDrained() {
    absl::MutexLock lock(&mu_);
    auto drained = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return active_slots_ == 0 && outstanding_ == 0;
    };
    const absl::Duration left =
        absl::Nanoseconds(end_ns_ - NowNs()) + options_.call_timeout + absl::Seconds(5);
    if (options_.streaming) {
      // Stream answers are collected by CloseStreams; only wait for the senders.
      auto senders_done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return active_slots_ == 0; };
      mu_.AwaitWithTimeout(absl::Condition(&senders_done), left);
      return;
    }
    mu_.AwaitWithTimeout(absl::Condition(&drained), left);
  }

  void ProgressLoop() {
    int64_t last_ns = NowNs();
    while (!progress_stop_.WaitForNotificationWithTimeout(absl::Seconds(1))) {
      const int64_t now = NowNs();
      int64_t requests, errors, outstanding;
      LatencyHistogram latency;
      {
        absl::MutexLock lock(&mu_);
        requests = interval_requests_;
        errors = interval_errors_;
        outstanding = outstanding_;
        latency = interval_latency_;
        interval_requests_ = interval_errors_ = 0;
        interval_latency_.Reset();
      }
      const double seconds = static_cast<double>(now - last_ns) / 1e9;
      last_ns = now;
      std::fprintf(stderr,
                   "[%6.1fs %-7s] %9.0f req/s  p50 %8.3f ms  p99 %8.3f ms  errors %lld  "
                   "in flight %lld\n",
                   static_cast<double>(now - start_ns_) / 1e9,
                   now < warm_end_ns_ ? "warmup" : (now < end_ns_ ? "measure" : "drain"),
                   static_cast<double>(requests) / seconds,
                   static_cast<double>(latency.Percentile(50)) / 1e6,
                   static_cast<double>(latency.Percentile(99)) / 1e6,
                   static_cast<long long>(errors), static_cast<long long>(outstanding));
    }
  }

  const LoadOptions options_;
  const std::vector<client::Client*> clients_;
  const std::vector<PreparedOp> ops_;                    // one per entry of options_.mix
  std::vector<std::unique_ptr<StreamChannel>> streams_;  // streaming mode: one per client
  std::unique_ptr<Worker> worker_ = std::make_unique<Worker>();
  absl::Notification progress_stop_;
  int64_t start_ns_ = 0;     // steady clock, set once before any request
  int64_t warm_end_ns_ = 0;  // measurement window [warm_end_ns_, end_ns_)
  int64_t end_ns_ = 0;

  absl::Mutex mu_;
  int64_t outstanding_ ABSL_GUARDED_BY(mu_) = 0;   // requests sent, not completed
  int64_t active_slots_ ABSL_GUARDED_BY(mu_) = 0;  // closed-loop chains still sending
  RunResult result_ ABSL_GUARDED_BY(mu_);
  int64_t interval_requests_ ABSL_GUARDED_BY(mu_) = 0;  // since the last progress line
  int64_t interval_errors_ ABSL_GUARDED_BY(mu_) = 0;
  LatencyHistogram interval_latency_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<RunResult> RunLoad(const LoadOptions& options,
                                  const std::vector<client::Client*>& clients) {
  if (clients.empty()) return absl::InvalidArgumentError("RunLoad needs at least one client");
  if (options.mix.empty()) return absl::InvalidArgumentError("the op mix is empty");
  if (options.loop == Loop::kClosed && options.concurrency < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("concurrency ", options.concurrency, " is not >= 1"));
  }
  if (options.loop == Loop::kOpen && !(options.rate > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("rate ", options.rate, " is not > 0"));
  }
  if (options.duration <= absl::ZeroDuration() || options.warmup < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("duration must be > 0 and warmup >= 0");
  }
  std::vector<PreparedOp> ops;
  for (size_t i = 0; i < options.mix.size(); ++i) {
    if (options.streaming && options.mix[i].op == OpKind::kEcho) {
      return absl::InvalidArgumentError("echo has no streaming form; drop --streaming");
    }
    absl::StatusOr<PreparedOp> op = PrepareOp(options.mix[i].op, options.shape, options.dtype,
                                              static_cast<uint32_t>(options.seed + i));
    if (!op.ok()) return op.status();
    ops.push_back(*std::move(op));
  }
  LoadRun run(options, clients, std::move(ops));
  return run.Run();
}

}  // namespace normserve::loadgen
