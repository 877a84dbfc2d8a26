// normserve::client::Client — the C++ client of the normserve service.
//
// One Client owns one channel (its own TCP connections) to a target and offers
// every RPC three ways:
//   - synchronous:  Forward(request)            -> absl::StatusOr<ForwardResponse>
//   - asynchronous: ForwardAsync(request, done) -> done(StatusOr) on a gRPC
//                   thread (gRPC's callback API: no thread per call), or
//                   ForwardFuture(request)      -> std::future<StatusOr<...>>
//   - pipelined:    OpenStream()                -> StreamSession (ids, answers
//                   in completion order)
// Every call has a deadline (CallOptions::timeout, else the client default).
// UNAVAILABLE is retried with backoff by gRPC itself (see ClientOptions), and
// calls are spread round_robin over all addresses of the target.
//
//   ClientOptions options;
//   options.target = "127.0.0.1:50051";
//   absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
//   v1::ForwardRequest request;
//   request.mutable_config()->set_kind(v1::RMS_NORM);
//   *request.mutable_x() = *MakeTensor(values, {rows, hidden}, v1::DTYPE_BF16);
//   absl::StatusOr<v1::ForwardResponse> out = (*client)->Forward(request);
//
// Errors are the server's gRPC status as absl::Status (same code and message):
// INVALID_ARGUMENT, NOT_FOUND, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED,
// UNAVAILABLE (no server reachable after the retries), ...
//
// Thread-safety: all methods may be called concurrently. Async callbacks run
// on gRPC threads and must not block. The destructor waits for outstanding
// async calls to complete; never destroy a Client from inside its callback.
#ifndef NORMSERVE_CLIENT_CLIENT_H_
#define NORMSERVE_CLIENT_CLIENT_H_

#include <grpcpp/channel.h>

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "normserve/client/client_options.h"
#include "normserve/client/health.h"
#include "normserve/client/stream_session.h"
#include "normserve/v1/normserve.grpc.pb.h"

namespace normserve::client {

template <typename T>
using Callback = absl::AnyInvocable<void(absl::StatusOr<T>)>;

class Client {
 public:
  // A client of options.target. Does not dial yet (see WaitForConnected).
  // INVALID_ARGUMENT / NOT_FOUND from MakeChannel for a bad target or CA file.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  // A client over an existing channel (options supplies the default timeout).
  Client(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Dials and waits until the channel is READY or `timeout` passes
  // (DEADLINE_EXCEEDED then).
  absl::Status WaitForConnected(absl::Duration timeout);

  // --- synchronous ---
  absl::StatusOr<v1::ForwardResponse> Forward(const v1::ForwardRequest& request,
                                              const CallOptions& call = {});
  absl::StatusOr<v1::BackwardResponse> Backward(const v1::BackwardRequest& request,
                                                const CallOptions& call = {});
  // Returns the new handle's info (info.handle() goes into Params.handle).
  absl::StatusOr<v1::ParamsInfo> RegisterParams(const v1::RegisterParamsRequest& request,
                                                const CallOptions& call = {});
  absl::StatusOr<std::vector<v1::ParamsInfo>> ListParams(const CallOptions& call = {});
  // NOT_FOUND for an unknown handle.
  absl::Status DeleteParams(const std::string& handle, const CallOptions& call = {});
  // Returns the payload the server echoed back.
  absl::StatusOr<std::string> Echo(std::string payload, const CallOptions& call = {});
  // grpc.health.v1 Check of `service` ("" = the server as a whole).
  absl::StatusOr<ServingStatus> CheckHealth(const std::string& service = "",
                                            const CallOptions& call = {});

  // --- asynchronous (callback) ---
  // The request is shared, not copied: many concurrent calls may send the same
  // message. `done` runs exactly once, on a gRPC thread.
  void ForwardAsync(std::shared_ptr<const v1::ForwardRequest> request, const CallOptions& call,
                    Callback<v1::ForwardResponse> done);
  void BackwardAsync(std::shared_ptr<const v1::BackwardRequest> request, const CallOptions& call,
                     Callback<v1::BackwardResponse> done);
  void EchoAsync(std::shared_ptr<const v1::EchoRequest> request, const CallOptions& call,
                 Callback<v1::EchoResponse> done);

  // --- asynchronous (future) ---
  std::future<absl::StatusOr<v1::ForwardResponse>> ForwardFuture(v1::ForwardRequest request,
                                                                 const CallOptions& call = {});
  std::future<absl::StatusOr<v1::BackwardResponse>> BackwardFuture(v1::BackwardRequest request,
                                                                   const CallOptions& call = {});

  // --- pipelined ---
  // Opens a Stream RPC. The call's deadline covers the whole stream. With
  // on_response the session is in callback mode (see StreamSession).
  std::unique_ptr<StreamSession> OpenStream(const CallOptions& call = {},
                                            StreamResponseCallback on_response = nullptr);

  // The underlying channel and generated stub, for anything not wrapped here.
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  v1::Normalizer::Stub& stub() { return *stub_; }

  // A context with the deadline and wait_for_ready of `call`.
  std::unique_ptr<grpc::ClientContext> MakeContext(const CallOptions& call) const;

 private:
  template <typename Request, typename Response, typename StartFn>
  void StartAsync(std::shared_ptr<const Request> request, const CallOptions& call,
                  Callback<Response> done, StartFn start);
  void CallStarted();
  void CallFinished();

  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::Normalizer::Stub> stub_;
  const absl::Duration default_timeout_;

  absl::Mutex mu_;
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;  // async calls not yet completed
};

}  // namespace normserve::client

#endif  // NORMSERVE_CLIENT_CLIENT_H_
