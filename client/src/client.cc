#include "normserve/client/client.h"

#include <grpcpp/client_context.h>

#include "absl/strings/str_cat.h"
#include "normserve/client/channel.h"
#include "normserve/client/status.h"

namespace normserve::client {

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = MakeChannel(options);
  if (!channel.ok()) return channel.status();
  return std::make_unique<Client>(*std::move(channel), options);
}

Client::Client(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options)
    : channel_(std::move(channel)),
      stub_(v1::Normalizer::NewStub(channel_)),
      default_timeout_(options.default_timeout) {}

Client::~Client() {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; };
  mu_.Await(absl::Condition(&idle));
}

absl::Status Client::WaitForConnected(absl::Duration timeout) {
  if (channel_->WaitForConnected(absl::ToChronoTime(absl::Now() + timeout))) {
    return absl::OkStatus();
  }
  return absl::DeadlineExceededError(
      absl::StrCat("channel not READY within ", absl::FormatDuration(timeout)));
}

std::unique_ptr<grpc::ClientContext> Client::MakeContext(const CallOptions& call) const {
  auto context = std::make_unique<grpc::ClientContext>();
  const absl::Duration timeout = call.timeout.value_or(default_timeout_);
  if (timeout != absl::InfiniteDuration()) {
    context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  }
  context->set_wait_for_ready(call.wait_for_ready);
  return context;
}

absl::StatusOr<v1::ForwardResponse> Client::Forward(const v1::ForwardRequest& request,
                                                    const CallOptions& call) {
  v1::ForwardResponse response;
  grpc::Status status = stub_->Forward(MakeContext(call).get(), request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::StatusOr<v1::BackwardResponse> Client::Backward(const v1::BackwardRequest& request,
                                                      const CallOptions& call) {
  v1::BackwardResponse response;
  grpc::Status status = stub_->Backward(MakeContext(call).get(), request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::StatusOr<v1::ParamsInfo> Client::RegisterParams(const v1::RegisterParamsRequest& request,
                                                      const CallOptions& call) {
  v1::RegisterParamsResponse response;
  grpc::Status status = stub_->RegisterParams(MakeContext(call).get(), request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.info();
}

absl::StatusOr<std::vector<v1::ParamsInfo>> Client::ListParams(const CallOptions& call) {
  v1::ListParamsResponse response;
  grpc::Status status =
      stub_->ListParams(MakeContext(call).get(), v1::ListParamsRequest(), &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return std::vector<v1::ParamsInfo>(response.params().begin(), response.params().end());
}

absl::Status Client::DeleteParams(const std::string& handle, const CallOptions& call) {
  v1::DeleteParamsRequest request;
  request.set_handle(handle);
  v1::DeleteParamsResponse response;
  return FromGrpcStatus(stub_->DeleteParams(MakeContext(call).get(), request, &response));
}

absl::StatusOr<std::string> Client::Echo(std::string payload, const CallOptions& call) {
  v1::EchoRequest request;
  request.set_payload(std::move(payload));
  v1::EchoResponse response;
  grpc::Status status = stub_->Echo(MakeContext(call).get(), request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return std::move(*response.mutable_payload());
}

absl::StatusOr<ServingStatus> Client::CheckHealth(const std::string& service,
                                                  const CallOptions& call) {
  return client::CheckHealth(channel_, service, call.timeout.value_or(default_timeout_),
                             call.wait_for_ready);
}

void Client::CallStarted() {
  absl::MutexLock lock(&mu_);
  ++in_flight_;
}

void Client::CallFinished() {
  absl::MutexLock lock(&mu_);
  --in_flight_;
}

// One async unary call: its context, shared request and response live here
// until gRPC reports completion; then the user's callback runs and the state
// is freed.
template <typename Request, typename Response>
struct AsyncCall {
  std::unique_ptr<grpc::ClientContext> context;
  std::shared_ptr<const Request> request;
  Response response;
  Callback<Response> done;
};

template <typename Request, typename Response, typename StartFn>
void Client::StartAsync(std::shared_ptr<const Request> request, const CallOptions& call,
                        Callback<Response> done, StartFn start) {
  auto* state = new AsyncCall<Request, Response>{MakeContext(call), std::move(request), Response(),
                                                 std::move(done)};
  CallStarted();
  start(state->context.get(), state->request.get(), &state->response,
        [this, state](grpc::Status status) {
          std::unique_ptr<AsyncCall<Request, Response>> owned(state);
          if (status.ok()) {
            owned->done(std::move(owned->response));
          } else {
            owned->done(FromGrpcStatus(status));
          }
          owned.reset();
          CallFinished();
        });
}

void Client::ForwardAsync(std::shared_ptr<const v1::ForwardRequest> request,
                          const CallOptions& call, Callback<v1::ForwardResponse> done) {
  StartAsync<v1::ForwardRequest, v1::ForwardResponse>(
      std::move(request), call, std::move(done),
      [this](grpc::ClientContext* context, const v1::ForwardRequest* req, v1::ForwardResponse* resp,
             std::function<void(grpc::Status)> on_done) {
        stub_->async()->Forward(context, req, resp, std::move(on_done));
      });
}

void Client::BackwardAsync(std::shared_ptr<const v1::BackwardRequest> request,
                           const CallOptions& call, Callback<v1::BackwardResponse> done) {
  StartAsync<v1::BackwardRequest, v1::BackwardResponse>(
      std::move(request), call, std::move(done),
      [this](grpc::ClientContext* context, const v1::BackwardRequest* req,
             v1::BackwardResponse* resp, std::function<void(grpc::Status)> on_done) {
        stub_->async()->Backward(context, req, resp, std::move(on_done));
      });
}

void Client::EchoAsync(std::shared_ptr<const v1::EchoRequest> request, const CallOptions& call,
                       Callback<v1::EchoResponse> done) {
  StartAsync<v1::EchoRequest, v1::EchoResponse>(
      std::move(request), call, std::move(done),
      [this](grpc::ClientContext* context, const v1::EchoRequest* req, v1::EchoResponse* resp,
             std::function<void(grpc::Status)> on_done) {
        stub_->async()->Echo(context, req, resp, std::move(on_done));
      });
}

std::future<absl::StatusOr<v1::ForwardResponse>> Client::ForwardFuture(v1::ForwardRequest request,
                                                                       const CallOptions& call) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<v1::ForwardResponse>>>();
  auto future = promise->get_future();
  ForwardAsync(std::make_shared<const v1::ForwardRequest>(std::move(request)), call,
               [promise](absl::StatusOr<v1::ForwardResponse> result) {
                 promise->set_value(std::move(result));
               });
  return future;
}

std::future<absl::StatusOr<v1::BackwardResponse>> Client::BackwardFuture(
    v1::BackwardRequest request, const CallOptions& call) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<v1::BackwardResponse>>>();
  auto future = promise->get_future();
  BackwardAsync(std::make_shared<const v1::BackwardRequest>(std::move(request)), call,
                [promise](absl::StatusOr<v1::BackwardResponse> result) {
                  promise->set_value(std::move(result));
                });
  return future;
}

std::unique_ptr<StreamSession> Client::OpenStream(const CallOptions& call,
                                                  StreamResponseCallback on_response) {
  return std::make_unique<StreamSession>(*stub_, MakeContext(call), std::move(on_response));
}

}  // namespace normserve::client
