#include "normalizer_service.h"

#include <string>

#include "absl/time/clock.h"
#include "call_context.h"
#include "grpc_status.h"
#include "request_builder.h"
#include "stream_reactor.h"

namespace normserve::server {
namespace {

std::string CodeName(const absl::Status& status) { return absl::StatusCodeToString(status.code()); }

int64_t TensorBytes(const v1::Tensor& tensor) { return static_cast<int64_t>(tensor.data().size()); }

int64_t PayloadBytes(const v1::ForwardRequest& r) {
  return TensorBytes(r.x()) + TensorBytes(r.residual());
}
int64_t PayloadBytes(const v1::ForwardResponse& r) {
  return TensorBytes(r.output()) + TensorBytes(r.residual_out()) + TensorBytes(r.mean()) +
         TensorBytes(r.rstd());
}
int64_t PayloadBytes(const v1::BackwardRequest& r) {
  return TensorBytes(r.x()) + TensorBytes(r.residual()) + TensorBytes(r.grad_output()) +
         TensorBytes(r.grad_residual_out());
}
int64_t PayloadBytes(const v1::BackwardResponse& r) {
  return TensorBytes(r.grad_input()) + TensorBytes(r.grad_weight()) + TensorBytes(r.grad_bias());
}

// The unary path shared by Forward and Backward: build, submit, finish from
// the batch's completion.
template <typename Request, typename Response, typename Build>
grpc::ServerUnaryReactor* SubmitUnary(grpc::CallbackServerContext* context, const Request* request,
                                      Response* response, absl::string_view op, Batcher* batcher,
                                      const ParamRegistry& registry, Metrics* metrics,
                                      Build build) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const absl::Time arrived = absl::Now();
  auto finish = [reactor, request, response, op, metrics, arrived](absl::Status status) {
    metrics->OnAnswered(op, CodeName(status), absl::Now() - arrived);
    if (status.ok()) metrics->OnPayload(PayloadBytes(*request), PayloadBytes(*response));
    reactor->Finish(ToGrpcStatus(status));
  };
  auto item = build(*request, response, registry);
  if (!item.ok()) {
    finish(item.status());
    return reactor;
  }
  BindToContext(context, **item);
  (*item)->done = std::move(finish);
  // A refusal has already run done, which answered the caller.
  batcher->Enqueue(std::move(*item)).IgnoreError();
  return reactor;
}

}  // namespace

NormalizerService::NormalizerService(const ServiceOptions& options, Batcher* batcher,
                                     ParamRegistry* registry, Metrics* metrics)
    : options_(options), batcher_(batcher), registry_(registry), metrics_(metrics) {}

grpc::ServerUnaryReactor* NormalizerService::Forward(grpc::CallbackServerContext* context,
                                                     const v1::ForwardRequest* request,
                                                     v1::ForwardResponse* response) {
  return SubmitUnary(context, request, response, "forward", batcher_, *registry_, metrics_,
                     BuildForwardItem);
}

grpc::ServerUnaryReactor* NormalizerService::Backward(grpc::CallbackServerContext* context,
                                                      const v1::BackwardRequest* request,
                                                      v1::BackwardResponse* response) {
  return SubmitUnary(context, request, response, "backward", batcher_, *registry_, metrics_,
                     BuildBackwardItem);
}

grpc::ServerBidiReactor<v1::StreamRequest, v1::StreamResponse>* NormalizerService::Stream(
    grpc::CallbackServerContext* context) {
  return new StreamReactor(context, options_.max_stream_in_flight, batcher_, registry_, metrics_);
}

grpc::ServerUnaryReactor* NormalizerService::RegisterParams(
    grpc::CallbackServerContext* context, const v1::RegisterParamsRequest* request,
    v1::RegisterParamsResponse* response) {
  const absl::Time arrived = absl::Now();
  auto info = registry_->Register(*request);
  if (info.ok()) *response->mutable_info() = *std::move(info);
  metrics_->OnAnswered("register_params", CodeName(info.status()), absl::Now() - arrived);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(info.status()));
  return reactor;
}

grpc::ServerUnaryReactor* NormalizerService::ListParams(grpc::CallbackServerContext* context,
                                                        const v1::ListParamsRequest* request,
                                                        v1::ListParamsResponse* response) {
  const absl::Time arrived = absl::Now();
  for (auto& info : registry_->List()) *response->add_params() = std::move(info);
  metrics_->OnAnswered("list_params", "OK", absl::Now() - arrived);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* NormalizerService::DeleteParams(grpc::CallbackServerContext* context,
                                                          const v1::DeleteParamsRequest* request,
                                                          v1::DeleteParamsResponse* response) {
  const absl::Time arrived = absl::Now();
  absl::Status status = registry_->Delete(request->handle());
  metrics_->OnAnswered("delete_params", CodeName(status), absl::Now() - arrived);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerUnaryReactor* NormalizerService::Echo(grpc::CallbackServerContext* context,
                                                  const v1::EchoRequest* request,
                                                  v1::EchoResponse* response) {
  // One copy of the payload, as any echo server built on generated messages
  // makes: the floor that Forward is compared against.
  response->set_payload(request->payload());
  metrics_->OnAnswered("echo", "OK", absl::ZeroDuration());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace normserve::server
