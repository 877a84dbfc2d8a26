// The kernel launch a set of work items of one BatchKey makes: the key's
// config, dtypes, hidden size and parameters, one segment per item, in order.
#ifndef NORMSERVE_SERVER_BATCHING_KERNEL_BATCH_H_
#define NORMSERVE_SERVER_BATCHING_KERNEL_BATCH_H_

#include <memory>
#include <vector>

#include "normserve/kernels/batch.h"
#include "work_item.h"

namespace normserve::server {

// Every item's key must equal key (its op kForward / kBackward respectively).
kernels::ForwardBatch MakeForwardBatch(const BatchKey& key,
                                       const std::vector<std::unique_ptr<WorkItem>>& items);
kernels::BackwardBatch MakeBackwardBatch(const BatchKey& key,
                                         const std::vector<std::unique_ptr<WorkItem>>& items);

}  // namespace normserve::server

#endif  // NORMSERVE_SERVER_BATCHING_KERNEL_BATCH_H_
