// The gRPC frontend of normserve.v1.Normalizer, on the callback API.
//
// Handlers never block a gRPC thread: Forward / Backward validate the request,
// hand a WorkItem to the batcher and return; the batch's completion finishes
// the RPC. Stream does the same per message, answering in completion order.
#ifndef NORMSERVE_SERVER_SERVICE_NORMALIZER_SERVICE_H_
#define NORMSERVE_SERVER_SERVICE_NORMALIZER_SERVICE_H_

#include "metrics.h"
#include "normserve/v1/normserve.grpc.pb.h"
#include "param_registry.h"
#include "server/batching/batcher.h"

namespace normserve::server {

struct ServiceOptions {
  // Most stream requests in compute at once per stream; further reads wait.
  int max_stream_in_flight = 256;
};

class NormalizerService final : public v1::Normalizer::CallbackService {
 public:
  // All three must outlive the service.
  NormalizerService(const ServiceOptions& options, Batcher* batcher, ParamRegistry* registry,
                    Metrics* metrics);

  grpc::ServerUnaryReactor* Forward(grpc::CallbackServerContext* context,
                                    const v1::ForwardRequest* request,
                                    v1::ForwardResponse* response) override;
  grpc::ServerUnaryReactor* Backward(grpc::CallbackServerContext* context,
                                     const v1::BackwardRequest* request,
                                     v1::BackwardResponse* response) override;
  grpc::ServerBidiReactor<v1::StreamRequest, v1::StreamResponse>* Stream(
      grpc::CallbackServerContext* context) override;

  grpc::ServerUnaryReactor* RegisterParams(grpc::CallbackServerContext* context,
                                           const v1::RegisterParamsRequest* request,
                                           v1::RegisterParamsResponse* response) override;
  grpc::ServerUnaryReactor* ListParams(grpc::CallbackServerContext* context,
                                       const v1::ListParamsRequest* request,
                                       v1::ListParamsResponse* response) override;
  grpc::ServerUnaryReactor* DeleteParams(grpc::CallbackServerContext* context,
                                         const v1::DeleteParamsRequest* request,
                                         v1::DeleteParamsResponse* response) override;
  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const v1::EchoRequest* request,
                                 v1::EchoResponse* response) override;

 private:
  const ServiceOptions options_;
  Batcher* const batcher_;
  ParamRegistry* const registry_;
  Metrics* const metrics_;
};

}  // namespace normserve::server

#endif  // NORMSERVE_SERVER_SERVICE_NORMALIZER_SERVICE_H_
