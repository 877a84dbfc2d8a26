#include "normserve/client/stream_session.h"

#include <grpcpp/client_context.h>
#include <grpcpp/support/client_callback.h>

#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "normserve/client/status.h"

namespace normserve::client {

v1::StreamRequest MakeStreamRequest(uint64_t id, v1::ForwardRequest forward) {
  v1::StreamRequest request;
  request.set_id(id);
  *request.mutable_forward() = std::move(forward);
  return request;
}

v1::StreamRequest MakeStreamRequest(uint64_t id, v1::BackwardRequest backward) {
  v1::StreamRequest request;
  request.set_id(id);
  *request.mutable_backward() = std::move(backward);
  return request;
}

absl::Status ResponseStatus(const v1::StreamResponse& response) {
  return FromWireCode(response.code(), response.message());
}

// The callback reactor. gRPC starts at most one write and one read at a time;
// writes wait in `pending_`. A hold keeps the RPC open while the session may
// still start writes from outside a reaction; it is released when the writes
// end (WritesDone started, or a write failed).
class StreamSession::Reactor final
    : public grpc::ClientBidiReactor<v1::StreamRequest, v1::StreamResponse> {
 public:
  Reactor(std::unique_ptr<grpc::ClientContext> context, StreamResponseCallback on_response)
      : context_(std::move(context)), on_response_(std::move(on_response)) {}

  void Start(v1::Normalizer::Stub& stub) {
    stub.async()->Stream(context_.get(), this);
    AddHold();
    StartRead(&read_buffer_);
    StartCall();
  }

  absl::Status Send(v1::StreamRequest request) {
    {
      absl::MutexLock lock(&mu_);
      if (writes_ended_ || done_) {
        if (!final_status_.ok()) return final_status_;
        return absl::FailedPreconditionError(close_requested_ ? "stream: Send after CloseSend"
                                                              : "stream: writes failed");
      }
      if (close_requested_) return absl::FailedPreconditionError("stream: Send after CloseSend");
      if (writing_) {
        pending_.push_back(std::move(request));
        return absl::OkStatus();
      }
      writing_ = true;
      current_write_ = std::move(request);
    }
    StartWrite(&current_write_);
    return absl::OkStatus();
  }

  void CloseSend() {
    {
      absl::MutexLock lock(&mu_);
      if (close_requested_) return;
      close_requested_ = true;
      if (writing_ || writes_ended_) return;  // OnWriteDone finishes the job
      writes_ended_ = true;
    }
    StartWritesDone();
    RemoveHold();
  }

  void Cancel() { context_->TryCancel(); }

  absl::StatusOr<v1::StreamResponse> Next(absl::Duration timeout) {
    if (on_response_) {
      return absl::FailedPreconditionError("stream: Next() in callback mode");
    }
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !responses_.empty() || done_; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&ready), timeout)) {
      return absl::DeadlineExceededError("stream: no response within the timeout");
    }
    if (!responses_.empty()) {
      v1::StreamResponse response = std::move(responses_.front());
      responses_.pop_front();
      return response;
    }
    if (!final_status_.ok()) return final_status_;
    return absl::OutOfRangeError("stream: finished, no more responses");
  }

  absl::Status WaitDone() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
    return final_status_;
  }

  void OnWriteDone(bool ok) override {
    bool start_next = false;
    bool end_writes = false;
    {
      absl::MutexLock lock(&mu_);
      if (!ok) {
        // The stream broke; OnDone will carry the status.
        writing_ = false;
        pending_.clear();
        end_writes = !writes_ended_;
        writes_ended_ = true;
      } else if (!pending_.empty()) {
        current_write_ = std::move(pending_.front());
        pending_.pop_front();
        start_next = true;
      } else {
        writing_ = false;
        if (close_requested_ && !writes_ended_) {
          writes_ended_ = true;
          end_writes = true;
        }
      }
    }
    if (start_next) {
      StartWrite(&current_write_);
    } else if (end_writes) {
      if (ok) StartWritesDone();
      RemoveHold();
    }
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // the server ended the stream (or it failed): OnDone follows
    v1::StreamResponse response = std::move(read_buffer_);
    read_buffer_.Clear();
    StartRead(&read_buffer_);
    if (on_response_) {
      on_response_(std::move(response));
    } else {
      absl::MutexLock lock(&mu_);
      responses_.push_back(std::move(response));
    }
  }

  void OnDone(const grpc::Status& status) override {
    {
      absl::MutexLock lock(&mu_);
      final_status_ = FromGrpcStatus(status);
      done_ = true;
    }
    released_.Notify();  // last touch: the reactor may be destroyed after this
  }

  // Blocks until OnDone has run; after it returns the reactor may be deleted.
  void WaitReleased() { released_.WaitForNotification(); }

 private:
  const std::unique_ptr<grpc::ClientContext> context_;
  // Callback mode when set; called only from OnReadDone (one at a time).
  StreamResponseCallback on_response_;
  // Only OnReadDone touches it (gRPC runs one read at a time).
  v1::StreamResponse read_buffer_;
  // The message of the write in flight; owned by whoever set writing_.
  v1::StreamRequest current_write_;

  absl::Mutex mu_;
  std::deque<v1::StreamRequest> pending_ ABSL_GUARDED_BY(mu_);     // waiting writes
  bool writing_ ABSL_GUARDED_BY(mu_) = false;                      // a StartWrite is in flight
  bool close_requested_ ABSL_GUARDED_BY(mu_) = false;              // CloseSend was called
  bool writes_ended_ ABSL_GUARDED_BY(mu_) = false;                 // hold released; no more writes
  std::deque<v1::StreamResponse> responses_ ABSL_GUARDED_BY(mu_);  // queue mode only
  bool done_ ABSL_GUARDED_BY(mu_) = false;                         // OnDone ran
  absl::Status final_status_ ABSL_GUARDED_BY(mu_);
  absl::Notification released_;  // notified at the end of OnDone
};

StreamSession::StreamSession(v1::Normalizer::Stub& stub,
                             std::unique_ptr<grpc::ClientContext> context,
                             StreamResponseCallback on_response)
    : reactor_(std::make_unique<Reactor>(std::move(context), std::move(on_response))) {
  reactor_->Start(stub);
}

StreamSession::~StreamSession() {
  reactor_->CloseSend();
  reactor_->Cancel();
  reactor_->WaitReleased();
}

absl::Status StreamSession::Send(v1::StreamRequest request) {
  return reactor_->Send(std::move(request));
}

void StreamSession::CloseSend() { reactor_->CloseSend(); }

absl::StatusOr<v1::StreamResponse> StreamSession::Next(absl::Duration timeout) {
  return reactor_->Next(timeout);
}

absl::Status StreamSession::Finish() {
  reactor_->CloseSend();
  return reactor_->WaitDone();
}

void StreamSession::Cancel() { reactor_->Cancel(); }

}  // namespace normserve::client
