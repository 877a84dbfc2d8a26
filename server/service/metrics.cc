#include "metrics.h"

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <exception>

#include "absl/strings/str_cat.h"

namespace normserve::server {
namespace {

// 10 us .. ~10 s, a factor of 2 apart.
const prometheus::Histogram::BucketBoundaries& SecondsBuckets() {
  static const auto* const buckets = [] {
    auto* bounds = new prometheus::Histogram::BucketBoundaries;
    for (double bound = 10e-6; bound < 20.0; bound *= 2) bounds->push_back(bound);
    return bounds;
  }();
  return *buckets;
}

// 1 .. 65536, powers of 2.
prometheus::Histogram::BucketBoundaries CountBuckets() {
  prometheus::Histogram::BucketBoundaries buckets;
  for (double bound = 1; bound <= 65536; bound *= 2) buckets.push_back(bound);
  return buckets;
}

}  // namespace

// The metric families, and the per-op series the hot path uses (looked up
// once here rather than by label on every call).
struct Metrics::Families {
  explicit Families(prometheus::Registry& registry)
      : requests(prometheus::BuildCounter()
                     .Name("normserve_requests_total")
                     .Help("Requests answered, by op and gRPC status code")
                     .Register(registry)),
        request_seconds(prometheus::BuildHistogram()
                            .Name("normserve_request_seconds")
                            .Help("Time from a request's arrival to its answer")
                            .Register(registry)),
        queue_seconds(prometheus::BuildHistogram()
                          .Name("normserve_queue_seconds")
                          .Help("Time a request waited in the batcher's queue")
                          .Register(registry)),
        compute_seconds(prometheus::BuildHistogram()
                            .Name("normserve_compute_seconds")
                            .Help("Time one batch spent in the backend (copies and kernel)")
                            .Register(registry)),
        batch_rows(prometheus::BuildHistogram()
                       .Name("normserve_batch_rows")
                       .Help("Rows per kernel launch")
                       .Register(registry)),
        batch_requests(prometheus::BuildHistogram()
                           .Name("normserve_batch_requests")
                           .Help("Requests per kernel launch")
                           .Register(registry)),
        bytes(prometheus::BuildCounter()
                  .Name("normserve_payload_bytes_total")
                  .Help("Tensor payload bytes, by direction")
                  .Register(registry)),
        queue_depth(prometheus::BuildGauge()
                        .Name("normserve_queue_depth")
                        .Help("Work waiting in the batcher's queue now, by unit")
                        .Register(registry)),
        received(bytes.Add({{"direction", "received"}})),
        sent(bytes.Add({{"direction", "sent"}})),
        queued_requests(queue_depth.Add({{"unit", "requests"}})),
        queued_rows(queue_depth.Add({{"unit", "rows"}})) {
    for (Op op : {Op::kForward, Op::kBackward}) {
      const prometheus::Labels labels = {{"op", std::string(OpName(op))}};
      per_op[static_cast<int>(op)] = PerOp{
          &queue_seconds.Add(labels, SecondsBuckets()),
          &compute_seconds.Add(labels, SecondsBuckets()),
          &batch_rows.Add(labels, CountBuckets()),
          &batch_requests.Add(labels, CountBuckets()),
      };
    }
  }

  struct PerOp {
    prometheus::Histogram* queue_seconds;
    prometheus::Histogram* compute_seconds;
    prometheus::Histogram* batch_rows;
    prometheus::Histogram* batch_requests;
  };

  prometheus::Family<prometheus::Counter>& requests;
  prometheus::Family<prometheus::Histogram>& request_seconds;
  prometheus::Family<prometheus::Histogram>& queue_seconds;
  prometheus::Family<prometheus::Histogram>& compute_seconds;
  prometheus::Family<prometheus::Histogram>& batch_rows;
  prometheus::Family<prometheus::Histogram>& batch_requests;
  prometheus::Family<prometheus::Counter>& bytes;
  prometheus::Family<prometheus::Gauge>& queue_depth;
  prometheus::Counter& received;
  prometheus::Counter& sent;
  prometheus::Gauge& queued_requests;
  prometheus::Gauge& queued_rows;
  PerOp per_op[2];
};

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      families_(std::make_unique<Families>(*registry_)) {}

Metrics::~Metrics() = default;

absl::Status Metrics::Serve(const std::string& address) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address);
  } catch (const std::exception& error) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", address, ": ", error.what()));
  }
  exposer_->RegisterCollectable(registry_);
  return absl::OkStatus();
}

void Metrics::OnAnswered(absl::string_view op, absl::string_view code, absl::Duration latency) {
  families_->requests.Add({{"op", std::string(op)}, {"code", std::string(code)}}).Increment();
  families_->request_seconds.Add({{"op", std::string(op)}}, SecondsBuckets())
      .Observe(absl::ToDoubleSeconds(latency));
}

void Metrics::OnPayload(int64_t received_bytes, int64_t sent_bytes) {
  families_->received.Increment(static_cast<double>(received_bytes));
  families_->sent.Increment(static_cast<double>(sent_bytes));
}

void Metrics::OnDequeued(Op op, absl::Duration queued) {
  families_->per_op[static_cast<int>(op)].queue_seconds->Observe(absl::ToDoubleSeconds(queued));
}

void Metrics::OnBatch(Op op, int requests, int64_t rows, absl::Duration compute) {
  const Families::PerOp& series = families_->per_op[static_cast<int>(op)];
  series.compute_seconds->Observe(absl::ToDoubleSeconds(compute));
  series.batch_rows->Observe(static_cast<double>(rows));
  series.batch_requests->Observe(requests);
}

void Metrics::OnQueueDepth(int requests, int64_t rows) {
  families_->queued_requests.Set(requests);
  families_->queued_rows.Set(static_cast<double>(rows));
}

}  // namespace normserve::server
