// One Stream RPC: reads requests with client-chosen ids, submits each to the
// batcher, and writes each answer as its batch completes (completion order).
//
// Lifetime: gRPC owns the reactor until OnDone, where it deletes itself. It
// finishes only once reads are over and every submitted request has been
// answered, so no batch completion can reach a deleted reactor.
// Flow control: at most max_in_flight requests are in compute at once; the
// next read starts when one completes.
#ifndef NORMSERVE_SERVER_SERVICE_STREAM_REACTOR_H_
#define NORMSERVE_SERVER_SERVICE_STREAM_REACTOR_H_

#include <deque>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "metrics.h"
#include "normserve/v1/normserve.grpc.pb.h"
#include "param_registry.h"
#include "server/batching/batcher.h"

namespace normserve::server {

class StreamReactor final : public grpc::ServerBidiReactor<v1::StreamRequest, v1::StreamResponse> {
 public:
  StreamReactor(grpc::CallbackServerContext* context, int max_in_flight, Batcher* batcher,
                const ParamRegistry* registry, Metrics* metrics);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override;

 private:
  // One request and its answer; the answer's tensors are the kernel's output
  // buffers, so both live here until the answer is written.
  struct Call {
    v1::StreamRequest request;
    v1::StreamResponse response;
    absl::Time arrived;
  };

  void Submit(std::unique_ptr<Call> call);
  // A request's computation ended (or was refused): queue its answer.
  void Answer(std::unique_ptr<Call> call, const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);
  // Starts the next write or read, or finishes, as the state allows.
  void Advance() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  grpc::CallbackServerContext* const context_;
  const int max_in_flight_;
  Batcher* const batcher_;
  const ParamRegistry* const registry_;
  Metrics* const metrics_;

  // The message being read; only touched between StartRead and OnReadDone.
  std::unique_ptr<Call> reading_;

  absl::Mutex mu_;
  // Answers waiting to be written; the front one is being written when writing_.
  std::deque<std::unique_ptr<Call>> to_write_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool read_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  // Requests submitted and not yet answered.
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace normserve::server

#endif  // NORMSERVE_SERVER_SERVICE_STREAM_REACTOR_H_
