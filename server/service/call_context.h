// What a batched call takes from its gRPC context: the deadline and a
// cancellation check.
#ifndef NORMSERVE_SERVER_SERVICE_CALL_CONTEXT_H_
#define NORMSERVE_SERVER_SERVICE_CALL_CONTEXT_H_

#include <grpcpp/server_context.h>

#include <chrono>

#include "absl/time/time.h"
#include "server/batching/work_item.h"

namespace normserve::server {

// The context's deadline as absl::Time (InfiniteFuture when none was set).
inline absl::Time DeadlineOf(const grpc::CallbackServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline >= std::chrono::system_clock::time_point::max() - std::chrono::hours(24 * 365)) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

// Gives the item the context's deadline and cancellation. The context must
// outlive the item's done callback (true until the RPC is finished).
inline void BindToContext(grpc::CallbackServerContext* context, WorkItem& item) {
  item.deadline = DeadlineOf(*context);
  item.cancelled = [context] { return context->IsCancelled(); };
}

}  // namespace normserve::server

#endif  // NORMSERVE_SERVER_SERVICE_CALL_CONTEXT_H_
