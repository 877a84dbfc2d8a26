// Turns a validated wire request into a WorkItem for the batcher.
//
// Everything the request says is checked first (config, shapes, dtypes,
// lengths, params); only then are the response's output tensors allocated and
// the item's segment pointed at the request's input bytes and the response's
// output bytes. Both messages must therefore outlive the item's done callback.
// The item's deadline, cancellation and done callback are left to the caller.
#ifndef NORMSERVE_SERVER_SERVICE_REQUEST_BUILDER_H_
#define NORMSERVE_SERVER_SERVICE_REQUEST_BUILDER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "normserve/kernels/norm_config.h"
#include "normserve/v1/normserve.pb.h"
#include "param_registry.h"
#include "server/batching/work_item.h"

namespace normserve::server {

// INVALID_ARGUMENT naming the field for a missing kind, bad eps, c or partial.
absl::StatusOr<kernels::NormConfig> ConfigFromProto(const v1::NormConfig& config);

absl::StatusOr<std::unique_ptr<WorkItem>> BuildForwardItem(const v1::ForwardRequest& request,
                                                           v1::ForwardResponse* response,
                                                           const ParamRegistry& registry);

absl::StatusOr<std::unique_ptr<WorkItem>> BuildBackwardItem(const v1::BackwardRequest& request,
                                                            v1::BackwardResponse* response,
                                                            const ParamRegistry& registry);

}  // namespace normserve::server

#endif  // NORMSERVE_SERVER_SERVICE_REQUEST_BUILDER_H_
