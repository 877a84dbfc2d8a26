#include "stream_reactor.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "call_context.h"
#include "request_builder.h"

namespace normserve::server {

StreamReactor::StreamReactor(grpc::CallbackServerContext* context, int max_in_flight,
                             Batcher* batcher, const ParamRegistry* registry, Metrics* metrics)
    : context_(context),
      max_in_flight_(max_in_flight),
      batcher_(batcher),
      registry_(registry),
      metrics_(metrics) {
  absl::MutexLock lock(&mu_);
  Advance();
}

void StreamReactor::OnReadDone(bool ok) {
  std::unique_ptr<Call> call = std::move(reading_);
  {
    absl::MutexLock lock(&mu_);
    read_pending_ = false;
    if (!ok) {
      reads_done_ = true;
      Advance();
      return;
    }
    ++in_flight_;
  }
  call->arrived = absl::Now();
  Submit(std::move(call));
  absl::MutexLock lock(&mu_);
  Advance();
}

void StreamReactor::Submit(std::unique_ptr<Call> call) {
  call->response.set_id(call->request.id());
  absl::StatusOr<std::unique_ptr<WorkItem>> item;
  switch (call->request.op_case()) {
    case v1::StreamRequest::kForward:
      item =
          BuildForwardItem(call->request.forward(), call->response.mutable_forward(), *registry_);
      break;
    case v1::StreamRequest::kBackward:
      item = BuildBackwardItem(call->request.backward(), call->response.mutable_backward(),
                               *registry_);
      break;
    default:
      item = absl::InvalidArgumentError(
          absl::StrCat("stream request ", call->request.id(), ": op must be forward or backward"));
  }
  if (!item.ok()) {
    Answer(std::move(call), item.status());
    return;
  }
  BindToContext(context_, **item);
  // The item's done hands the call back; the raw pointer is owned by the
  // lambda until then (AnyInvocable is move-only, so unique_ptr fits).
  (*item)->done = [this, owned = std::move(call)](absl::Status status) mutable {
    Answer(std::move(owned), status);
  };
  // A refusal has already run done, which answered the caller.
  batcher_->Enqueue(std::move(*item)).IgnoreError();
}

void StreamReactor::Answer(std::unique_ptr<Call> call, const absl::Status& status) {
  const absl::string_view op = call->request.op_case() == v1::StreamRequest::kBackward
                                   ? "stream_backward"
                                   : "stream_forward";
  metrics_->OnAnswered(op, absl::StatusCodeToString(status.code()), absl::Now() - call->arrived);
  if (!status.ok()) {
    // An error answer carries no tensors: drop any outputs allocated for it.
    const uint64_t id = call->response.id();
    call->response.Clear();
    call->response.set_id(id);
    call->response.set_code(static_cast<int32_t>(status.code()));
    call->response.set_message(std::string(status.message()));
  }
  absl::MutexLock lock(&mu_);
  --in_flight_;
  to_write_.push_back(std::move(call));
  Advance();
}

void StreamReactor::OnWriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  to_write_.pop_front();
  if (!ok) {
    // The client is gone: nothing more can be written; answers still in
    // compute are dropped as they arrive.
    to_write_.clear();
  }
  Advance();
}

void StreamReactor::Advance() {
  if (finished_) {
    to_write_.clear();
    return;
  }
  if (!writing_ && !to_write_.empty() && !context_->IsCancelled()) {
    writing_ = true;
    StartWrite(&to_write_.front()->response);
  } else if (context_->IsCancelled() && !writing_) {
    to_write_.clear();
  }
  if (!reads_done_ && !read_pending_ && in_flight_ < max_in_flight_) {
    read_pending_ = true;
    reading_ = std::make_unique<Call>();
    StartRead(&reading_->request);
  }
  if (reads_done_ && in_flight_ == 0 && !writing_ && to_write_.empty()) {
    finished_ = true;
    Finish(grpc::Status::OK);
  }
}

void StreamReactor::OnDone() { delete this; }

}  // namespace normserve::server
