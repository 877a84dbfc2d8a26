// A pipelined session over the Stream RPC: send many requests with ids of your
// choosing without waiting, and receive the answers in completion order.
//
//   auto session = client.OpenStream();
//   session->Send(MakeStreamRequest(1, forward_a));
//   session->Send(MakeStreamRequest(2, forward_b));
//   session->CloseSend();
//   while (auto r = session->Next()) { ... r->id() ... }   // ends with OUT_OF_RANGE
//   absl::Status final = session->Finish();
//
// Built on gRPC's callback API (one reactor, no thread of its own). Writes are
// queued inside the session, since gRPC allows one outstanding write at a
// time. Responses go to the on_response callback when one is given (called on
// a gRPC thread, one at a time; it must not block and may call Send), else
// into a queue that Next() drains.
//
// Thread-safety: Send, CloseSend, Next, Finish and Cancel may be called from
// any thread. The destructor cancels a session that was not finished and
// waits until gRPC has released it.
#ifndef NORMSERVE_CLIENT_STREAM_SESSION_H_
#define NORMSERVE_CLIENT_STREAM_SESSION_H_

#include <cstdint>
#include <deque>
#include <memory>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "normserve/v1/normserve.grpc.pb.h"

namespace normserve::client {

// Called for each StreamResponse in callback mode.
using StreamResponseCallback = absl::AnyInvocable<void(v1::StreamResponse)>;

// A StreamRequest carrying `id` and one op. The request is moved in.
v1::StreamRequest MakeStreamRequest(uint64_t id, v1::ForwardRequest forward);
v1::StreamRequest MakeStreamRequest(uint64_t id, v1::BackwardRequest backward);

// A StreamResponse's own (code, message) as an absl::Status.
absl::Status ResponseStatus(const v1::StreamResponse& response);

class StreamSession {
 public:
  // Starts the call. Use Client::OpenStream rather than this constructor.
  // `context` must be configured (deadline, wait_for_ready) and is owned here.
  StreamSession(v1::Normalizer::Stub& stub, std::unique_ptr<grpc::ClientContext> context,
                StreamResponseCallback on_response);
  ~StreamSession();
  StreamSession(const StreamSession&) = delete;
  StreamSession& operator=(const StreamSession&) = delete;

  // Queues one request. FAILED_PRECONDITION after CloseSend; the stream's
  // error (e.g. UNAVAILABLE, CANCELLED) once the stream has failed.
  absl::Status Send(v1::StreamRequest request);

  // Half-closes: no more requests; the server ends the stream after answering
  // everything already sent. Idempotent.
  void CloseSend();

  // The next response in arrival order, waiting up to `timeout`. OUT_OF_RANGE
  // when the stream ended cleanly and every response was taken, the stream's
  // error when it failed, DEADLINE_EXCEEDED when `timeout` passed first.
  // FAILED_PRECONDITION in callback mode.
  absl::StatusOr<v1::StreamResponse> Next(absl::Duration timeout = absl::InfiniteDuration());

  // CloseSend, then waits for the server to end the stream; returns the final
  // status of the RPC. Responses not yet taken stay available to Next().
  absl::Status Finish();

  // Aborts the stream (the final status becomes CANCELLED).
  void Cancel();

 private:
  class Reactor;
  std::unique_ptr<Reactor> reactor_;
};

}  // namespace normserve::client

#endif  // NORMSERVE_CLIENT_STREAM_SESSION_H_
