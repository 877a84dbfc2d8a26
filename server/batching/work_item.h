// One caller's request as the batcher sees it: its batch key, its rows as a
// kernel segment, and the callback that answers it.
//
// The segment's pointers point into buffers owned by the caller (the RPC's
// request and response messages), which must stay alive until `done` runs.
// The batcher calls `done` exactly once, from one of its worker threads:
// OK after the rows were computed into the caller's output buffers, or the
// reason they were not (DEADLINE_EXCEEDED, CANCELLED, a backend error, or
// UNAVAILABLE at shutdown).
#ifndef NORMSERVE_SERVER_BATCHING_WORK_ITEM_H_
#define NORMSERVE_SERVER_BATCHING_WORK_ITEM_H_

#include <functional>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "batch_key.h"
#include "normserve/kernels/batch.h"

namespace normserve::server {

struct WorkItem {
  BatchKey key;
  // key.op selects which one is used; its rows are the request's rows.
  kernels::ForwardSegment forward;
  kernels::BackwardSegment backward;
  // absl::InfiniteFuture() when the caller set none.
  absl::Time deadline = absl::InfiniteFuture();
  // Answers whether the caller has given up; checked before compute. Empty
  // means never. Called from a batcher thread while the caller is alive.
  std::function<bool()> cancelled;
  absl::AnyInvocable<void(absl::Status)> done;

  // Set by the batcher.
  absl::Time enqueued_at;

  int64_t rows() const { return key.op == Op::kForward ? forward.rows : backward.rows; }
  bool is_cancelled() const { return cancelled && cancelled(); }
};

}  // namespace normserve::server

#endif  // NORMSERVE_SERVER_BATCHING_WORK_ITEM_H_
